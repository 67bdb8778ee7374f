"""Development Apache Kafka broker (single node, KRaft) for local work and tests.

See :mod:`seqgate.streams.devtools.broker.launcher` for the API and
:mod:`seqgate.streams.cli.broker` for the
``seqgate broker up|down|status`` commands; :mod:`seqgate.streams.devtools.broker.bounce` kills and
restarts a broker in place (outage tests); :mod:`seqgate.streams.devtools.broker.security` makes the
certificates, SCRAM credentials and client properties of a ``security="sasl_ssl"`` broker.
"""

from seqgate.streams.devtools.broker.bounce import kill_broker, restart_broker
from seqgate.streams.devtools.broker.launcher import (
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
from seqgate.streams.devtools.broker.security import (
    SECURITY_MODES,
    SecurityMaterial,
    client_settings,
    read_client_properties,
    write_unrelated_ca,
)

__all__ = [
    "KAFKA_VERSION",
    "SECURITY_MODES",
    "BrokerError",
    "BrokerHandle",
    "SecurityMaterial",
    "broker_answers",
    "broker_status",
    "client_settings",
    "default_data_dir",
    "default_state_file",
    "ensure_kafka_jars",
    "is_running",
    "kill_broker",
    "load_state",
    "read_client_properties",
    "restart_broker",
    "running_broker",
    "seqgate_home",
    "start_broker",
    "stop_broker",
    "write_unrelated_ca",
]
