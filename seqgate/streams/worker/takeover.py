"""How long each partition took to serve again after it was assigned here.

A partition serves again when a transaction with its input commits. From the assignment
to that commit is the takeover: the restore of its state (all of it, or the tail a warm
standby lacks) and the first transaction. One info line per partition ("partition
serving", read by `seqgate bench --failover`) and the `seqgate_worker_takeover_seconds`
histogram say it; the instants are wall-clock seconds so that they compare with the
moment another process was stopped.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from seqgate.runtime.metrics import WorkerMetrics

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Assigned:
    at: float  # wall clock, when the assignment callback began
    began: float  # monotonic, the same instant
    restored: int  # changelog records replayed
    restore_s: float
    standby: bool  # a warm standby store was handed over


class Takeovers:
    """Partitions assigned here that have not committed yet."""

    def __init__(self, metrics: WorkerMetrics) -> None:
        self._metrics = metrics
        self._waiting: dict[int, _Assigned] = {}

    def assigned(
        self,
        at: float,
        began: float,
        restores: Mapping[int, tuple[int, float]],
        warm: Collection[int],
    ) -> None:
        for partition, (restored, seconds) in restores.items():
            self._waiting[partition] = _Assigned(at, began, restored, seconds, partition in warm)

    def released(self, partition: int) -> None:
        self._waiting.pop(partition, None)

    def committed(self, partitions: Collection[int]) -> None:
        """A transaction committed input of `partitions`."""
        if not self._waiting:
            return
        now, wall = time.monotonic(), time.time()
        for partition in partitions:
            assigned = self._waiting.pop(partition, None)
            if assigned is None:
                continue
            took = now - assigned.began
            self._metrics.takeover_seconds.observe(took)
            log.info(
                "partition serving",
                extra={
                    "partition": partition,
                    "assigned_at": round(assigned.at, 3),
                    "serving_at": round(wall, 3),
                    "takeover_s": round(took, 3),
                    "restore_s": round(assigned.restore_s, 3),
                    "restored": assigned.restored,
                    "standby": assigned.standby,
                },
            )
