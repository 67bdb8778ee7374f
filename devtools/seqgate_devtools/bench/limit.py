"""The limit: a minimal confluent-kafka transactional pass-through.

Consume a batch (read_committed), produce each record unchanged, send the
offsets to the transaction and commit, with the worker's batch size, commit
count and commit interval. No decoding, no state: what the same clients and
transactions cost before the processor does any work.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from confluent_kafka import Consumer, TopicPartition

from seqgate.runtime.kafka_clients import group_consumer_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate_devtools.bench.produce import bridge_like_producer


@dataclass(frozen=True, slots=True)
class PassThroughConfig:
    kafka: KafkaSettings
    input_topic: str
    output_topic: str
    group_id: str
    transactional_id: str
    batch_size: int
    commit_every: int
    commit_interval_ms: int
    kafka_timeout_s: float = 30.0


@dataclass
class StageClock:
    """First record consumed and last commit, on the monotonic clock; records committed."""

    first_record: float | None = None
    last_commit: float | None = None
    committed: int = 0
    commits: int = 0


def run_pass_through(
    config: PassThroughConfig, stop: threading.Event, expect: int, clock: StageClock
) -> None:
    """Copy `input_topic` to `output_topic` transactionally until `expect` records
    are committed (or `stop` is set)."""
    consumer = Consumer(group_consumer_config(config.kafka, config.group_id))
    producer = bridge_like_producer(
        config.kafka, linger_ms=5, **{"transactional.id": config.transactional_id}
    )
    timeout = config.kafka_timeout_s
    interval = config.commit_interval_ms / 1000
    producer.init_transactions(timeout)
    consumer.subscribe([config.input_topic])
    in_transaction = False
    started = 0.0
    pending = 0
    offsets: dict[int, int] = {}
    try:
        while not stop.is_set() and (expect <= 0 or clock.committed < expect):
            wait = interval - (time.monotonic() - started) if in_transaction else interval
            messages = consumer.consume(config.batch_size, timeout=max(0.0, wait))
            for message in messages:
                if message.error() is not None:
                    continue
                if not in_transaction:
                    producer.begin_transaction()
                    in_transaction = True
                    started = time.monotonic()
                    if clock.first_record is None:
                        clock.first_record = started
                producer.produce(config.output_topic, key=message.key(), value=message.value())
                partition, offset = message.partition(), message.offset()
                assert partition is not None and offset is not None
                offsets[partition] = offset + 1
                pending += 1
            due = pending >= config.commit_every or time.monotonic() - started >= interval
            if in_transaction and due:
                producer.send_offsets_to_transaction(
                    [
                        TopicPartition(config.input_topic, partition, offset)
                        for partition, offset in sorted(offsets.items())
                    ],
                    consumer.consumer_group_metadata(),
                    timeout,
                )
                producer.commit_transaction(timeout)
                in_transaction = False
                clock.committed += pending
                clock.commits += 1
                clock.last_commit = time.monotonic()
                pending = 0
                offsets = {}
    finally:
        if in_transaction:
            producer.abort_transaction(timeout)
        consumer.close()
        producer.flush(timeout)
