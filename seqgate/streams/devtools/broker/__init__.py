"""Development Apache Kafka broker (single node, KRaft) for local work and tests.

:mod:`seqgate.streams.devtools.broker.launcher` starts and stops it (overview there);
:mod:`seqgate.streams.cli.broker` gives the ``seqgate broker up|down|status`` commands;
:mod:`seqgate.streams.devtools.broker.bounce` kills and restarts a broker in place (outage
tests); :mod:`seqgate.streams.devtools.broker.security` makes the certificates, SCRAM
credentials and client properties of a ``security="sasl_ssl"`` broker.

The other modules have one job each: ``locations`` (release, home, state and data paths),
``jars`` (resolving the Kafka jars with Maven), ``toolchain`` (finding Java and Maven),
``config`` (``server.properties``), ``datadir`` (wiping the data directory), ``jvm`` (the
storage format and broker processes), ``processes`` (signalling and waiting), ``watchdog``,
``probe`` (:func:`broker_answers`), ``handle`` (:class:`BrokerHandle` and its state file),
``errors`` and ``files``.
"""

from seqgate.streams.devtools.broker.bounce import kill_broker, restart_broker
from seqgate.streams.devtools.broker.errors import BrokerError
from seqgate.streams.devtools.broker.handle import (
    BrokerHandle,
    broker_status,
    is_running,
    load_state,
)
from seqgate.streams.devtools.broker.jars import ensure_kafka_jars
from seqgate.streams.devtools.broker.launcher import running_broker, start_broker, stop_broker
from seqgate.streams.devtools.broker.locations import (
    KAFKA_VERSION,
    default_data_dir,
    default_state_file,
    seqgate_home,
)
from seqgate.streams.devtools.broker.probe import broker_answers
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
