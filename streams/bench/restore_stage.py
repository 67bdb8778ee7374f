"""Restore: rebuild a fresh store from the changelog, against a raw consume of it.

Both read every changelog partition from its start to the last stable offset
with a read_committed, group-less consumer. The restore goes through
`streams.restore.restore_partition` into fresh RocksDB stores (what a worker
does on assignment with an empty state directory); the raw consume only
touches each record's key and value. Both poll one record at a time.

By default both read with `fetch.wait.max.ms` = 10 ms, so the figures compare
the work per record. The worker's own restore consumer keeps librdkafka's
default (500 ms): the broker then holds the last fetch of every partition for
up to 500 ms before the end-of-partition event arrives. `WORKER_RESTORE_CONFIG`
({}) measures that too.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from streams.kafka_clients import client_config
from streams.restore import restore_partition
from streams.state_store import StateDirectory


@dataclass(frozen=True, slots=True)
class ReadResult:
    records: int
    seconds: float
    watermarks: int = 0  # restored identities (restore only)

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


FAST_EOF_CONFIG: dict[str, object] = {"fetch.wait.max.ms": 10}
WORKER_RESTORE_CONFIG: dict[str, object] = {}


def _consumer(bootstrap_servers: str, group: str, extra: dict[str, object]) -> Consumer:
    return Consumer(
        client_config(
            bootstrap_servers,
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
    bootstrap_servers: str,
    topic: str,
    partitions: int,
    extra: dict[str, object] = FAST_EOF_CONFIG,
) -> ReadResult:
    consumer = _consumer(bootstrap_servers, "seqgate-bench-raw", extra)
    records = 0
    try:
        started = time.perf_counter()
        for partition in range(partitions):
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 30)
            if high <= low:
                continue
            consumer.assign([TopicPartition(topic, partition, low)])
            while True:
                # poll, like restore_partition: a batch consume would wait out its
                # timeout at the end of each partition instead of returning at EOF.
                message = consumer.poll(30)
                if message is None:
                    raise RuntimeError(f"raw consume of {topic}[{partition}] stalled")
                error = message.error()
                if error is None:
                    records += 1
                    _ = (message.key(), message.value())
                elif error.code() == KafkaError._PARTITION_EOF:
                    break
                else:
                    raise KafkaException(error)
            consumer.unassign()
        seconds = time.perf_counter() - started
    finally:
        consumer.close()
    return ReadResult(records, seconds)


def restore_all(
    bootstrap_servers: str,
    topic: str,
    partitions: int,
    state_root: Path,
    input_topic: str,
    extra: dict[str, object] = FAST_EOF_CONFIG,
) -> ReadResult:
    """Restore every partition into fresh stores under `state_root`; count the watermarks."""
    consumer = _consumer(bootstrap_servers, "seqgate-bench-restore", extra)
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
