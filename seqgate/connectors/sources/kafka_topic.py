"""A raw Kafka topic as a source: exactly-once from the raw topic to `object-events`.

For notifications that a system writes straight to Kafka (MinIO's Kafka
target, EventBridge pipes, connectors). Each consumed batch is one Kafka
transaction: the normalized events (keyed by object identity, murmur2 like
every other producer of `object-events`), the rejected records, and the
consumed offsets (``send_offsets_to_transaction``) commit or abort together.
A crash at any point leaves either the whole batch (output and offsets) or
none of it, so a `read_committed` reader sees every raw record's events
exactly once.

* consumer: ``read_committed``, no auto commit, static membership
  (``group.instance.id`` = the transactional id), so a restarted instance
  takes its partitions back without waiting for a session timeout;
* producer: transactional, with a stable ``transactional.id``; a restarted
  instance fences its dead predecessor and aborts its open transaction;
* an abortable error aborts the transaction and seeks back to the committed
  offsets (the batch is read again); a fatal one (fenced by another live
  instance, ...) raises KafkaSourceFatalError.

Origin of every record: ``kafka:<topic>:<partition>:<offset>``.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

from seqgate.connectors.errors import KafkaSourceFatalError
from seqgate.connectors.parsers.compiled import compiled_event_writer
from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.s3.native import DEFAULT_S3_PARSE_OPTIONS, S3ParseOptions
from seqgate.connectors.publish.filters import BridgeTally, EventFilter
from seqgate.connectors.publish.publisher import Topics
from seqgate.connectors.publish.rejections import rejected_record
from seqgate.runtime.faults import FaultInjector, FaultPoint
from seqgate.runtime.kafka_clients import PartitionEnds, ProducerSettings, client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.record_batches import RecordBatches
from seqgate.runtime.session import TransactionalSession
from seqgate.runtime.transaction_failures import SessionRole
from seqgate.schemas.codec import OBJECT_EVENT, REJECTED_RECORD
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.identity import event_identity

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class KafkaSourceConfig:
    kafka: KafkaSettings
    source_topic: str
    group_id: str
    transactional_id: str
    topics: Topics = field(default_factory=Topics)
    batch_size: int = 500
    poll_timeout_s: float = 0.5
    transaction_timeout_ms: int = 60_000
    session_timeout_ms: int = 45_000
    kafka_timeout_s: float = 30.0
    idle_exit_seconds: float | None = None  # stop once drained and idle this long
    framing: Framing = SINGLE_OBJECT


def origin_of(message: Message) -> str:
    return f"kafka:{message.topic()}:{message.partition()}:{message.offset()}"


def _consumer(config: KafkaSourceConfig) -> Consumer:
    return Consumer(
        client_config(
            config.kafka,
            **{
                "group.id": config.group_id,
                "group.instance.id": config.transactional_id,
                "session.timeout.ms": config.session_timeout_ms,
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                # End-of-partition events tell the idle exit the topic is drained.
                "enable.partition.eof": config.idle_exit_seconds is not None,
            },
        )
    )


class KafkaSource:
    """Consume raw notifications, publish what they become, transactionally: a transform
    on the same `TransactionalSession` as the worker."""

    def __init__(
        self,
        config: KafkaSourceConfig,
        event_filter: EventFilter | None = None,
        *,
        faults: FaultInjector | None = None,
        s3_options: S3ParseOptions = DEFAULT_S3_PARSE_OPTIONS,
    ) -> None:
        self.config = config
        self._s3_options = s3_options
        # Through a schema registry, the schemas are registered here, before any input.
        self._encode_event = (
            compiled_event_writer(config.framing, config.topics.events)
            if s3_options.engine == "compiled"
            else config.framing.writer(OBJECT_EVENT, config.topics.events)
        )
        self._encode_rejected = config.framing.writer(REJECTED_RECORD, config.topics.rejected)
        self._filter = event_filter or EventFilter()
        self._faults = faults or FaultInjector()
        self.tally = BridgeTally()
        self.commits = 0
        self.aborts = 0
        self._ends = PartitionEnds(
            "the bridge (it resumes from the committed offsets)", KafkaSourceFatalError
        )
        self._consumer = _consumer(config)
        self._session = TransactionalSession(
            # The session makes the producer: idempotent, every replica, murmur2 like every
            # other producer of `object-events` (kafka_clients.transactional_producer_config).
            ProducerSettings(config.kafka),
            SessionRole(
                "bridge",
                config.transactional_id,
                "--transactional-id",
                config.transaction_timeout_ms,
            ),
            timeout_s=config.kafka_timeout_s,
            failed=KafkaSourceFatalError,
            consumer=self._consumer,
            faults=self._faults,
        )

    def run(self, stop: threading.Event) -> None:
        """Until `stop` is set (or the idle exit): each batch one transaction; then close."""
        try:
            self._session.init()
            self._consumer.subscribe(
                [self.config.source_topic],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            batches = RecordBatches.of(self._consumer, self._ends, self.config)
            while not stop.is_set():
                records = batches.next_batch()
                if records is None:
                    return
                if records:
                    self._transfer(records)
        finally:
            self._session.close(flush_timeout_s=0)

    def _transfer(self, messages: list[Message]) -> None:
        """One transaction: the batch's events and rejected records, and its offsets."""
        session = self._session
        try:
            session.begin()
            batch, offsets = self._transform(messages)
            self._faults.reach(FaultPoint.AFTER_STATE_UPDATE)
            session.commit(offsets)
        except KafkaException as error:
            session.raise_if_fatal(error)
            # Abortable or retriable: nothing of this transaction is visible, so
            # aborting and reading again from the committed offsets is always safe.
            log.warning("transaction aborted", extra={"error": error.args[0].str()})
            self.aborts += 1
            session.abort_and_rewind()
            self._ends.forget_ends()
            return
        self.tally.merge(batch)
        self.commits += 1

    def _transform(self, messages: list[Message]) -> tuple[BridgeTally, list[TopicPartition]]:
        """Produce what each raw record becomes; the batch's tally and its input offsets."""
        batch = BridgeTally()
        next_offsets: dict[tuple[str, int], int] = {}
        encode_event, encode_rejected = self._encode_event, self._encode_rejected
        for message in messages:
            raw = message.value() or b""
            origin = origin_of(message)
            result, filtered = self._filter.apply(normalize(raw, origin, self._s3_options))
            # The raw record's time, not the clock (0, when it has none, means now): the
            # worker's dedupe window is measured in record time.
            timestamp = max(message.timestamp()[1], 0)
            for event in result.events:
                identity = event_identity(event.source, event.bucket, event.key)
                self._produce(self.config.topics.events, identity, encode_event(event), timestamp)
            for rejection in result.rejections:
                record = rejected_record(rejection, raw, origin)
                self._produce(
                    self.config.topics.rejected, origin, encode_rejected(record), timestamp
                )
            batch.add(result, filtered)
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            assert topic is not None and partition is not None and offset is not None
            next_offsets[(topic, partition)] = offset + 1
        offsets = [
            TopicPartition(topic, partition, offset)
            for (topic, partition), offset in sorted(next_offsets.items())
        ]
        return batch, offsets

    def _produce(self, topic: str, key: str, value: bytes, timestamp: int) -> None:
        session = self._session
        session.produce(
            topic,
            value,
            key=key.encode("utf-8"),
            timestamp=timestamp,
            on_delivery=session.on_delivery,
        )

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._ends.assign(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Called inside consume(), between transactions: nothing is pending.
        self._ends.revoke(partitions)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # No transaction is open during consume(): nothing to abort.
        self._ends.revoke(partitions)
        log.warning("partitions lost", extra={"partitions": [tp.partition for tp in partitions]})
