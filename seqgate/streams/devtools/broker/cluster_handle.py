"""A development cluster as a value: :class:`ClusterHandle`, its nodes and its state file.

The state file records every node (id, ports, pid, directory), so that separate
``seqgate broker status|stop-node|start-node|down`` invocations find the cluster again. A
single-node broker's state file (:mod:`~seqgate.streams.devtools.broker.handle`) has no
``nodes`` key; :func:`load_cluster_state` ignores it, and ``handle.load_state`` ignores a
cluster's.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from seqgate.streams.devtools.broker import security as sec
from seqgate.streams.devtools.broker.errors import BrokerError
from seqgate.streams.devtools.broker.files import write_json_atomic
from seqgate.streams.devtools.broker.locations import HOST, KAFKA_VERSION
from seqgate.streams.devtools.broker.probe import broker_answers
from seqgate.streams.devtools.broker.processes import is_broker_process
from seqgate.streams.devtools.broker.recorded import RecordedAccess

__all__ = [
    "ClusterHandle",
    "NodeHandle",
    "PartitionState",
    "cluster_from_json",
    "load_cluster_state",
    "node_status",
]

CLUSTER_KIND = "cluster"


class PartitionState(NamedTuple):
    """A partition as the cluster's metadata describes it (broker ids; leader -1 if none)."""

    leader: int
    replicas: list[int]
    isr: list[int]


@dataclass
class NodeHandle:
    """One combined broker+controller node of a cluster."""

    node_id: int
    port: int
    controller_port: int
    pid: int
    """The node's last process (it may have exited: see :meth:`ClusterHandle.node_running`)."""
    data_dir: Path
    """``<cluster data dir>/node-<id>``: its ``server.properties``, ``kraft/`` and logs."""
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)
    _watchdog: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def log_file(self) -> Path:
        return self.data_dir / "server.log"

    def running(self) -> bool:
        """True if the node's process is alive (and really is this node, not a reused pid)."""
        if self._process is not None:
            return self._process.poll() is None
        return is_broker_process(self.pid, self.data_dir)

    def to_json(self) -> dict[str, Any]:
        return {
            "node_id": self.node_id,
            "port": self.port,
            "controller_port": self.controller_port,
            "pid": self.pid,
            "data_dir": str(self.data_dir),
            "log_file": str(self.log_file),
        }


