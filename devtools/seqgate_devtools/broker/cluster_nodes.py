"""The nodes of a development cluster as processes: launching, awaiting, stopping.

A node is stopped and started again *in place*: same id, ports, ``server.properties`` and data
directory (only ``start_cluster`` wipes), which is what replication tests need: a follower
that comes back catches up and rejoins the ISR.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqgate_devtools.broker.cluster_config import NODE_HEAP, NODE_JVM_FLAGS
from seqgate_devtools.broker.cluster_probe import registered_brokers
from seqgate_devtools.broker.jvm import await_answer, spawn_broker
from seqgate_devtools.broker.processes import is_broker_process, reap, signal_group, wait_gone
from seqgate_devtools.broker.watchdog import disarm_watchdog, spawn_watchdog
from seqgate_devtools.errors import BrokerError

__all__ = ["NodeHandle", "await_nodes", "spawn_node", "stop_nodes"]


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


def await_nodes(
    nodes: Sequence[NodeHandle],
    *,
    bootstrap: str,
    listen_address: str,
    properties: Path | None,
    timeout: float,
) -> str:
    """Wait until each of ``nodes`` answers and the metadata (asked of ``bootstrap``) lists
    it: ``""``, or why not (a node that did not answer is then stopped; the caller decides
    about the others)."""
    deadline = time.monotonic() + timeout
    for node in sorted(nodes, key=lambda n: n.node_id):
        assert node._process is not None, "await_nodes needs nodes this process spawned"
        reason = await_answer(
            node._process,
            node.data_dir,
            f"{listen_address}:{node.port}",
            max(1.0, deadline - time.monotonic()),
            properties,
        )
        if reason:
            return f"node {node.node_id}: {reason}"
    wanted = {node.node_id for node in nodes}
    while True:
        listed = registered_brokers(bootstrap, 5.0, properties)
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
