"""Reading one topic partition from an offset up to its stable end.

The one reader behind a worker's restore (`seqgate.streams.state.restore`) and the
operator tools (`seqgate.streams.tools.inspect`, hence verify and reset). It sees what
is committed: with `isolation.level=read_committed` the end is the partition's last
stable offset, and the records of aborted or still open transactions are never
returned. Those transactions' markers and compaction leave gaps in the offsets, so
the records read are not a contiguous run: the end is the end-of-partition event
(`enable.partition.eof`), or an offset the caller gives.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from seqgate.runtime.errors import PartitionStalled
from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings

_CONSUME_BATCH = 1_000
_CONSUME_WAIT_S = 0.05


def reader_config(kafka: KafkaSettings | str, group: str) -> dict[str, Any]:
    """A read_committed consumer for partitions it assigns itself (it joins no group)."""
    return client_config(
        kafka,
        **{
            "group.id": group,
            "isolation.level": "read_committed",
            # A reader reads to the end and stops: librdkafka's default 500 ms
            # fetch wait cost ~0.9 s per partition (measured by `seqgate bench`).
            "fetch.wait.max.ms": 10,
            # A reader drains one partition at a time, faster than one fetch refills
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


class PartitionReadFailed(KafkaException):
    """The consumer reported an error for the partition (`args[0]`, a KafkaError)."""

    @property
    def error(self) -> KafkaError:
        cause: KafkaError = self.args[0]
        return cause


class PartitionReader:
    """One partition of `topic`, read with `consumer` (see `reader_config`).

    The partition stays assigned after a read: the caller unassigns or closes.
    """

    def __init__(self, consumer: Consumer, topic: str, partition: int, *, timeout: float) -> None:
        self.consumer = consumer
        self.topic = topic
        self.partition = partition
        self.timeout = timeout
        # Where the end-of-partition event was (the stable end), once it was reached.
        self.end_offset: int | None = None

    def batches(self, begin: int, stop: int | None = None) -> Iterator[list[Message]]:
        """The records from offset `begin` up to the stable end, or to `stop` (exclusive),
        in offset order, in batches (never empty).

        Raises PartitionStalled after `timeout` seconds with nothing from the consumer, and
        PartitionReadFailed on an error the consumer reports.
        """
        self.end_offset = None
        self.consumer.assign([TopicPartition(self.topic, self.partition, begin)])
        position = begin
        last_progress = time.monotonic()
        while True:
            messages = next_batch(self.consumer)
            if not messages:
                if time.monotonic() - last_progress > self.timeout:
                    raise PartitionStalled(self.topic, self.partition, position, self.timeout)
                continue
            last_progress = time.monotonic()
            records, done = self._records(messages, stop)
            if records:
                last = records[-1].offset()
                position = position if last is None else last + 1
                yield records
            if done:
                return

    def _records(self, messages: list[Message], stop: int | None) -> tuple[list[Message], bool]:
        """(the records among `messages` before the end, whether the end was reached)."""
        for index, message in enumerate(messages):
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    self.end_offset = message.offset()
                    return messages[:index], True
                raise PartitionReadFailed(error)
            if stop is not None:
                offset = message.offset()
                if offset is not None and offset + 1 >= stop:
                    last = index + 1 if offset < stop else index
                    return messages[:last], True
        return messages, False