@dataclass
class ClusterHandle:
    """A development cluster of combined broker+controller nodes (running, or as recorded)."""

    data_dir: Path
    cluster_id: str
    nodes: list[NodeHandle]
    listen_address: str = HOST
    security: str = sec.PLAINTEXT
    client_properties: Path | None = None
    """librdkafka settings clients need (``sasl_ssl`` only), shared by all nodes."""
    ca_file: Path | None = None
    state_file: Path | None = None
    kafka_version: str = KAFKA_VERSION
    already_running: bool = False
    """True when ``start_cluster`` found this cluster running and returned it unchanged."""
    watched: bool = False
    """Nodes get a watchdog (killed when this process dies): ``running_cluster``'s clusters."""

    @property
    def bootstrap_servers(self) -> str:
        """Every node's client address, ``host:port,host:port,...``."""
        return ",".join(self.node_address(n.node_id) for n in self.nodes)

    @property
    def node_pids(self) -> dict[int, int]:
        """Node id -> pid, for the nodes whose process runs now."""
        return {n.node_id: n.pid for n in self.nodes if n.running()}

    def node(self, node_id: int) -> NodeHandle:
        """The node ``node_id``; :class:`BrokerError` names the valid ids otherwise."""
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        ids = ", ".join(str(n.node_id) for n in self.nodes)
        raise BrokerError(f"no node {node_id} in this cluster: its node ids are {ids}")

    def node_address(self, node_id: int) -> str:
        return f"{self.listen_address}:{self.node(node_id).port}"

    def node_running(self, node_id: int) -> bool:
        return self.node(node_id).running()

    def node_answers(self, node_id: int, timeout: float = 5.0) -> bool:
        """:func:`broker_answers` of that node alone, with the cluster's client settings."""
        return broker_answers(
            self.node_address(node_id), timeout, properties=self.client_properties
        )

    def client_settings(self) -> dict[str, str]:
        """confluent_kafka settings for this cluster (bootstrap and, in sasl_ssl, security)."""
        return sec.client_settings(self.client_properties, self.bootstrap_servers)

    def stop_node(self, node_id: int, kill: bool = False, timeout: float = 30.0) -> None:
        """SIGTERM the node and wait for it to exit (SIGKILL if ``kill``); data is kept."""
        from seqgate.streams.devtools.broker.cluster_nodes import stop_node

        stop_node(self, node_id, kill=kill, timeout=timeout)

    def start_node(self, node_id: int, timeout: float = 120.0) -> None:
        """Start a stopped node again on its data, ports and id; wait until it answers."""
        from seqgate.streams.devtools.broker.cluster_nodes import start_node

        start_node(self, node_id, timeout=timeout)

    def registered_brokers(self, timeout: float = 10.0) -> set[int]:
        """Ids of the brokers the cluster's metadata lists (registered and not fenced)."""
        from seqgate.streams.devtools.broker.cluster_probe import registered_brokers

        return registered_brokers(self.bootstrap_servers, timeout, self.client_properties)

    def partition(self, topic: str, partition: int = 0, timeout: float = 10.0) -> PartitionState:
        """Leader, replicas and ISR of ``topic``'s ``partition`` (from the admin API)."""
        from seqgate.streams.devtools.broker.cluster_probe import partition_state

        return partition_state(self, topic, partition, timeout)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": CLUSTER_KIND,
            "cluster_id": self.cluster_id,
            "bootstrap_servers": self.bootstrap_servers,
            "data_dir": str(self.data_dir),
            "listen_address": self.listen_address,
            **RecordedAccess(
                self.security, self.client_properties, self.ca_file, self.kafka_version
            ).to_json(),
            "nodes": [n.to_json() for n in self.nodes],
        }

    def save(self) -> None:
        """Rewrite the state file (if the cluster has one) with the nodes' current pids."""
        if self.state_file is not None:
            write_json_atomic(self.state_file, self.to_json())


def cluster_from_json(data: dict[str, Any], state_file: Path | None = None) -> ClusterHandle:
    """The inverse of :meth:`ClusterHandle.to_json` (``KeyError``/``ValueError`` if damaged)."""
    nodes = [
        NodeHandle(
            node_id=int(n["node_id"]),
            port=int(n["port"]),
            controller_port=int(n["controller_port"]),
            pid=int(n["pid"]),
            data_dir=Path(n["data_dir"]),
        )
        for n in data["nodes"]
    ]
    if not nodes:
        raise ValueError("a cluster without nodes")
    return ClusterHandle(
        data_dir=Path(data["data_dir"]),
        cluster_id=str(data["cluster_id"]),
        nodes=nodes,
        listen_address=str(data.get("listen_address", HOST)),
        state_file=state_file,
        **RecordedAccess.from_json(data)._asdict(),
    )


def is_cluster_record(data: object) -> bool:
    return isinstance(data, dict) and data.get("kind") == CLUSTER_KIND


def load_cluster_state(state_file: Path) -> ClusterHandle | None:
    """The cluster recorded in ``state_file``; None if there is none or it is a single broker.

    A damaged cluster record is an error (not silently removed: its nodes may still run).
    """
    try:
        data = json.loads(state_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not is_cluster_record(data):
        return None
    try:
        return cluster_from_json(data, state_file)
    except (KeyError, ValueError, TypeError) as exc:
        raise BrokerError(
            f"the cluster state file {state_file} is damaged ({exc!r}); stop its java "
            "processes by hand and remove it"
        ) from None


def node_status(cluster: ClusterHandle, node: NodeHandle) -> tuple[str, bool]:
    """``seqgate broker status``'s line for ``node`` and whether it runs and answers:
    ``node 1 127.0.0.1:40123 pid=12345 running`` (or ``down``, or ``not answering``)."""
    if not node.running():
        state, ok = "down", False
    elif cluster.node_answers(node.node_id, timeout=5.0):
        state, ok = "running", True
    else:
        state, ok = f"not answering (see {node.log_file})", False
    line = f"node {node.node_id} {cluster.node_address(node.node_id)} pid={node.pid} {state}"
    if cluster.security != sec.PLAINTEXT:
        line += f" security={cluster.security} properties={cluster.client_properties}"
    return line, ok
