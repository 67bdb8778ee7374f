"""Publishing normalized events and rejected records to Kafka (the bridge's output).

The producer is idempotent (acks=all, enable.idempotence) and partitions
with murmur2 on the object identity, the Java client's partitioner, so that
all events of one object land in one partition whoever produces them.

Every `submit` returns its own :class:`Delivery`, which counts the delivery
reports of that message's records only: a source that shares one flush among
many messages (the HTTP bridge) answers each message from its own records, so
one message's failure never fails another. A source that acknowledges all it
submitted at once uses `flush`, which raises unless every record since the
previous flush was acknowledged.

A failure to queue a message's records (an event that cannot be encoded is not
one: it becomes a rejected record, reason ``invalid_field``) fails that message
alone: its Delivery says why, and nothing more of it is queued.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException, Message, Producer

from seqgate.connectors.errors import LocalFailure, PublishError
from seqgate.connectors.parsers.compiled import (
    CleanRecords,
    compiled_clean_records,
    compiled_event_record,
)
from seqgate.connectors.parsers.results import ParsedItem, ParseResult
from seqgate.connectors.publish.rejections import rejected_record
from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.codec import OBJECT_EVENT, REJECTED_RECORD
from seqgate.schemas.errors import CodecError
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.identity import event_identity
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent


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
# How many deliveries the publisher keeps before it first drops the complete ones.
_PRUNE_MIN = 1024
# librdkafka's own default; the producer refuses a larger record before sending it.
DEFAULT_MAX_MESSAGE_BYTES = 1_000_000


@dataclass(eq=False)
class Delivery:
    """The delivery reports of the records of one submitted message, and only those.

    ``result`` is what was written: an event that could not be encoded is a dead
    letter there (reason ``invalid_field``), so counting from it counts what the
    topics hold.
    """

    result: ParseResult
    queued: int = 0
    acknowledged: int = 0
    refusals: list[str] = field(default_factory=list)
    local_error: str | None = None

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is None:
            self.acknowledged += 1
        else:
            self.refusals.append(f"{message.topic()}: {error.str()}")

    @property
    def settled(self) -> bool:
        """Every queued record has its delivery report."""
        return self.acknowledged + len(self.refusals) == self.queued

    @property
    def complete(self) -> bool:
        """Every record of the message was queued and acknowledged by Kafka."""
        return self.local_error is None and self.acknowledged == self.queued

    def problem(self) -> str:
        """Why the message is not complete (one line)."""
        if self.local_error is not None:
            return self.local_error
        if self.refusals:
            return f"Kafka refused {len(self.refusals)} record(s): " + "; ".join(
                sorted(set(self.refusals))[:3]
            )
        missing = self.queued - self.acknowledged
        return f"{missing} of {self.queued} record(s) not acknowledged by Kafka yet"


class EventPublisher:
    """Publishes what the normalizer made of each message.

    `delivery_timeout_ms` bounds how long Kafka may take to acknowledge a
    record (librdkafka's message.timeout.ms): past it the record counts as
    refused, `flush` raises, and the source must not be acknowledged.
    `engine` ``"compiled"`` writes events with the compiled core (the same bytes;
    :func:`~seqgate.connectors.parsers.compiled.compiled_event_writer`).
    """

    def __init__(
        self,
        kafka: KafkaSettings,
        topics: Topics,
        extra_config: dict[str, str] | None = None,
        *,
        delivery_timeout_ms: int = DEFAULT_DELIVERY_TIMEOUT_MS,
        framing: Framing = SINGLE_OBJECT,
        engine: str = "python",
    ) -> None:
        self.topics = topics
        # Through a schema registry, the schemas are registered here, before any input.
        self._encode_event = framing.writer(OBJECT_EVENT, topics.events)
        # (key, value) of an event: its identity and its encoding (the value first: the
        # encoding refuses what UTF-8 cannot hold, before the identity is built).
        self._event_record: Callable[[ObjectEvent], tuple[bytes, bytes]] = (
            compiled_event_record(framing, topics.events, self._python_event_record)
            if engine == "compiled"
            else self._python_event_record
        )
        self._clean_records: CleanRecords | None = (
            compiled_clean_records(framing, topics.events) if engine == "compiled" else None
        )
        # The one Delivery of the messages published by `publish_clean` since the last flush.
        self._shared: Delivery | None = None
        self._encode_rejected = framing.writer(REJECTED_RECORD, topics.rejected)
        self.counters = BridgeCounters()
        self.delivery_timeout_ms = delivery_timeout_ms
        config = {
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            "partitioner": "murmur2_random",
            "message.timeout.ms": delivery_timeout_ms,
            **(extra_config or {}),
        }
        extra = extra_config or {}
        self._max_message_bytes = int(extra.get("message.max.bytes", DEFAULT_MAX_MESSAGE_BYTES))
        # Submitted since the last flush and not known complete: what flush() reports on.
        self._watched: list[Delivery] = []
        self._prune_at = _PRUNE_MIN
        self._producer = Producer(client_config(kafka, **config))

    def submit(self, result: ParseResult, raw: bytes, origin: str) -> Delivery:
        """Queue the records of one message; its Delivery tells what became of them.

        Never raises for one message's trouble: an event that cannot be encoded
        becomes a rejected record; a record that cannot be queued (too large, the
        producer's queue full past the delivery timeout, ...) fails the message,
        recorded in its Delivery, and `flush` raises for it.
        """
        try:
            written, records, published, rejected = self._encode(result, raw, origin)
        except LocalFailure as error:
            delivery = Delivery(result, local_error=str(error))
            self._watched.append(delivery)
            return delivery
        delivery = Delivery(written)
        self._watch(delivery)
        try:
            for topic, key, value in records:
                self._produce(topic, key, value, delivery)
        except LocalFailure as error:
            delivery.local_error = str(error)
            return delivery
        counts = self.counters.counts
        counts["published"] += published
        counts["rejected"] += rejected
        counts["ignored"] += len(written.items) - published - rejected
        return delivery

    def publish_clean(self, raw: bytes, origin: str, schema_floor: str) -> bool:
        """Queue the events of ``raw`` when the compiled core reads it as clean native S3
        notifications and writes every one: the records `submit` would queue for
        ``normalize``'s result (the same bytes: tests/unit/test_compiled_bridge.py), without
        the Python objects in between. False, with nothing queued, for anything else: the
        caller normalizes and submits it.

        For sources that `flush` acknowledges as a whole (a file): these messages share one
        Delivery until the next flush, which raises as for any other message when one of
        their records is refused or cannot be queued.
        """
        if self._clean_records is None:
            return False
        records = self._clean_records(raw, origin, schema_floor)
        if records is None:
            return False
        limit = self._max_message_bytes
        for key, value in records:
            if len(key) + len(value) > limit:
                return False  # `submit` says which record, and fails the message
        shared = self._shared
        if shared is None:
            shared = self._shared = Delivery(ParseResult(()))
        topic = self.topics.events
        try:
            for key, value in records:
                self._produce(topic, key, value, shared)
        except LocalFailure as error:
            # This message's failure, counted apart: flush() says how many failed, and why.
            self._watched.append(Delivery(ParseResult(()), local_error=str(error)))
            return True
        self.counters.counts["published"] += len(records)
        return True

    def _watch(self, delivery: Delivery) -> None:
        """Keep ``delivery`` for flush(), dropping (amortised) those already complete:
        a source that flushes rarely (a large file) keeps only what is in flight, and
        the garbage collector does not walk every message since the last flush (it cost
        the bridge a third of its throughput in `seqgate bench`)."""
        watched = self._watched
        watched.append(delivery)
        if len(watched) >= self._prune_at:
            self._watched = [d for d in watched if not d.complete]
            self._prune_at = max(_PRUNE_MIN, 2 * len(self._watched))

    def _encode(
        self, result: ParseResult, raw: bytes, origin: str
    ) -> tuple[ParseResult, list[tuple[str, bytes, bytes]], int, int]:
        """Encode every record before any is queued: (the result as written, the records,
        how many events and rejected records they are)."""
        items: list[ParsedItem] = []
        records: list[tuple[str, bytes, bytes]] = []
        changed = False
        published = rejected = 0
        events_topic = self.topics.events
        for index, item in enumerate(result.items):
            if isinstance(item, ObjectEvent):
                try:
                    key, value = self._event_record(item)
                    records.append((events_topic, key, value))
                    published += 1
                    items.append(item)
                    continue
                except CodecError as error:
                    changed = True
                    item = Rejection(
                        RejectReason.INVALID_FIELD,
                        f"the event cannot be written to Kafka: {error}",
                        index,
                    )
            if isinstance(item, Rejection):
                records.append(self._reject(item, raw, origin))
                rejected += 1
            items.append(item)
        limit = self._max_message_bytes
        for topic, key, value in records:
            if len(key) + len(value) > limit:
                raise LocalFailure(
                    f"a record for {topic} is {len(key) + len(value)} bytes, above the"
                    f" producer's message.max.bytes ({limit})"
                )
        return (ParseResult(tuple(items)) if changed else result), records, published, rejected

    def _python_event_record(self, event: ObjectEvent) -> tuple[bytes, bytes]:
        value = self._encode_event(event)  # first: it refuses what UTF-8 cannot hold
        key = event_identity(event.source, event.bucket, event.key).encode("utf-8")
        return key, value

    def _reject(self, rejection: Rejection, raw: bytes, origin: str) -> tuple[str, bytes, bytes]:
        record = rejected_record(rejection, raw, origin)
        try:
            value = self._encode_rejected(record)
        except CodecError as error:
            raise LocalFailure(f"a rejected record cannot be written to Kafka: {error}") from error
        return self.topics.rejected, record.origin.encode("utf-8"), value

    def _produce(self, topic: str, key: bytes, value: bytes, delivery: Delivery) -> None:
        deadline: float | None = None  # set when the queue is first found full
        while True:
            try:
                self._producer.produce(
                    topic, key=key, value=value, on_delivery=delivery.on_delivery
                )
                break
            except BufferError:
                # The local queue is full: wait for deliveries (or their
                # timeouts) to make room rather than fail the whole input.
                if deadline is None:
                    deadline = time.monotonic() + self.delivery_timeout_ms / 1000 + 5
                elif time.monotonic() > deadline:
                    raise LocalFailure(
                        "the producer's queue stayed full past the delivery timeout"
                    ) from None
                self._producer.poll(0.1)
            except KafkaException as error:
                raise LocalFailure(f"the producer refused a record for {topic}: {error}") from error
        delivery.queued += 1
        self._producer.poll(0)

    def settle(self, timeout: float | None = None) -> int:
        """Wait for the delivery reports of everything queued (each lands in its
        message's Delivery); the number of records still without one."""
        if timeout is None:
            timeout = self.delivery_timeout_ms / 1000 + 5
        remaining = int(self._producer.flush(timeout))
        self._watched = [delivery for delivery in self._watched if not delivery.settled]
        return remaining

    def flush(self, timeout: float | None = None) -> None:
        """Wait for every queued record; raise PublishError unless every record
        submitted since the previous flush was acknowledged.

        By default waits a little longer than the delivery timeout, so that
        every record has either been acknowledged or reported as failed.
        """
        if timeout is None:
            timeout = self.delivery_timeout_ms / 1000 + 5
        watched = self._watched
        if self._shared is not None:
            watched.append(self._shared)
            self._shared = None
        remaining = self.settle(timeout)
        self._watched = []
        if remaining:
            raise PublishError(
                f"{remaining} record(s) not acknowledged by Kafka within {timeout:.0f}s:"
                " is the broker reachable? (--bootstrap-servers)"
            )
        refusals = [refusal for delivery in watched for refusal in delivery.refusals]
        if refusals:
            raise PublishError(
                f"Kafka refused {len(refusals)} record(s): "
                + "; ".join(sorted(set(refusals))[:3])
                + " — is the broker reachable? (--bootstrap-servers)"
            )
        local = [delivery.local_error for delivery in watched if delivery.local_error]
        if local:
            raise PublishError(f"{len(local)} message(s) could not be queued: {local[0]}")

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
