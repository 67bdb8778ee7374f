"""A raw Kafka topic as a source: exactly-once from the raw topic to `object-events`.

For notifications that a system writes straight to Kafka (MinIO's Kafka
target, EventBridge pipes, connectors). Each consumed batch is one Kafka
transaction: the normalized events (keyed by object identity, murmur2 like
every other producer of `object-events`), the dead letters, and the
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

import contextlib
import logging
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.s3.native import DEFAULT_S3_PARSE_OPTIONS, S3ParseOptions
from seqgate.connectors.publish.dead_letters import rejected_record
from seqgate.connectors.publish.filters import BridgeTally, EventFilter
from seqgate.connectors.publish.publisher import Topics
from seqgate.schemas.codec import OBJECT_EVENT, REJECTED_RECORD
from seqgate.schemas.identity import event_identity
from seqgate.streams.runtime.errors import CommandFailed
from seqgate.streams.runtime.faults import FaultInjector, FaultPoint
from seqgate.streams.runtime.kafka_clients import PartitionEnds, client_config, is_fatal
from seqgate.streams.runtime.kafka_settings import KafkaSettings
from seqgate.streams.runtime.transactions import (
    abort_if_open,
    close_producer,
    commit_transaction,
    flush,
    rewind_to_committed,
)

log = logging.getLogger(__name__)


class KafkaSourceFatalError(CommandFailed):
    """The bridge cannot go on; restarting it with the same settings would not help."""


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


def origin_of(message: Message) -> str:
    return f"kafka:{message.topic()}:{message.partition()}:{message.offset()}"


class KafkaSource:
    """Consume raw notifications, publish what they become, transactionally."""

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
        self._filter = event_filter or EventFilter()
        self._faults = faults or FaultInjector()
        self.tally = BridgeTally()
        self.commits = 0
        self.aborts = 0
        self._delivery_errors: list[KafkaError] = []
        self._ends = PartitionEnds(
            "the bridge (it resumes from the committed offsets)", KafkaSourceFatalError
        )
        self._in_transaction = False
        self._consumer = Consumer(
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
        self._producer = Producer(
            client_config(
                config.kafka,
                **{
                    "transactional.id": config.transactional_id,
                    "transaction.timeout.ms": config.transaction_timeout_ms,
                    "enable.idempotence": True,
                    "acks": "all",
                    "linger.ms": 5,
                    "partitioner": "murmur2_random",
                },
            )
        )

    def run(self, stop: threading.Event) -> None:
        """Until `stop` is set (or the idle exit): each batch one transaction; then close."""
        try:
            try:
                # Fences an earlier incarnation and aborts its open transaction.
                self._producer.init_transactions(self.config.kafka_timeout_s)
            except KafkaException as error:
                raise KafkaSourceFatalError(
                    f"init_transactions for transactional.id {self.config.transactional_id}"
                    f" failed: {error.args[0].str()}"
                ) from error
            self._consumer.subscribe(
                [self.config.source_topic],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_lost,
            )
            last_message = time.monotonic()
            while not stop.is_set():
                messages = self._consumer.consume(
                    self.config.batch_size, timeout=self.config.poll_timeout_s
                )
                records = [message for message in messages if self._ends.usable(message)]
                if not records:
                    if not self._drained():
                        last_message = time.monotonic()
                    elif time.monotonic() - last_message >= (self.config.idle_exit_seconds or 0):
                        return
                    continue
                last_message = time.monotonic()
                try:
                    self._transfer(records)
                except KafkaException as error:
                    self._recover(error)
        finally:
            self._close()

    def _drained(self) -> bool:
        """With the idle exit: partitions assigned, every one read to its end."""
        return self.config.idle_exit_seconds is not None and self._ends.drained()

    def _transfer(self, messages: list[Message]) -> None:
        """One transaction: the batch's events and dead letters, and its offsets."""
        self._producer.begin_transaction()
        self._in_transaction = True
        batch = BridgeTally()
        next_offsets: dict[tuple[str, int], int] = {}
        for message in messages:
            raw = message.value() or b""
            origin = origin_of(message)
            result, filtered = self._filter.apply(normalize(raw, origin, self._s3_options))
            timestamp = message.timestamp()[1]
            for event in result.events:
                identity = event_identity(event.source, event.bucket, event.key)
                self._produce(
                    self.config.topics.events,
                    identity.encode("utf-8"),
                    OBJECT_EVENT.encode(event),
                    timestamp,
                )
            for rejection in result.rejections:
                record = rejected_record(rejection, raw, origin)
                self._produce(
                    self.config.topics.rejected,
                    origin.encode("utf-8"),
                    REJECTED_RECORD.encode(record),
                    timestamp,
                )
            batch.add(result, filtered)
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            assert topic is not None and partition is not None and offset is not None
            next_offsets[(topic, partition)] = offset + 1
        self._faults.reach(FaultPoint.AFTER_STATE_UPDATE)
        timeout = self.config.kafka_timeout_s
        flush(self._producer, timeout)
        if self._delivery_errors:
            errors, self._delivery_errors = self._delivery_errors, []
            raise KafkaException(
                KafkaError(
                    KafkaError._STATE,
                    "delivery failed: " + "; ".join(error.str() for error in errors[:3]),
                    txn_requires_abort=True,
                )
            )
        offsets = [
            TopicPartition(topic, partition, offset)
            for (topic, partition), offset in sorted(next_offsets.items())
        ]
        self._producer.send_offsets_to_transaction(
            offsets, self._consumer.consumer_group_metadata(), timeout
        )
        self._faults.reach(FaultPoint.BEFORE_COMMIT)
        commit_transaction(self._producer, timeout)
        self._in_transaction = False
        self._faults.reach(FaultPoint.AFTER_COMMIT)
        self.tally.merge(batch)
        self.commits += 1

    def _produce(self, topic: str, key: bytes, value: bytes, timestamp: int) -> None:
        while True:
            try:
                self._producer.produce(
                    topic,
                    key=key,
                    value=value,
                    # The raw record's time, not the clock (0, when it has none, means
                    # now): the worker's dedupe window is measured in record time.
                    timestamp=max(timestamp, 0),
                    on_delivery=self._on_delivery,
                )
                return
            except BufferError:
                self._producer.poll(0.1)

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self._delivery_errors.append(error)

    def _recover(self, error: KafkaException) -> None:
        kafka_error = error.args[0]
        if is_fatal(kafka_error):
            raise KafkaSourceFatalError(self._describe_fatal(kafka_error)) from error
        # Abortable or retriable: nothing of this transaction is visible, so
        # aborting and reading again from the committed offsets is always safe.
        log.warning("transaction aborted", extra={"error": kafka_error.str()})
        self._abort_and_rewind()

    def _abort_and_rewind(self) -> None:
        self.aborts += 1
        self._delivery_errors = []
        try:
            self._producer.abort_transaction(self.config.kafka_timeout_s)
        except KafkaException as error:
            raise KafkaSourceFatalError(self._describe_fatal(error.args[0])) from error
        self._in_transaction = False
        self._ends.forget_ends()
        rewind_to_committed(self._consumer, self.config.kafka_timeout_s)

    def _describe_fatal(self, error: KafkaError) -> str:
        if error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED):
            return (
                f"bridge fenced: another instance took over transactional.id"
                f" {self.config.transactional_id}; give each bridge a distinct --transactional-id"
            )
        return f"fatal Kafka error: {error.str()}"

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._ends.assign(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Called inside consume(), between transactions: nothing is pending.
        self._ends.revoke(partitions)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # No transaction is open during consume(): nothing to abort.
        self._ends.revoke(partitions)
        log.warning("partitions lost", extra={"partitions": [tp.partition for tp in partitions]})

    def _close(self) -> None:
        abort_if_open(self._producer, self._in_transaction)
        self._in_transaction = False
        try:
            self._consumer.close()
        finally:
            with contextlib.suppress(KafkaException):
                self._producer.flush(0)
            close_producer(self._producer)
