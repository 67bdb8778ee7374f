"""Starting a broker or a cluster again on other ports when a free port was taken meanwhile.

The ports are picked free a moment before the JVMs bind them (``config.free_ports``), so
another process may take one in between; that start is retried on new ports, a few times.
Any other failure is final.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from seqgate.streams.devtools.broker import security as sec
from seqgate.streams.devtools.broker.errors import BrokerError, failure_detail
from seqgate.streams.devtools.broker.files import Progress, say

__all__ = ["START_ATTEMPTS", "check_security_mode", "start_with_port_retries"]

START_ATTEMPTS = 3

H = TypeVar("H")


def check_security_mode(security: str) -> None:
    if security not in sec.SECURITY_MODES:
        raise BrokerError(
            f"unknown security mode {security!r}: choose one of {', '.join(sec.SECURITY_MODES)}"
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
