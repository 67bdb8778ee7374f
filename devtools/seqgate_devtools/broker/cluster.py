"""Development cluster: several combined broker+controller KRaft nodes on one machine.

:func:`start_cluster` is ``seqgate broker up --nodes N``; :func:`stop_cluster` is ``broker
down``; :func:`running_cluster` is the context manager of the replication tests. The data
directory holds ``node-<id>/`` per node (``server.properties``, ``kraft/``, ``server.log``,
``broker.out``) and, in ``sasl_ssl`` mode, the one ``tls/`` and ``client.properties`` that all
nodes share. As for a single broker, :func:`start_cluster` wipes it; stopping and starting one
node (:mod:`~seqgate_devtools.broker.cluster_nodes`) keeps it.

All nodes are launched at once and awaited together: none finishes starting before a quorum
of controllers (two of three) runs.
"""

from __future__ import annotations

import contextlib
import functools
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from seqgate_devtools.broker import security as sec
from seqgate_devtools.broker.attempts import StartOptions, StartPlan, start, throwaway
from seqgate_devtools.broker.cluster_config import (
    MAX_NODES,
    NODE_JVM_FLAGS,
    allocate_ports,
    node_dir_name,
    validate_listen_address,
    write_node_properties,
)
from seqgate_devtools.broker.cluster_handle import ClusterHandle, load_cluster_state
from seqgate_devtools.broker.cluster_nodes import NodeHandle, spawn_node, stop_nodes
from seqgate_devtools.broker.config import cluster_id
from seqgate_devtools.broker.datadir import prepare_data_dir
from seqgate_devtools.broker.files import Progress, resource_bytes, say
from seqgate_devtools.broker.handle import is_running, load_state
from seqgate_devtools.broker.jvm import address_in_use, format_storage
from seqgate_devtools.broker.locations import HOST, KAFKA_VERSION, default_state_file
from seqgate_devtools.errors import BrokerError

__all__ = ["running_cluster", "start_cluster", "stop_cluster"]


def start_cluster(
    data_dir: Path | None = None,
    nodes: int = 3,
    *,
    timeout: float = 120.0,
    state_file: Path | None = None,
    progress: Progress | None = None,
    reuse_running: bool = True,
    detach: bool = True,
    security: str = sec.PLAINTEXT,
    listen_address: str = HOST,
) -> ClusterHandle:
    """Start ``nodes`` KRaft nodes (each broker and controller) on free ports of
    ``listen_address``, with replication defaults for that many nodes.

    ``data_dir``, ``state_file``, ``reuse_running``, ``detach`` and ``security`` are as for
    ``start_broker``. Returns once every node answers and the metadata lists all brokers
    (within ``timeout`` s); raises :class:`BrokerError` otherwise, leaving no node running.
    """
    if not 1 <= nodes <= MAX_NODES:
        raise BrokerError(f"a development cluster has 1 to {MAX_NODES} nodes, not {nodes}")
    host = validate_listen_address(listen_address)
    return start(
        StartOptions(data_dir, state_file, security, timeout, detach, progress),
        recorded=lambda path: _recorded_cluster(path, nodes, security, host, reuse_running),
        attempt=_ClusterStart(nodes, host).attempt,
        ports_taken=lambda directory: _any_address_in_use(directory, nodes),
    )


def _any_address_in_use(data_dir: Path, nodes: int) -> bool:
    return any(address_in_use(data_dir / node_dir_name(i + 1)) for i in range(nodes))


def _recorded_cluster(
    state_path: Path, nodes: int, security: str, listen_address: str, reuse_running: bool
) -> ClusterHandle | None:
    """The cluster ``state_path`` records if it can be reused; a stale record is removed."""
    single = load_state(state_path)
    if single is not None and is_running(single):
        raise BrokerError(
            f"a single-node dev broker is running at {single.bootstrap_servers} (pid "
            f"{single.pid}); stop it first (seqgate broker down)"
        )
    existing = load_cluster_state(state_path)
    if existing is None:
        return None
    up = existing.node_pids
    if not up:
        state_path.unlink(missing_ok=True)
        return None
    wanted = (nodes, security, listen_address)
    have = (len(existing.nodes), existing.security, existing.listen_address)
    if not reuse_running or wanted != have or len(up) < len(existing.nodes):
        raise BrokerError(
            f"a dev cluster of {have[0]} node(s) ({len(up)} running, security {have[1]}, "
            f"{existing.bootstrap_servers}) is recorded in {state_path}; stop it first "
            "(seqgate broker down)"
        )
    existing.already_running = True
    return existing


