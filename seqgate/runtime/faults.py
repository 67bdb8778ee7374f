"""Named points in the transaction where tests can inject a failure.

Production code calls `faults.reach(point)`; the default injector does
nothing. Tests pass an injector that raises (or kills the process) at a
chosen point, to prove what a crash (or a freeze) there leaves behind.
"""

from __future__ import annotations

import os
import signal
import threading
from enum import StrEnum
from pathlib import Path

from seqgate.runtime.errors import InjectedFault


class FaultPoint(StrEnum):
    AFTER_STATE_UPDATE = "after_state_update"  # overlay and produce done, nothing flushed
    SENDING_OFFSETS = "sending_offsets"  # inside send_offsets_to_transaction's bounded call
    BEFORE_COMMIT = "before_commit"  # offsets sent to the transaction, commit not called
    AFTER_COMMIT = "after_commit"  # Kafka committed, RocksDB not yet written


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


class SignalAt(FaultInjector):
    """Send this process `signum` at `point`, past the first `after` reaches; with `armed`,
    reaches count only while that file exists (a test arms the fault when it is ready).

    SIGKILL is a crash there; SIGSTOP freezes the process there, for as long as the test
    wants, in a state it knows (at `before_commit`: a transaction whose commit was never
    asked for), and it goes on from there on SIGCONT.
    """

    def __init__(
        self, point: FaultPoint, signum: int, after: int = 0, armed: Path | None = None
    ) -> None:
        self.point = point
        self.signum = signum
        self.after = after
        self.armed = armed

    def reach(self, point: FaultPoint) -> None:
        if point != self.point or (self.armed is not None and not self.armed.exists()):
            return
        if self.after <= 0:
            os.kill(os.getpid(), self.signum)
        else:
            self.after -= 1


_SIGNALS = {"kill": signal.SIGKILL, "stop": signal.SIGSTOP}
_FORMAT = "expected kill|stop:<point>[:<skip count>]"


def injector_from_env(value: str | None, armed: str | None = None) -> FaultInjector:
    """`SEQGATE_FAULT=<kill|stop>:<point>[:<skip>]`, armed by the file `SEQGATE_FAULT_ARMED`
    names if set — for crash and zombie tests only."""
    if not value:
        return FaultInjector()
    parts = value.split(":")
    if len(parts) not in (2, 3) or parts[0] not in _SIGNALS:
        raise ValueError(f"SEQGATE_FAULT={value!r}: {_FORMAT}")
    try:
        point = FaultPoint(parts[1])
        after = int(parts[2]) if len(parts) == 3 else 0
    except ValueError:
        points = ", ".join(point.value for point in FaultPoint)
        raise ValueError(f"SEQGATE_FAULT={value!r}: {_FORMAT}; points: {points}") from None
    return SignalAt(point, _SIGNALS[parts[0]], after, Path(armed) if armed else None)
