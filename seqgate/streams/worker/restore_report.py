"""A partition's restore, reported while it runs: `/metrics` and `seqgate status`.

`seqgate_worker_restore_remaining{partition}` says how many changelog records the restore
has yet to read. For `seqgate status`, which reads Kafka rather than each worker, the
restore consumer commits a progress report in its own group (`<application-id>-restore`,
never joined): per changelog partition, an offset whose metadata holds the time, the
worker's instance id and the records left (runtime/topics.py), at most once a second and
once more when the restore ends. A report is a report only: one lost changes nothing.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaException, TopicPartition

from seqgate.runtime.metrics import WorkerMetrics
from seqgate.runtime.topics import restore_stamp

log = logging.getLogger(__name__)

# How often a restore under way is reported to the group.
REPORT_EVERY_S = 1.0


class RestoreReport:
    """The progress callback of one partition's restore, and its end."""

    def __init__(
        self,
        consumer: Consumer,
        metrics: WorkerMetrics,
        *,
        changelog_topic: str,
        partition: int,
        instance_id: str,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._consumer = consumer
        self._metrics = metrics
        self._topic, self._partition = changelog_topic, partition
        self._instance_id = instance_id
        self._counted = metrics.restore_progress(partition)
        self._clock = clock
        self._reported_at: float | None = None
        self._applied = 0

    def progress(self, applied: int, total: int) -> None:
        self._counted(applied, total)
        self._applied = applied
        now = self._clock()
        if self._reported_at is None or now - self._reported_at >= REPORT_EVERY_S:
            self._reported_at = now
            self._report(max(0, total - applied), done=False)

    def finished(self) -> None:
        self._metrics.restore_done(self._partition)
        if self._reported_at is not None:  # only a restore that was reported under way
            self._report(0, done=True)

    def _report(self, remaining: int, *, done: bool) -> None:
        stamp = restore_stamp(int(time.time() * 1000), self._instance_id, remaining, done=done)
        report = TopicPartition(self._topic, self._partition, self._applied, metadata=stamp)
        try:
            self._consumer.commit(offsets=[report], asynchronous=True)
        except KafkaException as error:
            log.info("restore progress not reported", extra={"error": str(error.args[0])})