@dataclass(frozen=True, slots=True)
class _ClusterStart:
    """The attempts of one :func:`start_cluster` call: ``nodes`` nodes on ``host``."""

    nodes: int
    host: str

    def attempt(self, plan: StartPlan) -> tuple[ClusterHandle | None, str, Path]:
        """Wipe, configure, format and launch every node on new ports: ``(handle, "", dir)``,
        or ``(None, reason, dir of the failed node)`` with no node left running."""
        handle, format_extra = self._configure(plan)
        say(plan.progress, f"formatting the storage of {self.nodes} nodes in {plan.data_dir}")
        self._format(plan, handle, format_extra)
        say(
            plan.progress,
            f"starting Apache Kafka {KAFKA_VERSION}, {self.nodes} nodes on "
            f"{handle.bootstrap_servers} (logs: {plan.data_dir}/node-*/server.log)",
        )
        started = time.monotonic()
        try:
            for node in handle.nodes:
                spawn_node(plan.java, plan.libs, node, watched=handle.watched)
            reason = handle.await_nodes([n.node_id for n in handle.nodes], plan.timeout)
        except BaseException:  # e.g. Ctrl-C: leave no half-started cluster behind
            stop_nodes(handle.nodes, 10.0)
            raise
        if reason:
            stop_nodes(handle.nodes, 10.0)
            failed = next(
                (n for n in handle.nodes if reason.startswith(f"node {n.node_id}:")), None
            )
            return None, reason, (failed or handle.nodes[0]).data_dir
        handle.save()
        say(
            plan.progress,
            f"cluster ready at {handle.bootstrap_servers} (pids "
            f"{', '.join(str(n.pid) for n in handle.nodes)}) after "
            f"{time.monotonic() - started:.1f} s",
        )
        return handle, "", plan.data_dir

    def _configure(self, plan: StartPlan) -> tuple[ClusterHandle, list[str] | None]:
        """The wiped data dir, with the security material and each node's properties; the
        handle, and the extra format arguments (the SCRAM user, made on every node)."""
        prepare_data_dir(plan.data_dir)
        material = (
            sec.create_sasl_ssl_material(plan.data_dir, [self.host])
            if plan.security == sec.SASL_SSL
            else None
        )
        ports = allocate_ports(self.nodes, self.host)
        handle = ClusterHandle(
            data_dir=plan.data_dir,
            cluster_id=cluster_id(),
            nodes=[],
            listen_address=self.host,
            security=plan.security,
            client_properties=material.client_properties if material else None,
            ca_file=material.ca_file if material else None,
            state_file=plan.state_path,
            watched=not plan.detach,
        )
        log4j = resource_bytes("log4j2.xml")
        for node_ports in ports:
            node_dir = plan.data_dir / node_dir_name(node_ports.node_id)
            node_dir.mkdir()
            (node_dir / "log4j2.xml").write_bytes(log4j)
            write_node_properties(node_dir, node_ports, ports, self.host, material)
            handle.nodes.append(
                NodeHandle(
                    node_ports.node_id, node_ports.port, node_ports.controller_port, 0, node_dir
                )
            )
        return handle, sec.format_arguments(material) if material else None

    def _format(self, plan: StartPlan, handle: ClusterHandle, extra: list[str] | None) -> None:
        """Format every node's storage with the one cluster id (in parallel: a JVM each)."""

        def run(node: NodeHandle) -> None:
            format_storage(
                plan.java,
                plan.libs,
                node.data_dir,
                node.data_dir / "server.properties",
                extra,
                cluster=handle.cluster_id,
                flags=NODE_JVM_FLAGS,
            )

        with ThreadPoolExecutor(max_workers=len(handle.nodes)) as pool:
            for future in [pool.submit(run, node) for node in handle.nodes]:
                future.result()


def stop_cluster(cluster: ClusterHandle | Path | None = None, timeout: float = 30.0) -> None:
    """Stop every node (SIGTERM together, SIGKILL after ``timeout`` s) and their watchdogs,
    and remove the state file if it still records this cluster."""
    if cluster is None or isinstance(cluster, Path):
        loaded = load_cluster_state(cluster or default_state_file())
        if loaded is None:
            return
        cluster = loaded
    stop_nodes(cluster.nodes, timeout)
    if cluster.state_file is not None:
        recorded = load_cluster_state(cluster.state_file)
        if recorded is not None and recorded.cluster_id == cluster.cluster_id:
            cluster.state_file.unlink(missing_ok=True)


def running_cluster(
    nodes: int = 3,
    *,
    data_dir: Path | None = None,
    security: str = sec.PLAINTEXT,
    listen_address: str = HOST,
    timeout: float = 120.0,
    progress: Progress | None = None,
) -> contextlib.AbstractContextManager[ClusterHandle]:
    """A throwaway cluster for tests, stopped when the block exits (as ``running_broker``:
    state in ``<data_dir>/state.json``, a watchdog per node, a temporary dir by default)."""
    start_in = functools.partial(
        start_cluster,
        nodes=nodes,
        timeout=timeout,
        progress=progress,
        security=security,
        listen_address=listen_address,
    )
    return throwaway(start_in, stop_cluster, data_dir, "seqgate-cluster-")
