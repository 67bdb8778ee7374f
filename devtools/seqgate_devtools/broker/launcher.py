"""Development broker: a single-node Apache Kafka (KRaft) run from the Maven Central jars.

This is for development and tests only (docs/design.md §6). The first use resolves
``org.apache.kafka:kafka_2.13`` and its runtime dependencies with Maven into
``${SEQGATE_HOME:-~/.cache/seqgate}/kafka-<version>/libs``; later uses only need Java 17+.

A broker started here listens on two free loopback ports (clients and controller), logs to
``<data dir>/server.log`` (its own stdout/stderr go to ``<data dir>/broker.out``) and keeps its
Kafka data in ``<data dir>/kraft``. **The data directory is wiped and reformatted every time a
broker is started on it**: nothing survives a restart.

With ``security="sasl_ssl"`` the client listener accepts only SASL_SSL (SCRAM-SHA-512 over TLS,
with a throwaway CA and a random password made on each start) and clients find their settings
in ``<data dir>/client.properties``; see :mod:`seqgate_devtools.broker.security`.

This module holds the starting and stopping:

* :func:`start_broker` / :func:`stop_broker` - the broker behind ``seqgate broker up|down``;
  it outlives the Python process that started it and is recorded in
  ``${SEQGATE_HOME:-~/.cache/seqgate}/broker/state.json``
  (:mod:`seqgate_devtools.broker.handle`, which also has ``broker_status``).
* :func:`running_broker` - a context manager for tests and demos: a throwaway broker in a
  temporary directory, stopped (and killed if this process dies) at the end.

The jars come from :mod:`~seqgate_devtools.broker.jars`, ``server.properties`` from
:mod:`~seqgate_devtools.broker.config`, the Java processes from
:mod:`~seqgate_devtools.broker.jvm`.
"""

from __future__ import annotations

import contextlib
import functools
import time
from pathlib import Path

from seqgate_devtools.broker import security as sec
from seqgate_devtools.broker.attempts import StartOptions, StartPlan, start, throwaway
from seqgate_devtools.broker.cluster_handle import load_cluster_state
from seqgate_devtools.broker.config import free_ports, write_server_properties
from seqgate_devtools.broker.datadir import prepare_data_dir
from seqgate_devtools.broker.files import Progress, resource_bytes, say, write_json_atomic
from seqgate_devtools.broker.handle import BrokerHandle, is_running, load_state
from seqgate_devtools.broker.jvm import address_in_use, format_storage, launch
from seqgate_devtools.broker.locations import HOST, KAFKA_VERSION
from seqgate_devtools.broker.processes import terminate
from seqgate_devtools.broker.watchdog import disarm_watchdog, spawn_watchdog
from seqgate_devtools.errors import BrokerError

__all__ = ["running_broker", "start_broker", "stop_broker"]


def start_broker(
    data_dir: Path | None = None,
    *,
    timeout: float = 90.0,
    state_file: Path | None = None,
    progress: Progress | None = None,
    reuse_running: bool = True,
    detach: bool = True,
    security: str = sec.PLAINTEXT,
) -> BrokerHandle:
    """Start a single-node Apache Kafka broker (KRaft) on free loopback ports.

    This is a *development* broker: ``data_dir`` (default :func:`default_data_dir`) is wiped
    and reformatted on every start, so no data survives a restart. A directory that is not
    empty is only wiped if an earlier start created it (it holds a ``.seqgate-devbroker`` file).

    The broker is recorded in ``state_file`` (default :func:`default_state_file`). If that file
    names a broker that is still running and answering, it is returned unchanged with
    ``already_running=True`` (when ``reuse_running``; otherwise that is an error).

    The Java process runs in its own session, so it outlives this Python process unless
    ``detach`` is false: then a small watchdog kills it when this process exits without
    calling :func:`stop_broker`.

    ``security`` is ``plaintext`` or ``sasl_ssl``: a client listener that accepts only
    SCRAM-SHA-512 over TLS, with new credentials and certificates on each start; clients use
    the handle's ``client_properties`` file (:mod:`seqgate_devtools.broker.security`). A
    running
    broker is only reused when its mode matches.

    Waits up to ``timeout`` seconds for the broker to return metadata. Raises
    :class:`BrokerError` (with the tail of ``server.log`` when the broker itself failed).
    """
    return start(
        StartOptions(data_dir, state_file, security, timeout, detach, progress),
        recorded=lambda state_path: _recorded_broker(state_path, security, reuse_running),
        attempt=_attempt,
        ports_taken=address_in_use,
    )


