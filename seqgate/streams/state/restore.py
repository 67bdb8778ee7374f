"""Rebuilding a partition's watermarks from its changelog (docs/design.md §5.4)."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from seqgate.runtime.errors import PartitionStalled
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.partition_reader import PartitionReader, reader_config
from seqgate.runtime.progress import Snapshot
from seqgate.runtime.topics import restore_group
from seqgate.streams.errors import ChangelogBehind, StoreBehind
from seqgate.streams.state.store import PartitionStore

log = logging.getLogger(__name__)

_APPLY_EVERY = 10_000
# A progress line (info) at most this often, and a final one per partition.
_LOG_EVERY_S = 5.0
# How often the changelog's end is asked again while it is below an offset the
# store already reflects (the commit markers of the last transaction not written yet).
_END_RECHECK_S = 0.05
# The cluster moving under the question for the changelog's bounds: a leader election, the
# handle of a node that returned replaced, or metadata that briefly lacks the partition
# (_UNKNOWN_PARTITION: both seen right after two of three nodes were down; the changelog's
# partitions were checked at start, so it is not gone). Asked again, with this pause,
# until the timeout; anything else is an answer.
_MOVING = frozenset(
    {
        KafkaError._DESTROY_BROKER,
        KafkaError._TRANSPORT,
        KafkaError._TIMED_OUT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError._UNKNOWN_PARTITION,
        KafkaError.UNKNOWN_TOPIC_OR_PART,
    }
)
_MOVING_PAUSE_S = 0.5
_ATTEMPT_S = 5.0


def restore_consumer_config(kafka: KafkaSettings, application_id: str) -> dict[str, object]:
    """The worker's read_committed restore consumer: it never joins its group, and commits
    there only its restores' progress reports (worker/restore_report.py)."""
    return reader_config(kafka, restore_group(application_id))


def restore_partition(
    consumer: Consumer,
    changelog_topic: str,
    partition: int,
    store: PartitionStore,
    *,
    timeout: float = 30.0,
    progress: Callable[[int, int], None] | None = None,
    at_least: int | None = None,
    settle_s: float = 10.0,
) -> int:
    """Replay the changelog partition from the store's offset to its end.

    `consumer` is a group-less consumer with isolation.level=read_committed
    and enable.partition.eof=true: the end is the last stable offset, so
    records of open or aborted transactions are never restored. Returns the
    number of records applied.

    `progress(applied, total)` is called as records are applied (`total` is the
    span of changelog offsets to read: an upper bound, since compaction and
    transaction markers leave gaps), and once at the end. A long restore also
    logs a progress line at info level every few seconds.

    The restore reads at least up to the store's offset and `at_least` (an offset
    the caller knows was committed, for a store rebuilt after damage): a changelog
    ending below it, for up to `settle_s` (the markers of a transaction just
    committed are written after the commit returns), raises ChangelogBehind.
    RocksDB failures raise the store's StateError.
    """
    span = _changelog_span(consumer, changelog_topic, partition, store, at_least, timeout, settle_s)
    if span is None:
        return 0
    start, end = span
    applier = _ChangelogApplier(store, partition, start, end, progress)
    reader = PartitionReader(consumer, changelog_topic, partition, timeout=timeout)
    try:
        for records in reader.batches(start):
            applier.take(records, reader.end_offset)
        applier.finish(reader.end_offset)
    except PartitionStalled:
        raise RuntimeError(
            f"restore of {changelog_topic}[{partition}] stalled at offset"
            f" {applier.next_offset} for {timeout:.0f}s"
        ) from None
    finally:
        consumer.unassign()
    log.info(
        "restored partition",
        extra={
            "partition": partition,
            "records": applier.applied,
            "next_offset": applier.next_offset,
        },
    )
    return applier.applied


