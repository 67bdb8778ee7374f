"""The outbox dispatcher's loop: consume, apply to the destination, then commit.

At least once into an idempotent destination:

1. consume a batch of the outbox with ``read_committed`` (only what the workers
   committed) and manual offset commits;
2. compute each record's version key (`seqgate.streams.dispatch.keys`) and apply the
   batch to the destination (`seqgate.streams.dispatch.destinations`), which keeps per
   identity only the newest version; a record it refuses for good, one that
   cannot be decoded and one without a valid version are rejected (a
   `RejectedRecord` with the exact outbox bytes and the reason) and confirmed
   once Kafka acknowledged the rejected record;
3. only when every record of the batch is confirmed, commit the offsets.

A crash between 2 and 3 redelivers the batch: each record then meets a
destination that already holds it (a ``duplicate``) or something newer
(``superseded``), so the redelivery changes nothing. Transient failures
(destination down, locked, 5xx) are retried with exponential backoff up to
``retry_max_s`` between attempts, then forever at that pace, logging each
failure; SIGTERM interrupts the wait and exits without committing the batch.
"""

from __future__ import annotations

import functools
import logging
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from seqgate.runtime.kafka_clients import (
    PartitionEnds,
    client_config,
    group_consumer_config,
)
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.record_batches import RecordBatches
from seqgate.runtime.topics import TopicSpec, create_topics
from seqgate.schemas.codec import OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.errors import CodecError
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.identity import event_identity
from seqgate.schemas.records import RejectedRecord
from seqgate.streams.dispatch.destinations import Destination, Item, Outcome, Result
from seqgate.streams.dispatch.keys import version_key
from seqgate.streams.errors import DispatchError, InvalidVersion, TransientError
from seqgate.streams.rules.policy import Policy

__all__ = [
    "AFTER_APPLY",
    "DispatchConfig",
    "DispatchCounters",
    "Dispatcher",
    "fault_from_env",
]

log = logging.getLogger("seqgate.dispatch")

AFTER_APPLY = "after_apply"
"""Fault point: the destination confirmed the batch, its offsets are not committed yet."""
FAULT_POINTS = (AFTER_APPLY,)

FaultHook = Callable[[str], None]


def fault_from_env(value: str | None) -> FaultHook:
    """``SEQGATE_DISPATCH_FAULT=kill:after_apply[:<skip>]``: SIGKILL this process the
    (skip+1)-th time the point is reached. For crash tests only."""
    if not value:
        return lambda point: None
    parts = value.split(":")
    if len(parts) not in (2, 3) or parts[0] != "kill" or parts[1] not in FAULT_POINTS:
        raise ValueError(
            f"SEQGATE_DISPATCH_FAULT={value!r}: expected kill:<point>[:<skip count>],"
            f" point one of {', '.join(FAULT_POINTS)}"
        )
    remaining = [int(parts[2]) if len(parts) == 3 else 0]

    def hook(point: str) -> None:
        if point == parts[1]:
            if remaining[0] <= 0:
                os.kill(os.getpid(), signal.SIGKILL)
            remaining[0] -= 1

    return hook


@dataclass(frozen=True)
class DispatchConfig:
    kafka: KafkaSettings
    outbox_topic: str
    group_id: str
    rejected_topic: str
    policy: Policy
    batch_size: int = 200
    idle_exit_seconds: float | None = None
    retry_initial_s: float = 0.2
    retry_max_s: float = 30.0
    session_timeout_ms: int = 45_000
    poll_timeout_s: float = 0.5
    kafka_timeout_s: float = 30.0
    framing: Framing = SINGLE_OBJECT  # reads both encodings; writes the rejected records


@dataclass
class DispatchCounters:
    consumed: int = 0
    applied: int = 0
    superseded: int = 0
    duplicate: int = 0
    rejected: int = 0
    rejected_reasons: dict[str, int] = field(default_factory=dict)
    retries: int = 0
    commits: int = 0
    commit_failures: int = 0

    def add(self, result: Result) -> None:
        if result.outcome is Outcome.APPLIED:
            self.applied += 1
        elif result.outcome is Outcome.SUPERSEDED:
            self.superseded += 1
        elif result.outcome is Outcome.DUPLICATE:
            self.duplicate += 1
        else:
            self.rejected += 1
            self.rejected_reasons[result.reason] = self.rejected_reasons.get(result.reason, 0) + 1

    def as_dict(self) -> dict[str, Any]:
        fields = asdict(self)
        fields["rejected_reasons"] = dict(sorted(self.rejected_reasons.items()))
        return fields


