"""Development Apache Kafka broker (single node, KRaft) for local work and tests.

See :mod:`streams.devbroker.launcher` for the API and :mod:`streams.devbroker.cli` for the
``seqgate broker up|down|status`` commands; :mod:`streams.devbroker.bounce` kills and
restarts a broker in place (outage tests).
"""

from streams.devbroker.bounce import kill_broker, restart_broker
from streams.devbroker.launcher import (
    KAFKA_VERSION,
    BrokerError,
    BrokerHandle,
    broker_answers,
    broker_status,
    default_data_dir,
    default_state_file,
    ensure_kafka_jars,
    is_running,
    load_state,
    running_broker,
    seqgate_home,
    start_broker,
    stop_broker,
)

__all__ = [
    "KAFKA_VERSION",
    "BrokerError",
    "BrokerHandle",
    "broker_answers",
    "broker_status",
    "default_data_dir",
    "default_state_file",
    "ensure_kafka_jars",
    "is_running",
    "kill_broker",
    "load_state",
    "restart_broker",
    "running_broker",
    "seqgate_home",
    "start_broker",
    "stop_broker",
]