def _changelog_span(
    consumer: Consumer,
    changelog_topic: str,
    partition: int,
    store: PartitionStore,
    at_least: int | None,
    timeout: float,
    settle_s: float,
) -> tuple[int, int] | None:
    """(the first offset to restore, the changelog's end); None: nothing to restore.

    Raises ChangelogBehind when the end stays below what the store or `at_least`
    reflects for `settle_s`, StoreBehind when the changelog starts after the store's offset.
    """
    tp = TopicPartition(changelog_topic, partition)
    start = store.changelog_next_offset()
    known = [offset for offset in (start, at_least) if offset is not None]
    wanted = max(known) if known else 0
    # The broker's answer, never librdkafka's cache: a restore consumer that has fetched
    # nothing of this partition holds no offsets there (-1001), which read as a changelog
    # behind the store and cost every partition's restore a recheck pause (50 ms, a third
    # of a fresh restore's time in `seqgate bench`); and one filled by an earlier restore
    # would be trusted after another worker wrote the changelog since.
    _known(consumer, tp)
    low, high = _bounds(consumer, tp, timeout)
    began = time.monotonic()
    while high < wanted and time.monotonic() - began < settle_s:
        time.sleep(_END_RECHECK_S)  # nothing to wait on: the broker is asked again
        low, high = _bounds(consumer, tp, timeout)
    if high < wanted:
        waited = time.monotonic() - began
        raise ChangelogBehind(partition, store.path, changelog_topic, wanted, high, waited)
    if start is not None and start < low:
        raise StoreBehind(partition, store.path, changelog_topic, start, low)
    if start is None:
        start = low
    if start >= high:
        return None
    return start, high


def _known(consumer: Consumer, tp: TopicPartition) -> None:
    """Make the consumer follow `tp` before the broker is asked for its bounds.

    librdkafka's local look-up (`cached=True`) creates the client's handle of a partition it
    does not know yet, which has its metadata asked for; its answer is not used (see above).
    Without it, right after two of three nodes were down and one came back, the question to
    the broker met `_UNKNOWN_PARTITION` until the timeout (the torture test
    `test_two_of_three_nodes_down` exited where it had resumed by itself)."""
    with contextlib.suppress(KafkaException):  # a local answer only: the broker's counts
        consumer.get_watermark_offsets(tp, cached=True)


def _bounds(consumer: Consumer, tp: TopicPartition, timeout: float) -> tuple[int, int]:
    """The partition's (low, high) offsets, asked again while the cluster is moving.

    Each question waits at most `_ATTEMPT_S`: one question given the whole timeout spent it
    all on a request to a node that had just come back (clean-clone CI, two of three nodes
    down then one returning), where a second question, with fresh metadata, is answered.
    """
    deadline = time.monotonic() + timeout
    while True:
        remaining = max(0.1, min(_ATTEMPT_S, deadline - time.monotonic()))
        try:
            low, high = consumer.get_watermark_offsets(tp, timeout=remaining, cached=False)
            return int(low), int(high)
        except KafkaException as error:
            if error.args[0].code() not in _MOVING or time.monotonic() >= deadline:
                raise
        time.sleep(_MOVING_PAUSE_S)


class _ChangelogApplier:
    """Changelog records applied to a store, a write per _APPLY_EVERY keys."""

    def __init__(
        self,
        store: PartitionStore,
        partition: int,
        start: int,
        end: int,
        progress: Callable[[int, int], None] | None,
    ) -> None:
        self.store = store
        self.partition = partition
        self.start = start
        self.end = end
        self.total = end - start  # an upper bound: see restore_partition
        self.progress = progress
        self.applied = 0
        self.next_offset = start
        self._pending: dict[bytes, bytes | None] = {}
        self._began = self._logged_at = time.monotonic()

    def take(self, records: list[Message], end_offset: int | None) -> None:
        """Add a batch of records; `end_offset`: the changelog's end, once reached."""
        for message in records:
            key, offset = message.key(), message.offset()
            if key is None or offset is None:
                continue
            self._pending[key] = message.value()
            self.next_offset = offset + 1
            self.applied += 1
        self._reached(end_offset)
        if len(self._pending) >= _APPLY_EVERY:
            self._apply()
        if time.monotonic() - self._logged_at >= _LOG_EVERY_S:
            self._logged_at = time.monotonic()
            self._log_progress()

    def finish(self, end_offset: int | None) -> None:
        """Apply what is pending, up to the changelog's end (past its last markers)."""
        self._reached(end_offset)
        self._apply()

    def _reached(self, end_offset: int | None) -> None:
        if end_offset is not None:
            self.next_offset = max(self.next_offset, end_offset)

    def _apply(self) -> None:
        self.store.apply(self._pending, self.next_offset)
        self._pending = {}
        if self.progress is not None:
            self.progress(self.applied, self.total)

    def _log_progress(self) -> None:
        done = self.next_offset - self.start
        seen = Snapshot("restore", done, self.total, time.monotonic() - self._began)
        eta = seen.eta_s()
        log.info(
            "restoring partition",
            extra={
                "partition": self.partition,
                "records": self.applied,
                "offset": self.next_offset,
                "end": self.end,
                "percent": round(100 * done / max(1, self.total), 1),
                "rate_per_s": round(seen.rate(), 1),
                "eta_s": None if eta is None else round(eta, 1),
            },
        )
