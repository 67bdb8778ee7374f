"""A development cluster's configuration: the listen address, ports and each node's properties.

Pure functions (no process is started here), so that the ``server.properties`` of node *i* of
*n* can be checked without a JVM. Every node is a combined broker and controller; all nodes
name all controllers in ``controller.quorum.voters`` (a static quorum, so a plain
``kafka-storage format`` with the shared cluster id is enough).
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from dataclasses import dataclass
from pathlib import Path

from seqgate_devtools.broker import security as sec
from seqgate_devtools.broker.config import free_ports
from seqgate_devtools.broker.locations import HOST
from seqgate_devtools.errors import BrokerError

__all__ = [
    "MAX_NODES",
    "NODE_HEAP",
    "NODE_JVM_FLAGS",
    "NodePorts",
    "allocate_ports",
    "node_dir_name",
    "node_properties",
    "replication_defaults",
    "validate_listen_address",
    "write_node_properties",
]

MAX_NODES = 5
NODE_HEAP = "512m"
"""Per-node ``-Xmx``: three nodes, workers and tests share 2 cores and a few GiB comfortably."""
NODE_JVM_FLAGS = ("-XX:ActiveProcessorCount=1", "-XX:TieredStopAtLevel=1")
"""One CPU's worth of GC and JIT threads per node (three JVMs on two cores), and only the
quick C1 compiler: a development node starts sooner and its throughput does not matter."""


@dataclass(frozen=True, slots=True)
class NodePorts:
    """Where one node listens: clients (and other brokers) on ``port``, the quorum on
    ``controller_port``."""

    node_id: int
    port: int
    controller_port: int


def node_dir_name(node_id: int) -> str:
    """The node's directory inside the cluster's data dir (its data, log, properties)."""
    return f"node-{node_id}"


def validate_listen_address(address: str) -> str:
    """``address`` if it is an IPv4 address of this machine that a listener can bind.

    Raises :class:`BrokerError` otherwise (one line: the CLI shows it as a usage error).
    """
    try:
        ip = ipaddress.IPv4Address(address.strip())
    except ValueError:
        raise BrokerError(f"{address!r} is not an IPv4 address (e.g. 127.0.0.1)") from None
    if ip.is_unspecified or ip.is_multicast or ip.is_reserved:
        raise BrokerError(f"{ip} cannot be advertised to clients: give one address of a NIC")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((str(ip), 0))
        except OSError as exc:
            if exc.errno == errno.EADDRNOTAVAIL:
                raise BrokerError(
                    f"{ip} is not an address of this machine (no interface has it)"
                ) from None
            raise BrokerError(f"cannot bind {ip}: {exc.strerror}") from None
    return str(ip)


def allocate_ports(nodes: int, host: str = HOST) -> list[NodePorts]:
    """Two free ports of ``host`` per node, node ids 1..``nodes``."""
    ports = free_ports(2 * nodes, host)
    return [NodePorts(i + 1, ports[2 * i], ports[2 * i + 1]) for i in range(nodes)]


def replication_defaults(nodes: int) -> dict[str, str]:
    """Replication settings that let a cluster of ``nodes`` lose one node and keep working.

    Three replicas (fewer on a smaller cluster), of which all but one must be in sync for
    ``acks=all``; internal topics alike, with few partitions so a small machine copes.
    """
    factor = min(3, nodes)
    min_isr = max(1, factor - 1)
    return {
        "default.replication.factor": str(factor),
        "min.insync.replicas": str(min_isr),
        "num.partitions": "1",
        "offsets.topic.replication.factor": str(factor),
        "offsets.topic.num.partitions": "3",
        "transaction.state.log.replication.factor": str(factor),
        "transaction.state.log.min.isr": str(min_isr),
        "transaction.state.log.num.partitions": "3",
        "share.coordinator.state.topic.replication.factor": str(factor),
        "share.coordinator.state.topic.min.isr": str(min_isr),
        "share.coordinator.state.topic.num.partitions": "3",
    }


def node_properties(
    node: NodePorts,
    nodes: list[NodePorts],
    host: str,
    log_dir: Path,
    material: sec.SecurityMaterial | None,
) -> str:
    """The ``server.properties`` text of ``node`` in the cluster of ``nodes`` on ``host``."""
    voters = ",".join(f"{n.node_id}@{host}:{n.controller_port}" for n in nodes)
    props = {
        "process.roles": "broker,controller",
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "listeners": f"PLAINTEXT://{host}:{node.port},CONTROLLER://{host}:{node.controller_port}",
        "advertised.listeners": f"PLAINTEXT://{host}:{node.port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(log_dir),
        "auto.create.topics.enable": "false",
        **replication_defaults(len(nodes)),
        # A killed follower leaves the ISR after 10 s rather than 30 s.
        "replica.lag.time.max.ms": "10000",
        "group.initial.rebalance.delay.ms": "0",
        "num.network.threads": "2",
        "num.io.threads": "4",
        "background.threads": "4",
    }
    if material is not None:
        props.update(sec.server_properties(material, host, node.port, node.controller_port))
    lines = [
        f"# seqgate development cluster, node {node.node_id} of {len(nodes)} (generated)",
        *(f"{key}={value}" for key, value in props.items()),
    ]
    return "\n".join(lines) + "\n"


def write_node_properties(
    node_dir: Path,
    node: NodePorts,
    nodes: list[NodePorts],
    host: str,
    material: sec.SecurityMaterial | None,
) -> Path:
    """Write ``<node_dir>/server.properties`` (Kafka data in ``<node_dir>/kraft``)."""
    props = node_dir / "server.properties"
    props.write_text(
        node_properties(node, nodes, host, node_dir / "kraft", material), encoding="utf-8"
    )
    props.chmod(0o600)  # it holds the SCRAM and keystore passwords in sasl_ssl mode
    return props
