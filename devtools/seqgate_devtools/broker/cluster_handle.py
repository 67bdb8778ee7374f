"""A development cluster as a value: :class:`ClusterHandle`, its nodes and its state file.

The state file records every node (id, ports, pid, directory), so that separate
``seqgate broker status|stop-node|start-node|down`` invocations find the cluster again. A
single-node broker's state file (:mod:`~seqgate_devtools.broker.handle`) has no
``nodes`` key; :func:`load_cluster_state` ignores it, and ``handle.load_state`` ignores a
cluster's.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqgate_devtools.broker import security as sec
from seqgate_devtools.broker.cluster_nodes import NodeHandle, await_nodes, spawn_node, stop_nodes
from seqgate_devtools.broker.cluster_probe import (
    PartitionState,
    partition_state,
    registered_brokers,
)
from seqgate_devtools.broker.files import Progress, file_lock, say, write_json_atomic
from seqgate_devtools.broker.jars import ensure_kafka_jars
from seqgate_devtools.broker.locations import HOST, KAFKA_VERSION
from seqgate_devtools.broker.log_tails import failure_detail
from seqgate_devtools.broker.probe import broker_answers
from seqgate_devtools.broker.recorded import RecordedAccess
from seqgate_devtools.broker.toolchain import find_java
from seqgate_devtools.errors import BrokerError

__all__ = [
    "ClusterHandle",
    "NodeHandle",
    "PartitionState",
    "cluster_from_json",
    "load_cluster_state",
    "node_status",
]

CLUSTER_KIND = "cluster"


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

    def await_nodes(self, node_ids: Iterable[int], timeout: float) -> str:
        """Wait until each of ``node_ids`` (spawned by this process) answers and the metadata
        lists it: ``""``, or why not."""
        return await_nodes(
            [self.node(node_id) for node_id in node_ids],
            bootstrap=self.bootstrap_servers,
            listen_address=self.listen_address,
            properties=self.client_properties,
            timeout=timeout,
        )

    def stop_node(self, node_id: int, kill: bool = False, timeout: float = 30.0) -> None:
        """SIGTERM the node and wait for it to exit (SIGKILL if ``kill``); data is kept."""
        stop_nodes([self.node(node_id)], timeout, kill=kill)
        self._locked_save()

    def start_node(
        self, node_id: int, timeout: float = 120.0, progress: Progress | None = None
    ) -> None:
        """Start a stopped node again on its data directory, ports and id; wait until it
        answers and is registered."""
        node = self.node(node_id)
        if node.running():
            raise BrokerError(
                f"node {node_id} is already running (pid {node.pid}, {self.node_address(node_id)})"
            )
        if not (node.data_dir / "server.properties").is_file():
            raise BrokerError(f"no {node.data_dir / 'server.properties'}: node {node_id} never ran")
        java = find_java()
        libs = ensure_kafka_jars(progress)
        say(progress, f"starting node {node_id} on {self.node_address(node_id)}")
        spawn_node(java, libs, node, watched=self.watched)
        reason = self.await_nodes([node_id], timeout)
        if reason:
            stop_nodes([node], 10.0)
            raise BrokerError(f"{reason}; data dir {node.data_dir}", failure_detail(node.data_dir))
        self._locked_save()

    def registered_brokers(self, timeout: float = 10.0) -> set[int]:
        """Ids of the brokers the cluster's metadata lists (registered and not fenced)."""
        return registered_brokers(self.bootstrap_servers, timeout, self.client_properties)

    def partition(self, topic: str, partition: int = 0, timeout: float = 10.0) -> PartitionState:
        """Leader, replicas and ISR of ``topic``'s ``partition`` (from the admin API)."""
        return partition_state(
            self.bootstrap_servers, self.client_properties, topic, partition, timeout
        )

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

    def _locked_save(self) -> None:
        if self.state_file is None:
            return
        with file_lock(self.state_file.with_name(self.state_file.name + ".lock")):
            self.save()


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
