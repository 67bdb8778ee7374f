"""Liveness of the worker: tell a stuck consumer from an idle one.

A worker with nothing to read is idle; a worker whose assigned partitions hold
committed records it does not read is stuck. The second was seen after a long
broker outage (the client alive, connected, and fetching nothing). A process
cannot cure that from inside, but a restart does: the new incarnation fences the
old transactional id and resumes from the committed offsets. So after
``--stall-timeout-ms`` without a consumed record while records are readable the
worker stops with one error line, for its supervisor to restart it.

Readable means below the partition's last stable offset: records held back by
another producer's open transaction are not readable yet (that wait is bounded
by the transaction timeout, see docs/processor.md), so they never count as a
stall.
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PartitionProgress", "StallWatch", "readable_partitions"]


@dataclass(frozen=True, slots=True)
class PartitionProgress:
    partition: int
    position: int | None  # the next offset the consumer will read; None before the first fetch
    low: int  # the first offset still in the log
    stable_end: int  # the last stable offset: read_committed readers can read below it

    def readable(self) -> bool:
        start = self.low if self.position is None else max(self.position, self.low)
        return start < self.stable_end


def readable_partitions(progress: list[PartitionProgress]) -> list[PartitionProgress]:
    """The partitions with records the consumer could read and has not."""
    return [entry for entry in progress if entry.readable()]


@dataclass
class StallWatch:
    """When the worker last made progress, and whether it is stuck.

    A stall needs two observations a timeout apart: records that arrive while the
    worker idles are readable before the consumer's next fetch, so one observation
    of unread records proves nothing; the same records still unread a whole timeout
    later, with no progress in between, do.
    """

    timeout_s: float
    last_progress: float
    _checked_at: float = field(default=0.0)
    _suspected_at: float | None = field(default=None)

    def progressed(self, now: float) -> None:
        self.last_progress = now
        self._suspected_at = None

    def due(self, now: float) -> bool:
        """True when no progress for the timeout (checked at most once per timeout/4)."""
        if now - self.last_progress < self.timeout_s:
            return False
        if now - self._checked_at < self.timeout_s / 4:
            return False
        self._checked_at = now
        return True

    def observed(self, now: float, readable: bool) -> bool:
        """Record one check's finding; True when readable records have stayed unread
        for the whole timeout."""
        if not readable:
            self._suspected_at = None
            return False
        if self._suspected_at is None:
            self._suspected_at = now
        return now - self._suspected_at >= self.timeout_s
