"""How a development broker or cluster is started, whatever its number of nodes.

One start holds the state file's lock, reuses (or refuses) what the state file records, checks
the data directory before the slow jar resolution, and then makes *attempts*: each wipes,
configures, formats and launches on new free ports. The ports are picked free a moment before
the JVMs bind them (``config.free_ports``), so another process may take one in between; that
attempt is made again on new ports, a few times. Any other failure is final.

:func:`throwaway` is the shape of ``running_broker`` and ``running_cluster``: a start in a data
directory of its own, stopped when the block exits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from seqgate_devtools.broker import security as sec
from seqgate_devtools.broker.datadir import (
    prepare_data_dir,
    throwaway_data_dir,
    wipeable_entries,
)
from seqgate_devtools.broker.files import Progress, file_lock, say
from seqgate_devtools.broker.jars import ensure_kafka_jars
from seqgate_devtools.broker.locations import default_data_dir, default_state_file
from seqgate_devtools.broker.log_tails import failure_detail
from seqgate_devtools.broker.toolchain import find_java
from seqgate_devtools.errors import BrokerError

__all__ = [
    "START_ATTEMPTS",
    "StartOptions",
    "StartPlan",
    "check_security_mode",
    "start",
    "start_with_port_retries",
    "throwaway",
]

START_ATTEMPTS = 3

H = TypeVar("H")


@dataclass(frozen=True, slots=True)
class StartOptions:
    """What the caller of ``start_broker`` or ``start_cluster`` chose (see ``start_broker``)."""

    data_dir: Path | None
    state_file: Path | None
    security: str
    timeout: float
    detach: bool
    progress: Progress | None


@dataclass(frozen=True, slots=True)
class StartPlan:
    """What every attempt of one start shares."""

    java: str
    libs: Path
    data_dir: Path
    state_path: Path
    security: str
    timeout: float
    detach: bool
    progress: Progress | None


def check_security_mode(security: str) -> None:
    if security not in sec.SECURITY_MODES:
        raise BrokerError(
            f"unknown security mode {security!r}: choose one of {', '.join(sec.SECURITY_MODES)}"
        )


def start(
    options: StartOptions,
    *,
    recorded: Callable[[Path], H | None],
    attempt: Callable[[StartPlan], tuple[H | None, str, Path]],
    ports_taken: Callable[[Path], bool],
) -> H:
    """Start under the lock of the state file (default :func:`default_state_file`).

    ``recorded(state_path)`` returns what the state file records if it can be reused, or
    None (and raises when it must be stopped first); otherwise ``attempt(plan)`` is made,
    again while ``ports_taken(data_dir)`` (see :func:`start_with_port_retries`)."""
    check_security_mode(options.security)
    state_path = (options.state_file or default_state_file()).absolute()
    with file_lock(state_path.with_name(state_path.name + ".lock")):
        existing = recorded(state_path)
        if existing is not None:
            return existing
        java = find_java()
        directory = (options.data_dir or default_data_dir()).absolute()
        if directory.is_dir() and wipeable_entries(directory):
            prepare_data_dir(directory)  # raises before the (slow) jar resolution
        progress = options.progress
        plan = StartPlan(
            java, ensure_kafka_jars(progress), directory, state_path, options.security,
            options.timeout, options.detach, progress,
        )  # fmt: skip
        return start_with_port_retries(
            lambda: attempt(plan), lambda: ports_taken(directory), progress
        )


def start_with_port_retries(
    attempt: Callable[[], tuple[H | None, str, Path]],
    ports_taken: Callable[[], bool],
    progress: Progress | None,
) -> H:
    """``attempt()`` gives ``(handle, "", dir)`` or ``(None, reason, dir that failed)``; it is
    made again while ``ports_taken()`` says a port was taken, up to :data:`START_ATTEMPTS`
    times. Raises :class:`BrokerError` with the reason and the failed directory's log tail."""
    for number in range(1, START_ATTEMPTS + 1):
        handle, reason, failed_dir = attempt()
        if handle is not None:
            return handle
        if number == START_ATTEMPTS or not ports_taken():
            raise BrokerError(f"{reason}; data dir {failed_dir}", failure_detail(failed_dir))
        say(progress, "a port was taken meanwhile; retrying with other ports")
    raise AssertionError("unreachable: the last attempt returns or raises")


@contextlib.contextmanager
def throwaway(
    start_in: Callable[..., H],
    stop: Callable[[H], None],
    data_dir: Path | None,
    prefix: str,
) -> Iterator[H]:
    """``start_in(directory, ...)`` in ``data_dir`` (default: a new temporary directory,
    removed afterwards), recorded in ``<directory>/state.json`` (never the state file of
    ``seqgate broker up``), never reusing what runs, watched (a watchdog stops it if this
    process dies without leaving the block), and stopped with ``stop`` at the end."""
    with throwaway_data_dir(data_dir, prefix) as directory:
        handle = start_in(
            directory, state_file=directory / "state.json", reuse_running=False, detach=False
        )
        try:
            yield handle
        finally:
            stop(handle)
