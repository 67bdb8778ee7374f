"""Bridge: parse + normalize + produce raw S3 notifications, against a raw produce.

The bridge path is `seqgate.connectors.parsers.normalize.normalize` then
`seqgate.connectors.publish.publisher.EventPublisher` (its idempotent producer, acks=all),
flushed until Kafka acknowledged everything. The raw path produces the same
notification bytes, keyed by the same identities, with a producer of the same
configuration and the same produce loop, minus the parsing and encoding.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass

from confluent_kafka import KafkaError, Message, Producer

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.publish.publisher import EventPublisher, Topics
from seqgate.streams.runtime.kafka_clients import client_config
from seqgate.streams.runtime.kafka_settings import KafkaSettings


@dataclass(frozen=True, slots=True)
class ProduceResult:
    records: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0


def bridge_publish(
    kafka: KafkaSettings, topics: Topics, notifications: Sequence[bytes]
) -> ProduceResult:
    publisher = EventPublisher(kafka, topics)
    try:
        started = time.perf_counter()
        for index, raw in enumerate(notifications):
            origin = f"bench:{index}"
            publisher.submit(normalize(raw, origin), raw, origin)
        publisher.flush()
        seconds = time.perf_counter() - started
    finally:
        publisher.close()
    published = publisher.counters.as_dict()["published"]
    if published != len(notifications):
        raise RuntimeError(f"the bridge published {published} of {len(notifications)} events")
    return ProduceResult(published, seconds)


def raw_produce(
    kafka: KafkaSettings, topic: str, records: Sequence[tuple[bytes, bytes]]
) -> ProduceResult:
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(error.str())

    producer = Producer(
        client_config(
            kafka,
            **{
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "partitioner": "murmur2_random",
            },
        )
    )
    started = time.perf_counter()
    for key, value in records:
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    remaining = producer.flush(60)
    seconds = time.perf_counter() - started
    if remaining or errors:
        raise RuntimeError(f"raw produce: {remaining} unacknowledged, errors {errors[:3]}")
    return ProduceResult(len(records), seconds)
