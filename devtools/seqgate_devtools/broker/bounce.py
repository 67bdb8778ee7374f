"""Kill a development broker and start it again on the same data: broker outages on demand.

:func:`start_broker` wipes its data directory and picks new ports on every start, which is
right for a development broker and useless for testing what clients do when *their* broker
goes away and comes back. The two calls here keep everything a client can observe:

* :func:`kill_broker` - SIGKILL the broker's process group (an unclean shutdown: the next
  start runs Kafka's log recovery, as after a power cut).
* :func:`restart_broker` - start the Java process again on the same data directory, ports
  and ``server.properties``; topics, committed offsets, transactions and groups survive, and
  so do a ``sasl_ssl`` broker's certificates, SCRAM user and ``client.properties``.
"""

from __future__ import annotations

import signal

from seqgate_devtools.broker.files import Progress, say, write_json_atomic
from seqgate_devtools.broker.handle import BrokerHandle
from seqgate_devtools.broker.jars import ensure_kafka_jars
from seqgate_devtools.broker.jvm import launch
from seqgate_devtools.broker.processes import (
    is_broker_process,
    reap,
    signal_group,
    wait_gone,
)
from seqgate_devtools.broker.toolchain import find_java
from seqgate_devtools.broker.watchdog import spawn_watchdog
from seqgate_devtools.errors import BrokerError

__all__ = ["kill_broker", "restart_broker"]


def kill_broker(handle: BrokerHandle, timeout: float = 30.0) -> None:
    """SIGKILL the broker of ``handle`` and wait until it is gone (no clean shutdown).

    Its watchdog (if any) stays armed: it has nothing left to kill and exits with this
    process. The handle can then be passed to :func:`restart_broker`.
    """
    process = handle._process
    alive = (
        process.poll() is None
        if process is not None
        else is_broker_process(handle.pid, handle.data_dir)
    )
    if not alive:
        reap(handle.pid)
        return
    signal_group(handle.pid, signal.SIGKILL)
    if not wait_gone(handle.pid, handle.data_dir, process, timeout):
        raise BrokerError(f"broker process {handle.pid} survived SIGKILL for {timeout:.0f} s")


def restart_broker(
    handle: BrokerHandle, *, timeout: float = 120.0, progress: Progress | None = None
) -> BrokerHandle:
    """Start the broker of ``handle`` again, keeping its data, ports and properties.

    The old process must be gone (see :func:`kill_broker`). Returns a new handle (same
    address, new pid), recorded in the same state file, with a watchdog when the old handle
    had one. Raises :class:`BrokerError` if the broker is still running or does not answer
    within ``timeout`` seconds.
    """
    if is_broker_process(handle.pid, handle.data_dir) or handle.answers(timeout=1.0):
        raise BrokerError(
            f"the broker at {handle.bootstrap_servers} (pid {handle.pid}) is still running; "
            "stop or kill it before restarting it"
        )
    props = handle.data_dir / "server.properties"
    if not props.is_file():
        raise BrokerError(f"no {props}: this data dir was never started by the dev broker")
    java = find_java()
    libs = ensure_kafka_jars(progress)
    say(progress, f"restarting the broker on {handle.bootstrap_servers} in {handle.data_dir}")
    process, reason = launch(
        java, libs, handle.data_dir, props, handle.port, timeout, handle.client_properties
    )
    if process is None:
        raise BrokerError(f"{reason}; data dir {handle.data_dir}")
    restarted = BrokerHandle(
        bootstrap_servers=handle.bootstrap_servers,
        pid=process.pid,
        data_dir=handle.data_dir,
        port=handle.port,
        controller_port=handle.controller_port,
        state_file=handle.state_file,
        security=handle.security,
        client_properties=handle.client_properties,
        ca_file=handle.ca_file,
        _process=process,
        _watchdog=spawn_watchdog(process.pid) if handle._watchdog is not None else None,
    )
    if handle.state_file is not None:
        write_json_atomic(handle.state_file, restarted.to_json())
    return restarted
