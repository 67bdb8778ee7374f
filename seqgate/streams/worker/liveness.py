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

import logging
import time
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, TopicPartition

from seqgate.runtime.errors import WorkerFatalError

__all__ = ["LivenessCheck", "PartitionProgress", "StallWatch", "readable_partitions"]

log = logging.getLogger(__name__)


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


class LivenessCheck:
    """The worker's stall exit: a consumer that reads nothing while records wait, or a
    rejoin that never ends, stops the worker with one line for its supervisor."""

    def __init__(
        self,
        stall: StallWatch,
        consumer: Consumer,
        restore_consumer: Consumer,
        *,
        input_topic: str,
        stall_timeout_ms: int,
    ) -> None:
        self.stall = stall
        self._consumer = consumer
        self._restore_consumer = restore_consumer  # asks for the readable end
        self._input_topic = input_topic
        self._stall_timeout_ms = stall_timeout_ms
        self._lost_at: float | None = None  # partitions lost, no assignment since
        self._lost_member_id: str | None = None  # the group member id when they were lost

    def polled(self, consumed: bool) -> None:
        """After each poll: progress, or (at most every timeout/4 while idle) a check."""
        now = time.monotonic()
        if consumed:
            self.stall.progressed(now)
        elif self.stall.due(now):
            self.check_not_stuck()

    def assigned(self) -> None:
        self._lost_at = None
        self.stall.progressed(time.monotonic())

    def lost(self, member_id: str) -> None:
        self._lost_at = time.monotonic()
        self._lost_member_id = member_id

    def check_not_stuck(self) -> None:
        """Exit (for a supervisor to restart us) if assigned partitions have readable
        records that this consumer has not read for --stall-timeout-ms, or if the
        partitions it lost have not been followed by a new assignment for as long."""
        lost_at = self._lost_at
        if lost_at is not None and self._consumer.memberid() != self._lost_member_id:
            self._lost_at = None  # rejoined under a new member id, given nothing: idle
        elif lost_at is not None and time.monotonic() - lost_at >= self.stall.timeout_s:
            raise WorkerFatalError(
                f"partitions lost {time.monotonic() - lost_at:.0f} s ago and no new assignment"
                f" since (--stall-timeout-ms {self._stall_timeout_ms}): rejoining the"
                " group is stuck; restart the worker (it resumes from the committed offsets)"
            )
        try:
            progress = [self._progress_of(tp) for tp in self._consumer.assignment()]
        except KafkaException as error:
            # The broker does not answer: an outage, not a stuck consumer.
            log.info("stall check skipped", extra={"error": error.args[0].str()})
            return
        stuck = readable_partitions(progress)
        if not self.stall.observed(time.monotonic(), bool(stuck)):
            return
        described = ", ".join(
            f"{entry.partition} (at {entry.position}, readable up to {entry.stable_end})"
            for entry in stuck
        )
        raise WorkerFatalError(
            f"no record consumed for {self._stall_timeout_ms} ms (--stall-timeout-ms)"
            f" while partitions {described} of {self._input_topic} have committed"
            " records to read: the Kafka client is stuck; restart the worker (it resumes"
            " from the committed offsets)"
        )

    def _progress_of(self, tp: TopicPartition) -> PartitionProgress:
        (positioned,) = self._consumer.position([tp])  # local: no broker call
        # Asked through the other client (read_committed: it answers the last stable
        # offset): a stuck consumer may not answer for itself either, which would
        # look like an outage forever; when the broker answers another client, it is not.
        low, stable_end = self._restore_consumer.get_watermark_offsets(
            tp, timeout=5.0, cached=False
        )
        position = positioned.offset if positioned.offset >= 0 else None
        return PartitionProgress(tp.partition, position, low, stable_end)
