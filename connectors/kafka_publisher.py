"""Publishing normalized events and dead letters to Kafka (the bridge's output).

The producer is idempotent (acks=all, enable.idempotence) and partitions
with murmur2 on the object identity, the Java client's partitioner, so that
all events of one object land in one partition whoever produces them.
A source is acknowledged only after `flush` has returned and every delivery
report is a success: `publish` raises otherwise.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from connectors.identity import event_identity
from connectors.results import ParseResult
from schemas.codec import OBJECT_EVENT, REJECTED_RECORD
from schemas.records import RejectedRecord
from streams.kafka_clients import client_config


class PublishError(Exception):
    """Kafka did not acknowledge everything: the source must not be acknowledged."""


@dataclass
class BridgeCounters:
    """What became of each input record at the bridge."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, outcome: str, count: int = 1) -> None:
        self.counts[outcome] += count

    def as_dict(self) -> dict[str, int]:
        return {name: self.counts[name] for name in ("published", "ignored", "rejected")}


@dataclass(frozen=True, slots=True)
class Topics:
    events: str = "object-events"
    rejected: str = "object-events.rejected"


DEFAULT_DELIVERY_TIMEOUT_MS = 30_000


class EventPublisher:
    """Publishes what the normalizer made of each message.

    `delivery_timeout_ms` bounds how long Kafka may take to acknowledge a
    record (librdkafka's message.timeout.ms): past it the record counts as
    refused, `flush` raises, and the source must not be acknowledged.
    """

    def __init__(
        self,
        bootstrap_servers: str,
        topics: Topics,
        extra_config: dict[str, str] | None = None,
        *,
        delivery_timeout_ms: int = DEFAULT_DELIVERY_TIMEOUT_MS,
    ) -> None:
        self.topics = topics
        self.counters = BridgeCounters()
        self.delivery_timeout_ms = delivery_timeout_ms
        self._errors: list[str] = []
        self._producer = Producer(
            client_config(
                bootstrap_servers,
                **{
                    "enable.idempotence": True,
                    "acks": "all",
                    "linger.ms": 5,
                    "partitioner": "murmur2_random",
                    "message.timeout.ms": delivery_timeout_ms,
                    **(extra_config or {}),
                },
            )
        )

    def submit(self, result: ParseResult, raw: bytes, origin: str) -> None:
        """Queue the records of one message; `flush` confirms them."""
        for event in result.events:
            identity = event_identity(event.source, event.bucket, event.key)
            self._produce(self.topics.events, identity.encode("utf-8"), OBJECT_EVENT.encode(event))
        for rejection in result.rejections:
            record = RejectedRecord(
                raw=raw,
                origin=origin,
                reason=rejection.reason.value,
                message=rejection.message,
                record_index=rejection.record_index,
            )
            self._produce(
                self.topics.rejected, origin.encode("utf-8"), REJECTED_RECORD.encode(record)
            )
        self.counters.add("published", len(result.events))
        self.counters.add("rejected", len(result.rejections))
        self.counters.add("ignored", len(result.ignored))

    def _produce(self, topic: str, key: bytes, value: bytes) -> None:
        while True:
            try:
                self._producer.produce(topic, key=key, value=value, on_delivery=self._on_delivery)
                break
            except BufferError:
                # The local queue is full: wait for deliveries (or their
                # timeouts) to make room rather than fail the whole input.
                self._producer.poll(0.1)
        self._producer.poll(0)

    def flush(self, timeout: float | None = None) -> None:
        """Wait for every queued record; raise PublishError unless all were acknowledged.

        By default waits a little longer than the delivery timeout, so that
        every record has either been acknowledged or reported as failed.
        """
        if timeout is None:
            timeout = self.delivery_timeout_ms / 1000 + 5
        remaining = self._producer.flush(timeout)
        if remaining:
            raise PublishError(
                f"{remaining} record(s) not acknowledged by Kafka within {timeout:.0f}s:"
                " is the broker reachable? (--bootstrap-servers)"
            )
        if self._errors:
            errors, self._errors = self._errors, []
            raise PublishError(
                f"Kafka refused {len(errors)} record(s): "
                + "; ".join(sorted(set(errors))[:3])
                + " — is the broker reachable? (--bootstrap-servers)"
            )

    def reachable(self, timeout: float = 5.0) -> bool:
        """Whether the producer gets an answer from the cluster (a metadata request);
        for readiness probes."""
        try:
            self._producer.list_topics(timeout=timeout)
        except KafkaException:
            return False
        return True

    def close(self) -> None:
        """Flush what is queued, then release the producer's connections and threads.

        On failure the records still queued are purged, so closing never
        waits for them: they were not acknowledged and PublishError says so.
        """
        try:
            self.flush()
        except PublishError:
            self._producer.purge()
            self._producer.flush(0)
            raise
        finally:
            self._producer.close()

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self._errors.append(f"{message.topic()}: {error.str()}")
