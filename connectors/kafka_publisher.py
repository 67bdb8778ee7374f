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

from confluent_kafka import KafkaError, Message, Producer

from connectors.identity import object_identity
from connectors.s3_native import ParseResult
from schemas.codec import OBJECT_EVENT, REJECTED_RECORD
from schemas.records import RejectedRecord


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


class EventPublisher:
    def __init__(
        self, bootstrap_servers: str, topics: Topics, extra_config: dict[str, str] | None = None
    ) -> None:
        self.topics = topics
        self.counters = BridgeCounters()
        self._errors: list[str] = []
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap_servers,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 5,
                "partitioner": "murmur2_random",
                **(extra_config or {}),
            }
        )

    def submit(self, result: ParseResult, raw: bytes, origin: str) -> None:
        """Queue the records of one message; `flush` confirms them."""
        for event in result.events:
            identity = object_identity(event.source, event.bucket, event.key)
            self._producer.produce(
                self.topics.events,
                key=identity.encode("utf-8"),
                value=OBJECT_EVENT.encode(event),
                on_delivery=self._on_delivery,
            )
            self._producer.poll(0)
        for rejection in result.rejections:
            record = RejectedRecord(
                raw=raw,
                origin=origin,
                reason=rejection.reason.value,
                message=rejection.message,
                record_index=rejection.record_index,
            )
            self._producer.produce(
                self.topics.rejected,
                key=origin.encode("utf-8"),
                value=REJECTED_RECORD.encode(record),
                on_delivery=self._on_delivery,
            )
        self.counters.add("published", len(result.events))
        self.counters.add("rejected", len(result.rejections))
        self.counters.add("ignored", len(result.ignored))

    def flush(self, timeout: float = 60.0) -> None:
        """Wait for every queued record; raise PublishError unless all were acknowledged."""
        remaining = self._producer.flush(timeout)
        if remaining:
            raise PublishError(
                f"{remaining} record(s) not acknowledged by Kafka within {timeout:.0f}s:"
                " is the broker reachable? (--bootstrap-servers)"
            )
        if self._errors:
            errors, self._errors = self._errors, []
            raise PublishError(
                f"Kafka refused {len(errors)} record(s): " + "; ".join(sorted(set(errors))[:3])
            )

    def close(self) -> None:
        """Flush what is queued, then release the producer's connections and threads."""
        try:
            self.flush()
        finally:
            self._producer.close()

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self._errors.append(f"{message.topic()}: {error.str()}")
