"""What the long-running commands share around their loop: stopping on a signal, the
metrics endpoint of a bridge, and the faults a test injects."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from seqgate.runtime.errors import UsageError

if TYPE_CHECKING:
    from seqgate.runtime.faults import FaultInjector
    from seqgate.runtime.metrics import BridgeMetrics


def stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (Ctrl-C): the command finishes what it holds,
    then stops."""
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    return stop


def injected_faults() -> FaultInjector:
    """The faults SEQGATE_FAULT asks for (crash and zombie tests only); none without it."""
    from seqgate.runtime.faults import injector_from_env

    try:
        return injector_from_env(
            os.environ.get("SEQGATE_FAULT"), os.environ.get("SEQGATE_FAULT_ARMED")
        )
    except ValueError as error:
        raise UsageError(str(error)) from error


def cannot_listen(host: str, port: int | None, error: OSError) -> UsageError:
    """The error of a metrics endpoint that cannot listen where it was told to."""
    return UsageError(f"--metrics-host/--metrics-port: cannot listen on {host}:{port} ({error})")


def print_metrics_address(host: str, port: int) -> None:
    click.echo(f"metrics on http://{host}:{port}/metrics", err=True)


def serve_bridge_metrics(
    host: str, port: int | None, tally: Callable[[], dict[str, int]]
) -> BridgeMetrics | None:
    """With --metrics-port: /metrics (records by outcome, from the source's tally),
    /healthz and /readyz (200 while the bridge runs) on a thread of their own."""
    if port is None:
        return None
    from seqgate.runtime.metrics import BridgeMetrics

    metrics = BridgeMetrics(tally, alive_timeout_s=float("inf"))
    try:
        server = metrics.serve(host, port)
    except OSError as error:
        raise cannot_listen(host, port, error) from error
    metrics.health.set_ready(True)
    print_metrics_address(server.host, server.port)
    return metrics
