"""Ending the open transaction of a worker that left its input offsets pending, as its
partitions arrive.

A worker killed between sending its input offsets to its transaction and committing it
leaves those offsets pending in the group: until the transaction ends, the group answers
the next owner's question "where do I resume?" with "not yet", and the broker ends the
transaction only at its timeout (`--transaction-timeout-ms`). The next owner ends it at
once the way the dead worker's restart would: a producer initialised with the dead worker's
`transactional.id` fences it, and the coordinator aborts what it had open. Nothing of that
transaction could have committed anyway: its offsets carry a group generation that ended
with the dead worker's membership.

On an assignment, for the partitions whose committed offsets name another worker (each
worker names itself in its offsets' metadata: rules/takeover.py), a consumer that does not
wait for pending offsets (`read_uncommitted`) reads who committed them last, and one that
does (`read_committed`) asks again, briefly: when that answer does not come, the offsets
are pending, and their owner is fenced. A live worker that gave partitions away committed
them first, so it is never fenced. Only consumer requests are used, no admin requests:
librdkafka's coordinator admin requests can abort the process when a connection drops
under them (librdkafka issues 3663 and 4605).

Just before the fence the new owner marks, in the fenced worker's group
`<application-id>-fenced-<instance-id>` (runtime/topics.py), when and by whom. A fenced
worker that was only paused resumes to find its producer fenced, reads the mark and goes on
with a new producer (runtime/renewal.py); without a mark, a fence means a second process
with its instance id.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterable

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from seqgate.runtime.kafka_clients import close_producer, offsets_consumer
from seqgate.runtime.renewal import TakenOver
from seqgate.runtime.topics import fence_stamp, fenced_group, read_fence_stamp
from seqgate.streams.rules.takeover import previous_owners, taken_over_by
from seqgate.streams.worker.config import WorkerConfig, producer_config

log = logging.getLogger(__name__)

# A committed offset is read in tens of milliseconds (60 ms here, unloaded); a pending one
# is not read at all while its transaction is open.
PENDING_PROBE_S = 0.5
_READ_TIMEOUT_S = 10.0
_CLOSE_WAIT_S = 5.0
# The coordinator answers "concurrent transactions" while it writes the abort's markers;
# librdkafka's default backoff (100 ms, doubling to 1 s) then waits longer than the abort.
_FAST_RETRIES = {"retry.backoff.ms": "20", "retry.backoff.max.ms": "100"}


class PendingOwners:
    """Ends, on an assignment, the transactions that hold its partitions' offsets pending."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self._lock = threading.Lock()  # one takeover at a time; the readers are shared
        self._readers: tuple[Consumer, Consumer] | None = None
        self._closed = False

    def close(self) -> None:
        self._closed = True
        # A fence under way may take a while; the process does not wait for it to close.
        if not self._lock.acquire(timeout=_CLOSE_WAIT_S):
            return
        try:
            if self._readers is not None:
                for reader in self._readers:
                    reader.close()
                self._readers = None
        finally:
            self._lock.release()

    def end_transactions(self, partitions: Iterable[int]) -> threading.Thread:
        """Look for pending offsets of `partitions` and end the transactions that hold them,
        on a thread of its own: the rebalance callback and the restore go on meanwhile."""
        thread = threading.Thread(
            target=self._end_pending, args=(sorted(partitions),), name="fence", daemon=True
        )
        thread.start()
        return thread

    def _end_pending(self, partitions: list[int]) -> None:
        with self._lock:
            if self._closed or not partitions:
                return
            last, stable = self._open_readers()
            try:
                committers = self._committers(last, partitions)
            except KafkaException as error:
                log.info("committed offsets not read", extra={"error": str(error.args[0])})
                return
            owners = previous_owners(committers, self.config.instance_id)
            for owner, theirs in sorted(owners.items()):
                if self._pending(stable, theirs):
                    self._end(owner, sorted(theirs))

    def _open_readers(self) -> tuple[Consumer, Consumer]:
        if self._readers is None:
            self._readers = (self._reader("read_uncommitted"), self._reader("read_committed"))
        return self._readers

    def _reader(self, isolation: str) -> Consumer:
        """A consumer of the worker's group that never joins it: it only reads offsets."""
        # read_committed waits for pending offsets; read_uncommitted does not.
        return offsets_consumer(self.config.kafka, self.config.application_id, isolation=isolation)

    def _committers(self, last: Consumer, partitions: list[int]) -> dict[int, str | None]:
        """Partition -> the worker named by its committed offset (pending ones not waited for)."""
        asked = [TopicPartition(self.config.input_topic, p) for p in partitions]
        return {tp.partition: tp.metadata for tp in last.committed(asked, _READ_TIMEOUT_S)}

    def _pending(self, stable: Consumer, partitions: set[int]) -> bool:
        asked = [TopicPartition(self.config.input_topic, p) for p in sorted(partitions)]
        try:
            stable.committed(asked, PENDING_PROBE_S)
        except KafkaException as error:
            return bool(error.args) and error.args[0].code() == KafkaError._TIMED_OUT
        return False

    def _end(self, instance_id: str, partitions: list[int]) -> None:
        """Mark, then fence `instance_id`'s transactional producer: its transaction aborts."""
        departed = dataclasses.replace(
            self.config,
            instance_id=instance_id,
            extra_producer_config={**_FAST_RETRIES, **self.config.extra_producer_config},
        )
        began = time.monotonic()
        try:
            self._mark(instance_id)
            producer = Producer(producer_config(departed, on_error=_ignored))
            try:
                producer.init_transactions(self.config.kafka_timeout_s)
            finally:
                close_producer(producer)
        except KafkaException as error:
            log.warning(
                "the open transaction of worker %s, which holds the offsets of partitions %s"
                " pending, was not ended (%s): they wait for the broker to abort it"
                " (--transaction-timeout-ms)",
                instance_id,
                partitions,
                error.args[0].str() if error.args else error,
                extra={"transactional_id": departed.transactional_id},
            )
            return
        log.info(
            "ended the open transaction of a previous owner",
            extra={
                "instance_id": instance_id,
                "transactional_id": departed.transactional_id,
                "partitions": partitions,
                "seconds": round(time.monotonic() - began, 3),
            },
        )

    def _mark(self, instance_id: str) -> None:
        group = fenced_group(self.config.application_id, instance_id)
        stamp = fence_stamp(int(time.time() * 1000), self.config.instance_id)
        consumer = offsets_consumer(self.config.kafka, group)
        try:
            mark = TopicPartition(self.config.input_topic, 0, 0, metadata=stamp)
            consumer.commit(offsets=[mark], asynchronous=False)
        finally:
            consumer.close()


def takeover_reader(config: WorkerConfig) -> TakenOver:
    """For the session (runtime/renewal.py): who ended this worker's transaction at a
    takeover after the given time, read from its fenced group's mark; None if nobody
    did, or if the mark cannot be read (the fence is then taken as another process's)."""
    group = fenced_group(config.application_id, config.instance_id)

    def taken_over(producer_since_s: float) -> str | None:
        reader = offsets_consumer(config.kafka, group)
        try:
            marks = reader.committed([TopicPartition(config.input_topic, 0)], _READ_TIMEOUT_S)
        except KafkaException as error:
            log.info("takeover mark not read", extra={"error": str(error.args[0])})
            return None
        finally:
            reader.close()
        mark = read_fence_stamp(marks[0].metadata) if marks else None
        return taken_over_by(mark, producer_since_s)

    return taken_over


def _ignored(error: KafkaError) -> None:
    """The fencing producer's asynchronous errors: init_transactions raises what matters."""
