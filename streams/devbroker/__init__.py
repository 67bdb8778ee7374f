"""Development Apache Kafka broker (single node, KRaft) for local work and tests.

See :mod:`streams.devbroker.launcher` for the API and :mod:`streams.devbroker.cli` for the
``seqgate broker up|down|status`` commands.
"""

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
    "load_state",
    "running_broker",
    "seqgate_home",
    "start_broker",
    "stop_broker",
]
