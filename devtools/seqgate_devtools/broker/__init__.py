"""Development Apache Kafka broker (KRaft: one node, or a cluster) for local work and tests.

:mod:`seqgate_devtools.broker.launcher` starts and stops a single node (overview
there); :mod:`seqgate_devtools.broker.cluster` a cluster of combined broker+controller
nodes (``running_cluster`` for replication tests), whose node processes
:mod:`~seqgate_devtools.broker.cluster_nodes` launches, awaits and stops (a node is stopped
and started again in place by :class:`ClusterHandle`);
:mod:`seqgate_devtools.cli.broker` gives the ``seqgate broker up|down|status|stop-node|
start-node`` commands;
:mod:`seqgate_devtools.broker.bounce` kills and restarts a broker in place (outage
tests); :mod:`seqgate_devtools.broker.security` makes the certificates, SCRAM
credentials and client properties of a ``security="sasl_ssl"`` broker.

The other modules have one job each: ``locations`` (release, home, state and data paths),
``jars`` (resolving the Kafka jars with Maven), ``toolchain`` (finding Java and Maven),
``config`` (``server.properties``), ``datadir`` (wiping the data directory), ``jvm`` (the
storage format and broker processes), ``processes`` (signalling and waiting), ``watchdog``,
``probe`` (:func:`broker_answers`), ``attempts`` (a start retried on other ports),
``handle`` (:class:`BrokerHandle` and its state file),
``cluster_config`` (a cluster's listen address, ports and node properties),
``cluster_handle`` (:class:`ClusterHandle` and its state file), ``cluster_probe`` (brokers
and ISR from the metadata), ``log_tails`` (what explains a failure) and ``files``. The
cluster's modules import one way: ``cluster_handle`` > ``cluster_nodes`` > ``cluster_probe``.
"""

from seqgate_devtools.broker.bounce import kill_broker, restart_broker
from seqgate_devtools.broker.cluster import running_cluster, start_cluster, stop_cluster
from seqgate_devtools.broker.cluster_config import validate_listen_address
from seqgate_devtools.broker.cluster_handle import ClusterHandle, load_cluster_state
from seqgate_devtools.broker.cluster_nodes import NodeHandle
from seqgate_devtools.broker.cluster_probe import PartitionState
from seqgate_devtools.broker.handle import (
    BrokerHandle,
    broker_status,
    is_running,
    load_state,
)
from seqgate_devtools.broker.jars import ensure_kafka_jars
from seqgate_devtools.broker.launcher import running_broker, start_broker, stop_broker
from seqgate_devtools.broker.locations import (
    KAFKA_VERSION,
    default_data_dir,
    default_state_file,
    seqgate_home,
)
from seqgate_devtools.broker.probe import broker_answers
from seqgate_devtools.broker.security import (
    SECURITY_MODES,
    SecurityMaterial,
    client_settings,
    read_client_properties,
    write_unrelated_ca,
)
from seqgate_devtools.errors import BrokerError

__all__ = [
    "KAFKA_VERSION",
    "SECURITY_MODES",
    "BrokerError",
    "BrokerHandle",
    "ClusterHandle",
    "NodeHandle",
    "PartitionState",
    "SecurityMaterial",
    "broker_answers",
    "broker_status",
    "client_settings",
    "default_data_dir",
    "default_state_file",
    "ensure_kafka_jars",
    "is_running",
    "kill_broker",
    "load_cluster_state",
    "load_state",
    "read_client_properties",
    "restart_broker",
    "running_broker",
    "running_cluster",
    "seqgate_home",
    "start_broker",
    "start_cluster",
    "stop_broker",
    "stop_cluster",
    "validate_listen_address",
    "write_unrelated_ca",
]
