"""Restore: rebuild a fresh store from the changelog, against a raw consume of it.

Both read every changelog partition from its start to the last stable offset
with a read_committed, group-less consumer. The restore goes through
`seqgate.streams.state.restore.restore_partition` into fresh RocksDB stores (what a worker
does on assignment with an empty state directory); the raw consume only
touches each record's key and value. Both read in batches of up to 1,000
(`seqgate.streams.state.restore.next_batch`).

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
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from seqgate.streams.runtime.kafka_clients import client_config
from seqgate.streams.runtime.kafka_settings import KafkaSettings
from seqgate.streams.state.restore import next_batch, restore_consumer_config, restore_partition
from seqgate.streams.state.store import StateDirectory


@dataclass(frozen=True, slots=True)
class ReadResult:
    records: int
    seconds: float
    watermarks: int = 0  # restored identities (restore only)

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


_FETCH_SETTINGS = ("fetch.wait.max.ms", "fetch.queue.backoff.ms")
FAST_EOF_CONFIG: dict[str, object] = {"fetch.wait.max.ms": 10, "fetch.queue.backoff.ms": 10}
_WORKER = restore_consumer_config(KafkaSettings("unused:9092"), "unused")
WORKER_RESTORE_CONFIG: dict[str, object] = {name: _WORKER.get(name) for name in _FETCH_SETTINGS}


def _consumer(kafka: KafkaSettings, group: str, extra: dict[str, object]) -> Consumer:
    return Consumer(
        client_config(
            kafka,
            **{
                "group.id": group,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                **extra,
            },
        )
    )


def raw_consume(
    kafka: KafkaSettings,
    topic: str,
    partitions: int,
    extra: dict[str, object] = FAST_EOF_CONFIG,
) -> ReadResult:
    consumer = _consumer(kafka, "seqgate-bench-raw", extra)
    records = 0
    try:
        started = time.perf_counter()
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 30)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, partition, low)])
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
        seconds = time.perf_counter() - started
    finally:
        consumer.close()
    return ReadResult(records, seconds)


def restore_all(
    kafka: KafkaSettings,
    topic: str,
    partitions: int,
    state_root: Path,
    input_topic: str,
    extra: dict[str, object] = FAST_EOF_CONFIG,
) -> ReadResult:
    """Restore every partition into fresh stores under `state_root`; count the watermarks."""
    consumer = _consumer(kafka, "seqgate-bench-restore", extra)
    directory = StateDirectory(state_root, input_topic)
    directory.wipe()
    records = 0
    stores = [directory.open(partition) for partition in range(partitions)]
    try:
        started = time.perf_counter()
        for partition, store in enumerate(stores):
            records += restore_partition(consumer, topic, partition, store)
        seconds = time.perf_counter() - started
        watermarks = sum(1 for store in stores for _ in store.watermarks())
    finally:
        consumer.close()
        for store in stores:
            store.close()
    return ReadResult(records, seconds, watermarks)