@dataclass
class _Entry:
    """One consumed record on its way through a batch."""

    message: Message
    item: Item | None = None
    result: Result | None = None


class Dispatcher:
    def __init__(
        self,
        config: DispatchConfig,
        destination: Destination,
        *,
        fault: FaultHook | None = None,
        on_batch: Callable[[list[Result]], None] | None = None,
    ) -> None:
        self.config = config
        self.destination = destination
        self.counters = DispatchCounters()
        self._decode_outbox = functools.partial(config.framing.decode, OUTBOX_RECORD)
        self._encode_rejected = config.framing.writer(REJECTED_RECORD, config.rejected_topic)
        self._fault = fault or (lambda point: None)
        self._on_batch = on_batch
        self._ends = PartitionEnds(
            "the dispatcher (it resumes from the committed offsets)", DispatchError
        )
        self._delivery_errors: list[str] = []
        self._consumer: Consumer | None = None
        self._producer: Producer | None = None

    # ---- setup -----------------------------------------------------------------------------

    def _prepare_topics(self) -> None:
        config = self.config
        admin = AdminClient(client_config(config.kafka))
        try:
            topics = admin.list_topics(timeout=config.kafka_timeout_s).topics
        except KafkaException as error:
            raise DispatchError(
                f"cannot reach Kafka at {config.kafka.bootstrap_servers}: {error.args[0].str()}"
            ) from error
        outbox = topics.get(config.outbox_topic)
        if outbox is None or outbox.error is not None:
            raise DispatchError(
                f"outbox topic {config.outbox_topic} does not exist"
                " (create it with `seqgate topics create`)"
            )
        if config.rejected_topic not in topics:
            spec = TopicSpec(config.rejected_topic, len(outbox.partitions))
            create_topics(admin, [spec], replication_factor=-1, timeout=config.kafka_timeout_s)
            log.info("created the rejected topic", extra={"topic": config.rejected_topic})

    def _clients(self) -> tuple[Consumer, Producer]:
        config = self.config
        consumer = Consumer(
            group_consumer_config(
                config.kafka,
                config.group_id,
                **{
                    "session.timeout.ms": config.session_timeout_ms,
                    # End-of-partition events tell the idle exit the outbox is drained.
                    "enable.partition.eof": config.idle_exit_seconds is not None,
                },
            )
        )
        producer = Producer(
            client_config(
                config.kafka,
                **{"enable.idempotence": True, "acks": "all", "partitioner": "murmur2_random"},
            )
        )
        return consumer, producer

    # ---- the loop --------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Until `stop` is set (or the idle exit). Raises DispatchError when it cannot start."""
        try:
            self._prepare_topics()
        except BaseException:
            self.destination.close()
            raise
        consumer, producer = self._clients()
        self._consumer, self._producer = consumer, producer
        try:
            consumer.subscribe(
                [self.config.outbox_topic],
                on_assign=self._on_assign,
                on_revoke=self._on_revoke,
                on_lost=self._on_revoke,
            )
            batches = RecordBatches.of(consumer, self._ends, self.config)
            while not stop.is_set():
                usable = batches.next_batch()
                if usable is None:
                    return
                if not usable:
                    continue
                if not self._dispatch(usable, stop):
                    return  # stopped before the destination confirmed: nothing committed
                self._fault(AFTER_APPLY)
                self._commit(consumer, usable)
        finally:
            consumer.close()
            producer.flush(self.config.kafka_timeout_s)
            self.destination.close()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._ends.assign(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Nothing is in flight here: callbacks run inside consume(), between batches.
        self._ends.revoke(partitions)

    # ---- one batch -------------------------------------------------------------------------

    def _dispatch(self, messages: list[Message], stop: threading.Event) -> bool:
        """Apply one batch and send what the destination rejected to the rejected topic;
        False when `stop` came before confirmation."""
        entries = [self._prepare(message) for message in messages]
        pending = [entry for entry in entries if entry.result is None]
        attempt = 0
        while pending:
            try:
                results = self.destination.apply([entry.item for entry in pending if entry.item])
            except TransientError as error:
                for entry, result in zip(pending, error.done, strict=False):
                    entry.result = result
                pending = pending[len(error.done) :]
                attempt += 1
                if not self._backoff(attempt, f"destination: {error}", stop):
                    return False
                continue
            for entry, result in zip(pending, results, strict=True):
                entry.result = result
            pending = []
        rejected = [
            entry for entry in entries if entry.result and entry.result.outcome is Outcome.REJECTED
        ]
        attempt = 0
        while rejected and not self._reject(rejected):
            attempt += 1
            if not self._backoff(
                attempt, "rejected topic: " + "; ".join(self._delivery_errors[:3]), stop
            ):
                return False
        results = [entry.result for entry in entries if entry.result is not None]
        self.counters.consumed += len(entries)
        for result in results:
            self.counters.add(result)
        if self._on_batch is not None:
            self._on_batch(results)
        return True

    def _prepare(self, message: Message) -> _Entry:
        entry = _Entry(message)
        try:
            record = self._decode_outbox(message.value() or b"")
        except CodecError as error:
            entry.result = Result(Outcome.REJECTED, "undecodable_record", str(error))
            return entry
        event = record.event
        try:
            identity = event_identity(event.source, event.bucket, event.key)
        except ValueError as error:
            entry.result = Result(Outcome.REJECTED, "invalid_identity", str(error))
            return entry
        try:
            key = version_key(record, self.config.policy)
        except InvalidVersion as error:
            entry.result = Result(Outcome.REJECTED, "invalid_position", str(error))
            return entry
        entry.item = Item(identity, key, record)
        return entry

    def _backoff(self, attempt: int, problem: str, stop: threading.Event) -> bool:
        """Wait before the next attempt; False if `stop` was set meanwhile."""
        config = self.config
        delay = min(config.retry_max_s, config.retry_initial_s * 2 ** (attempt - 1))
        self.counters.retries += 1
        level = logging.ERROR if delay >= config.retry_max_s else logging.WARNING
        log.log(
            level,
            "not confirmed, retrying",
            extra={"problem": problem, "attempt": attempt, "retry_in_s": round(delay, 3)},
        )
        return not stop.wait(delay)

    def _reject(self, entries: list[_Entry]) -> bool:
        """Produce the rejected records and wait for Kafka's acknowledgement; False on failure."""
        assert self._producer is not None
        producer = self._producer
        self._delivery_errors = []

        def delivered(error: KafkaError | None, message: Message) -> None:
            if error is not None:
                self._delivery_errors.append(error.str())

        for entry in entries:
            message = entry.message
            assert entry.result is not None
            origin = f"outbox:{message.topic()}:{message.partition()}:{message.offset()}"
            letter = RejectedRecord(
                raw=message.value() or b"",
                origin=origin,
                reason=entry.result.reason,
                message=entry.result.message,
                record_index=None,
            )
            producer.produce(
                self.config.rejected_topic,
                key=message.key(),
                value=self._encode_rejected(letter),
                on_delivery=delivered,
            )
        remaining = producer.flush(self.config.kafka_timeout_s)
        if remaining:
            self._delivery_errors.append(f"{remaining} rejected records not acknowledged in time")
        return not self._delivery_errors

    def _commit(self, consumer: Consumer, messages: list[Message]) -> None:
        offsets: dict[tuple[str, int], int] = {}
        for message in messages:
            topic, partition, offset = message.topic(), message.partition(), message.offset()
            assert topic is not None and partition is not None and offset is not None
            offsets[(topic, partition)] = max(offsets.get((topic, partition), 0), offset + 1)
        try:
            consumer.commit(
                offsets=[TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())],
                asynchronous=False,
            )
            self.counters.commits += 1
        except KafkaException as error:
            # Harmless: whoever reads these records again meets a destination that has them.
            self.counters.commit_failures += 1
            log.warning("offset commit failed", extra={"error": error.args[0].str()})