def _recorded_broker(state_path: Path, security: str, reuse_running: bool) -> BrokerHandle | None:
    """The broker ``state_path`` records if it can be reused; a stale record is removed."""
    cluster = load_cluster_state(state_path)
    if cluster is not None and cluster.node_pids:
        raise BrokerError(
            f"a dev cluster of {len(cluster.nodes)} nodes is running at "
            f"{cluster.bootstrap_servers} (recorded in {state_path}); stop it first "
            "(seqgate broker down)"
        )
    existing = load_state(state_path)
    if existing is None:
        return None
    if not is_running(existing):
        state_path.unlink(missing_ok=True)
        return None
    if not reuse_running:
        raise BrokerError(
            f"a dev broker is already running at {existing.bootstrap_servers} "
            f"(pid {existing.pid}, recorded in {state_path})"
        )
    if existing.security != security:
        raise BrokerError(
            f"a dev broker with security {existing.security} is already running at "
            f"{existing.bootstrap_servers} (pid {existing.pid}); stop it first "
            f"(seqgate broker down) to start one with security {security}"
        )
    if existing.answers(timeout=5.0):
        existing.already_running = True
        return existing
    raise BrokerError(
        f"the dev broker recorded in {state_path} (pid {existing.pid}, "
        f"{existing.bootstrap_servers}) is running but does not answer; stop it "
        f"with `seqgate broker down` (its log: {existing.log_file})"
    )


def _attempt(plan: StartPlan) -> tuple[BrokerHandle | None, str, Path]:
    """Wipe, configure, format and launch on new ports: ``(handle, "", data dir)``, or
    ``(None, reason, data dir)`` when the broker did not come up."""
    data_dir = plan.data_dir
    prepare_data_dir(data_dir)
    (data_dir / "log4j2.xml").write_bytes(resource_bytes("log4j2.xml"))
    port, controller_port = free_ports(2)
    material = sec.create_sasl_ssl_material(data_dir) if plan.security == sec.SASL_SSL else None
    props = write_server_properties(data_dir, port, controller_port, material)
    say(plan.progress, f"formatting broker storage in {data_dir}")
    format_storage(
        plan.java,
        plan.libs,
        data_dir,
        props,
        sec.format_arguments(material) if material else None,
    )
    client_props = material.client_properties if material else None
    say(
        plan.progress,
        f"starting Apache Kafka {KAFKA_VERSION} on {HOST}:{port} (log: {data_dir / 'server.log'})",
    )
    started = time.monotonic()
    process, reason = launch(
        plan.java, plan.libs, data_dir, props, port, plan.timeout, client_props
    )
    if process is None:
        return None, reason, data_dir
    handle = BrokerHandle(
        bootstrap_servers=f"{HOST}:{port}",
        pid=process.pid,
        data_dir=data_dir,
        port=port,
        controller_port=controller_port,
        state_file=plan.state_path,
        security=plan.security,
        client_properties=client_props,
        ca_file=material.ca_file if material else None,
        _process=process,
        _watchdog=None if plan.detach else spawn_watchdog(process.pid),
    )
    write_json_atomic(plan.state_path, handle.to_json())
    say(
        plan.progress,
        f"broker ready at {handle.bootstrap_servers} (pid {handle.pid}) "
        f"after {time.monotonic() - started:.1f} s",
    )
    return handle, "", data_dir


def stop_broker(handle: BrokerHandle | Path | None = None, timeout: float = 30.0) -> None:
    """Stop a broker: SIGTERM, wait up to ``timeout`` s, then SIGKILL; remove its state file.

    ``handle`` is a :class:`BrokerHandle`, the path of a state file, or None for the default
    state file. Stopping a broker that is not running only removes the stale state file. A pid
    that now belongs to another process is never signalled.
    """
    if handle is None or isinstance(handle, Path):
        loaded = load_state(handle)
        if loaded is None:
            return
        handle = loaded
    try:
        terminate(handle.pid, handle.data_dir, handle._process, timeout)
    finally:
        disarm_watchdog(handle._watchdog)
        handle._watchdog = None
    if handle.state_file is not None:
        recorded = load_state(handle.state_file)
        if recorded is not None and recorded.pid == handle.pid:
            handle.state_file.unlink(missing_ok=True)


def running_broker(
    data_dir: Path | None = None,
    *,
    timeout: float = 90.0,
    progress: Progress | None = None,
    security: str = sec.PLAINTEXT,
) -> contextlib.AbstractContextManager[BrokerHandle]:
    """A throwaway broker for tests and demos; stopped when the block exits.

    It runs in ``data_dir`` (default: a new temporary directory, removed afterwards) and
    records its state in ``<data_dir>/state.json``, never in the state file of
    ``seqgate broker up``. If this process dies without leaving the block, a watchdog
    process stops the broker. ``security`` is as for :func:`start_broker`.
    """
    start_in = functools.partial(
        start_broker, timeout=timeout, progress=progress, security=security
    )
    return throwaway(start_in, stop_broker, data_dir, "seqgate-broker-")
