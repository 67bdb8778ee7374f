"""The bench's producers: configured like the bridge's, producing through a full queue.

Every producer of the bench (the pre-load, the raw produce the bridge is compared with, the
latency stage's paced input and the limit's transactional copy) is idempotent with acks=all
and the murmur2 partitioner, like `seqgate.connectors.publish.publisher.EventPublisher`, so
that the figures differ only by what each stage does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from confluent_kafka import KafkaError, Message, Producer

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings

__all__ = ["DeliveryErrors", "bridge_like_producer", "produce_waiting"]

OnDelivery = Callable[[KafkaError | None, Message], None]


def bridge_like_producer(kafka: KafkaSettings, *, linger_ms: int, **extra: Any) -> Producer:
    """A producer configured like the bridge's, lingering `linger_ms`, plus `extra` settings."""
    return Producer(
        client_config(
            kafka,
            **{
                **extra,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": linger_ms,
                "partitioner": "murmur2_random",
            },
        )
    )


class DeliveryErrors:
    """A delivery callback that keeps the failed deliveries' messages."""

    def __init__(self) -> None:
        self.errors: list[str] = []

    def __call__(self, error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            self.errors.append(error.str())


def produce_waiting(
    producer: Producer,
    topic: str,
    key: bytes,
    value: bytes,
    on_delivery: OnDelivery,
    *,
    poll_s: float,
) -> None:
    """Produce one record; while the local queue is full, serve delivery reports for `poll_s`."""
    while True:
        try:
            producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
            return
        except BufferError:
            producer.poll(poll_s)
