"""Rebuilding a partition's watermarks from its changelog (docs/design.md §5.4)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from seqgate.streams.runtime.kafka_clients import client_config
from seqgate.streams.runtime.kafka_settings import KafkaSettings
from seqgate.streams.state.store import PartitionStore

log = logging.getLogger(__name__)

_APPLY_EVERY = 10_000
_CONSUME_BATCH = 1_000
_CONSUME_WAIT_S = 0.05
# A progress line (info) at most this often, and a final one per partition.
_LOG_EVERY_S = 5.0
# How often the changelog's end is asked again while it is below an offset the
# store already reflects (the commit markers of the last transaction not written yet).
_END_RECHECK_S = 0.05


class ChangelogBehind(RuntimeError):
    """The changelog ends before an offset the store reflects, and stayed there."""

    def __init__(
        self,
        partition: int,
        store: PartitionStore,
        topic: str,
        wanted: int,
        end: int,
        waited: float,
    ) -> None:
        super().__init__(
            f"state of partition {partition} at {store.path} is ahead of changelog {topic}"
            f" (store at offset {wanted}, changelog end {end} after waiting {waited:.0f}s):"
            " the changelog no longer holds records the store reflects"
        )
        self.partition = partition
        self.path = store.path
        self.wanted = wanted
        self.end = end


def restore_consumer_config(kafka: KafkaSettings, application_id: str) -> dict[str, object]:
    """The worker's group-less, read_committed restore consumer."""
    return client_config(
        kafka,
        **{
            "group.id": f"{application_id}-restore",
            "isolation.level": "read_committed",
            # A restore reads to the end and stops: librdkafka's default 500 ms
            # fetch wait cost ~0.9 s per partition (measured by `seqgate bench`).
            "fetch.wait.max.ms": 10,
            # Restore drains one partition at a time, faster than one fetch refills
            # it: librdkafka's default 1,000 ms pause whenever the local queue is
            # over queued.min.messages left it idle for a second at a time (measured:
            # 210,000-420,000 records/s with it, 780,000-830,000 without).
            "fetch.queue.backoff.ms": 10,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        },
    )


def next_batch(consumer: Consumer) -> list[Message]:
    """What the consumer has fetched, up to a batch; else the next record to arrive.

    Batches, not poll(): one call per record cost more than the restore itself. But
    consume() with a timeout waits for a *full* batch: whenever the fetcher fell
    behind, each call idled the whole timeout (measured: 47 waits of ~50 ms in one
    760,000-record restore, a third of its time). Taking what is there, and waiting
    only for one record when nothing is, keeps the batches without the idling.
    """
    messages: list[Message] = consumer.consume(_CONSUME_BATCH, 0)
    if messages:
        return messages
    return consumer.consume(1, _CONSUME_WAIT_S)


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
    tp = TopicPartition(changelog_topic, partition)
    start = store.changelog_next_offset()
    known = [offset for offset in (start, at_least) if offset is not None]
    wanted = max(known) if known else 0
    low, high = consumer.get_watermark_offsets(tp, timeout=timeout)
    began = time.monotonic()
    while high < wanted and time.monotonic() - began < settle_s:
        time.sleep(_END_RECHECK_S)  # nothing to wait on: the broker is asked again
        low, high = consumer.get_watermark_offsets(tp, timeout=timeout, cached=False)
    if high < wanted:
        waited = time.monotonic() - began
        raise ChangelogBehind(partition, store, changelog_topic, wanted, high, waited)
    if start is None or start < low:
        start = low
    if start >= high:
        return 0
    consumer.assign([TopicPartition(changelog_topic, partition, start or OFFSET_BEGINNING)])
    applied = 0
    pending: dict[bytes, bytes | None] = {}
    next_offset = start
    total = high - start
    logged_at = time.monotonic()
    try:
        done = False
        last_progress = time.monotonic()
        while not done:
            messages = next_batch(consumer)
            if not messages:
                if time.monotonic() - last_progress > timeout:
                    raise RuntimeError(
                        f"restore of {changelog_topic}[{partition}] stalled at offset"
                        f" {next_offset} for {timeout:.0f}s"
                    )
                continue
            last_progress = time.monotonic()
            for message in messages:
                error = message.error()
                if error is not None:
                    if error.code() == KafkaError._PARTITION_EOF:
                        next_offset = max(next_offset, message.offset() or 0)
                        done = True
                        break
                    raise KafkaException(error)
                key, offset = message.key(), message.offset()
                if key is None or offset is None:
                    continue
                pending[key] = message.value()
                next_offset = offset + 1
                applied += 1
            if len(pending) >= _APPLY_EVERY:
                store.apply(pending, next_offset)
                pending = {}
                if progress is not None:
                    progress(applied, total)
            if time.monotonic() - logged_at >= _LOG_EVERY_S:
                logged_at = time.monotonic()
                log.info(
                    "restoring partition",
                    extra={
                        "partition": partition,
                        "records": applied,
                        "offset": next_offset,
                        "end": high,
                        "percent": round(100 * (next_offset - start) / max(1, total), 1),
                    },
                )
        store.apply(pending, next_offset)
        if progress is not None:
            progress(applied, total)
    finally:
        consumer.unassign()
    log.info(
        "restored partition",
        extra={"partition": partition, "records": applied, "next_offset": next_offset},
    )
    return applied
