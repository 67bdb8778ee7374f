"""The nodes of a development cluster as processes: launching, awaiting, stopping, restarting.

A node is stopped and started again *in place*: same id, ports, ``server.properties`` and data
directory (only ``start_cluster`` wipes), which is what replication tests need: a follower
that comes back catches up and rejoins the ISR.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

from seqgate.streams.devtools.broker.cluster_config import NODE_HEAP, NODE_JVM_FLAGS
from seqgate.streams.devtools.broker.cluster_handle import ClusterHandle, NodeHandle
from seqgate.streams.devtools.broker.cluster_probe import registered_brokers
from seqgate.streams.devtools.broker.errors import BrokerError, failure_detail
from seqgate.streams.devtools.broker.files import Progress, file_lock, say
from seqgate.streams.devtools.broker.jars import ensure_kafka_jars
from seqgate.streams.devtools.broker.jvm import await_answer, spawn_broker
from seqgate.streams.devtools.broker.processes import reap, signal_group, wait_gone
from seqgate.streams.devtools.broker.toolchain import find_java
from seqgate.streams.devtools.broker.watchdog import disarm_watchdog, spawn_watchdog

__all__ = ["await_nodes", "spawn_node", "start_node", "stop_node", "stop_nodes"]


def spawn_node(
    java: str, libs: Path, node: NodeHandle, *, watched: bool
) -> subprocess.Popen[bytes]:
    """Start ``node``'s JVM (without waiting) and record the process in ``node``."""
    process = spawn_broker(
        java,
        libs,
        node.data_dir,
        node.data_dir / "server.properties",
        heap=NODE_HEAP,
        flags=NODE_JVM_FLAGS,
    )
    node.pid = process.pid
    node._process = process
    node._watchdog = spawn_watchdog(process.pid) if watched else None
    return process


def await_nodes(cluster: ClusterHandle, node_ids: Iterable[int], timeout: float) -> str:
    """Wait until each of ``node_ids`` answers and the metadata lists it: ``""``, or why not
    (a node that did not answer is then stopped; the caller decides about the others)."""
    deadline = time.monotonic() + timeout
    wanted = set(node_ids)
    for node_id in sorted(wanted):
        node = cluster.node(node_id)
        assert node._process is not None, "await_nodes needs nodes this process spawned"
        reason = await_answer(
            node._process,
            node.data_dir,
            cluster.node_address(node_id),
            max(1.0, deadline - time.monotonic()),
            cluster.client_properties,
        )
        if reason:
            return f"node {node_id}: {reason}"
    while True:
        listed = registered_brokers(cluster.bootstrap_servers, 5.0, cluster.client_properties)
        if wanted <= listed:
            return ""
        if time.monotonic() >= deadline:
            missing = ", ".join(str(i) for i in sorted(wanted - listed))
            return f"node(s) {missing} answer but are not registered within {timeout:.0f} s"
        time.sleep(0.2)


def _disarm(node: NodeHandle) -> None:
    disarm_watchdog(node._watchdog)
    node._watchdog = None


def stop_nodes(nodes: list[NodeHandle], timeout: float, *, kill: bool = False) -> None:
    """Stop ``nodes`` together: SIGTERM (SIGKILL if ``kill``) to all, then wait up to
    ``timeout`` s and SIGKILL the rest. Together, because a node that is the last of its
    quorum waits in vain for a controlled shutdown."""
    alive = [n for n in nodes if n.running()]
    for node in nodes:
        if node not in alive:
            reap(node.pid)
    for node in alive:
        signal_group(node.pid, signal.SIGKILL if kill else signal.SIGTERM)
    deadline = time.monotonic() + timeout
    stubborn = [
        n
        for n in alive
        if not wait_gone(n.pid, n.data_dir, n._process, max(0.0, deadline - time.monotonic()))
    ]
    for node in stubborn:
        signal_group(node.pid, signal.SIGKILL)
    survivors = [n for n in stubborn if not wait_gone(n.pid, n.data_dir, n._process, 15.0)]
    for node in nodes:
        _disarm(node)
    if survivors:
        pids = ", ".join(str(n.pid) for n in survivors)
        raise BrokerError(f"broker process(es) {pids} survived SIGKILL")


def stop_node(cluster: ClusterHandle, node_id: int, *, kill: bool, timeout: float) -> None:
    """Stop one node (its data directory is kept) and record it in the state file."""
    node = cluster.node(node_id)
    stop_nodes([node], timeout, kill=kill)
    _locked_save(cluster)


def start_node(
    cluster: ClusterHandle, node_id: int, *, timeout: float, progress: Progress | None = None
) -> None:
    """Start a stopped node on its data directory, ports and id; wait until it is registered."""
    node = cluster.node(node_id)
    if node.running():
        raise BrokerError(
            f"node {node_id} is already running (pid {node.pid}, {cluster.node_address(node_id)})"
        )
    if not (node.data_dir / "server.properties").is_file():
        raise BrokerError(f"no {node.data_dir / 'server.properties'}: node {node_id} never ran")
    java = find_java()
    libs = ensure_kafka_jars(progress)
    say(progress, f"starting node {node_id} on {cluster.node_address(node_id)}")
    spawn_node(java, libs, node, watched=cluster.watched)
    reason = await_nodes(cluster, [node_id], timeout)
    if reason:
        stop_nodes([node], 10.0)
        raise BrokerError(f"{reason}; data dir {node.data_dir}", failure_detail(node.data_dir))
    _locked_save(cluster)


def _locked_save(cluster: ClusterHandle) -> None:
    if cluster.state_file is None:
        return
    with file_lock(cluster.state_file.with_name(cluster.state_file.name + ".lock")):
        cluster.save()
