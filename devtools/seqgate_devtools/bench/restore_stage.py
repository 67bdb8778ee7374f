"""Restore: rebuild a fresh store from the changelog, against a raw consume of it.

Both read every changelog partition from its start to the last stable offset
with a read_committed, group-less consumer. The restore goes through
`seqgate.streams.state.restore.restore_partition` into fresh RocksDB stores (what a worker
does on assignment with an empty state directory); the raw consume only
touches each record's key and value. Both read in batches of up to 1,000
(`seqgate.runtime.partition_reader.next_batch`).

Both read with `fetch.wait.max.ms` and `fetch.queue.backoff.ms` at 10 ms, so the
figures compare the work per record. `WORKER_RESTORE_CONFIG` holds the same two
settings of the worker's own restore consumer
(`seqgate.streams.state.restore.restore_consumer_config`), and its row keeps checking them.
librdkafka's defaults cost a restore dearly: a 500 ms fetch wait held the last
fetch of every partition before the end-of-partition event (~0.9 s per
partition), and a 1,000 ms fetch pause whenever the local queue passed
`queued.min.messages` left a restore that drains faster than one fetch refills
idle for a second at a time. The worker sets both to 10 ms.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.partition_reader import next_batch
from seqgate.streams.state.restore import restore_consumer_config, restore_partition
from seqgate.streams.state.store import StateDirectory
from seqgate_devtools.bench.report import Throughput

_FETCH_SETTINGS = ("fetch.wait.max.ms", "fetch.queue.backoff.ms")
FAST_EOF_CONFIG: dict[str, object] = {"fetch.wait.max.ms": 10, "fetch.queue.backoff.ms": 10}
_WORKER = restore_consumer_config(KafkaSettings("unused:9092"), "unused")
WORKER_RESTORE_CONFIG: dict[str, object] = {name: _WORKER.get(name) for name in _FETCH_SETTINGS}


@dataclass(frozen=True, slots=True)
class Changelog:
    """A changelog topic to read, and the consumer settings to read it with."""

    kafka: KafkaSettings
    topic: str
    partitions: int
    extra: dict[str, object] = field(default_factory=lambda: dict(FAST_EOF_CONFIG))

    def consumer(self, group: str) -> Consumer:
        return Consumer(
            client_config(
                self.kafka,
                **{
                    "group.id": group,
                    "isolation.level": "read_committed",
                    "enable.auto.commit": False,
                    "enable.partition.eof": True,
                    "auto.offset.reset": "earliest",
                    **self.extra,
                },
            )
        )


@dataclass(frozen=True, slots=True)
class Restored:
    throughput: Throughput
    watermarks: int  # restored identities


def raw_consume(changelog: Changelog) -> Throughput:
    consumer = changelog.consumer("seqgate-bench-raw")
    records = 0
    try:
        started = time.perf_counter()
        for partition in range(changelog.partitions):
            records += _read_to_end(consumer, TopicPartition(changelog.topic, partition))
        seconds = time.perf_counter() - started
    finally:
        consumer.close()
    return Throughput(records, seconds)


def _read_to_end(consumer: Consumer, partition: TopicPartition) -> int:
    """Touch each record's key and value up to the end of `partition`; how many there were."""
    low, high = consumer.get_watermark_offsets(partition, 30)
    if high <= low:
        return 0
    consumer.assign([TopicPartition(partition.topic, partition.partition, low)])
    records = 0
    done = False
    while not done:
        messages = next_batch(consumer)  # as restore_partition reads
        for message in messages:
            error = message.error()
            if error is None:
                records += 1
                _ = (message.key(), message.value())
            elif error.code() == KafkaError._PARTITION_EOF:
                done = True
                break
            else:
                raise KafkaException(error)
    consumer.unassign()
    return records


def restore_all(changelog: Changelog, state_root: Path, input_topic: str) -> Restored:
    """Restore every partition into fresh stores under `state_root`; count the watermarks."""
    consumer = changelog.consumer("seqgate-bench-restore")
    directory = StateDirectory(state_root, input_topic)
    directory.wipe()
    records = 0
    stores = [directory.open(partition) for partition in range(changelog.partitions)]
    try:
        started = time.perf_counter()
        for partition, store in enumerate(stores):
            records += restore_partition(consumer, changelog.topic, partition, store)
        seconds = time.perf_counter() - started
        watermarks = sum(1 for store in stores for _ in store.watermarks())
    finally:
        consumer.close()
        for store in stores:
            store.close()
    return Restored(Throughput(records, seconds), watermarks)
