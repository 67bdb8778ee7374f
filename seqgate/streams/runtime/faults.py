"""Named points in the transaction where tests can inject a failure.

Production code calls `faults.reach(point)`; the default injector does
nothing. Tests pass an injector that raises (or kills the process) at a
chosen point, to prove what a crash there leaves behind.
"""

from __future__ import annotations

import os
import signal
import threading
from enum import StrEnum


class FaultPoint(StrEnum):
    AFTER_STATE_UPDATE = "after_state_update"  # overlay and produce done, nothing flushed
    SENDING_OFFSETS = "sending_offsets"  # inside send_offsets_to_transaction's bounded call
    BEFORE_COMMIT = "before_commit"  # offsets sent to the transaction, commit not called
    AFTER_COMMIT = "after_commit"  # Kafka committed, RocksDB not yet written


class InjectedFault(RuntimeError):
    """The failure a test asked for."""


class FaultInjector:
    """Does nothing; subclasses fail on purpose."""

    def reach(self, point: FaultPoint) -> None:
        return None


class RaiseAt(FaultInjector):
    """Raise InjectedFault the first `times` times `point` is reached."""

    def __init__(self, point: FaultPoint, times: int = 1) -> None:
        self.point = point
        self.remaining = times

    def reach(self, point: FaultPoint) -> None:
        if point == self.point and self.remaining > 0:
            self.remaining -= 1
            raise InjectedFault(f"injected failure at {point.value}")


class HangAt(FaultInjector):
    """Block the first `times` calls that reach `point` until `release` is set (or for
    `longest_s`): a client call that never returns, as librdkafka's can."""

    def __init__(
        self, point: FaultPoint, release: threading.Event, times: int = 1, longest_s: float = 600
    ) -> None:
        self.point = point
        self.release = release
        self.remaining = times
        self.longest_s = longest_s
        self.hung = 0

    def reach(self, point: FaultPoint) -> None:
        if point == self.point and self.remaining > 0:
            self.remaining -= 1
            self.hung += 1
            self.release.wait(self.longest_s)


class KillAt(FaultInjector):
    """SIGKILL this process when `point` is reached (crash tests, via SEQGATE_FAULT)."""

    def __init__(self, point: FaultPoint, after: int = 0) -> None:
        self.point = point
        self.after = after

    def reach(self, point: FaultPoint) -> None:
        if point == self.point:
            if self.after <= 0:
                os.kill(os.getpid(), signal.SIGKILL)
            self.after -= 1


def injector_from_env(value: str | None) -> FaultInjector:
    """`SEQGATE_FAULT=kill:<point>[:<skip>]` — for crash tests only."""
    if not value:
        return FaultInjector()
    parts = value.split(":")
    if len(parts) not in (2, 3) or parts[0] != "kill":
        raise ValueError(f"SEQGATE_FAULT={value!r}: expected kill:<point>[:<skip count>]")
    point = FaultPoint(parts[1])
    return KillAt(point, int(parts[2]) if len(parts) == 3 else 0)
