"""The exactly-once processor: a transactional consume-transform-produce loop.

One consumer (read_committed, manual commits, cooperative-sticky) and one
transactional producer whose `transactional.id` is stable per worker
instance. Per transaction (docs/design.md §5.2):

1. consume a batch and decide each event against its object's watermark,
   reading the in-memory overlay first, then committed RocksDB state;
2. produce outbox records, changelog records and dead letters;
3. send the consumed offsets to the transaction, then commit it;
4. only then write the overlay to RocksDB with the changelog offset.

Any abortable error aborts the transaction, drops the overlay and rewinds
the consumer to the committed offsets, so the same input is decided again
against the same committed state.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from seqgate.schemas.codec import OBJECT_EVENT, REJECTED_RECORD, encode_outbox
from seqgate.schemas.outcomes import Outcome
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent, RejectedRecord
from seqgate.schemas.wire import CodecError
from seqgate.streams.rules.accounting import OutcomeCounters
from seqgate.streams.rules.decider import InputPosition, decide_record, purgeable, record_identity
from seqgate.streams.rules.policy import UndecidableEvent
from seqgate.streams.runtime.errors import WorkerFatalError as WorkerFatalError  # re-exported
from seqgate.streams.runtime.faults import FaultInjector, FaultPoint
from seqgate.streams.runtime.kafka_clients import consumer_failure, is_fatal
from seqgate.streams.runtime.metrics import WorkerMetrics
from seqgate.streams.runtime.transactions import (
    abort_if_open,
    abort_transaction,
    close_producer,
    commit_transaction,
    flush,
    rewind_to_committed,
)
from seqgate.streams.state.keys import STREAM_TIME_KEY, decode_stream_time
from seqgate.streams.state.restore import restore_consumer_config
from seqgate.streams.state.store import PartitionStore, StateDamaged, StateUnavailable
from seqgate.streams.worker.audit import (
    Decision as Decision,  # re-exported: on_commit receives them
)
from seqgate.streams.worker.audit import encode_decision, previous_position
from seqgate.streams.worker.config import WorkerConfig as WorkerConfig  # re-exported
from seqgate.streams.worker.config import consumer_config, producer_config
from seqgate.streams.worker.liveness import PartitionProgress, StallWatch, readable_partitions
from seqgate.streams.worker.partition_stores import PartitionStores, describe_unavailable
from seqgate.streams.worker.pending import OverlayView, PendingState, coordinates
from seqgate.streams.worker.refused import UNWRITABLE_CODES, RefusedRecords

log = logging.getLogger(__name__)


# Expired dedupe ids tombstoned per partition and commit, to bound commit time.
_PURGE_PER_COMMIT = 1000

CommitListener = Callable[[list[Decision]], None]


class Worker:
    """Runs the processor loop for one worker instance until stopped."""

    def __init__(
        self,
        config: WorkerConfig,
        *,
        faults: FaultInjector | None = None,
        on_commit: CommitListener | None = None,
    ) -> None:
        self.config = config
        self._policy = config.policy  # read per record
        self._audit = config.audit_topic is not None
        self.counters = OutcomeCounters()
        self._faults = faults or FaultInjector()
        self._on_commit = on_commit
        self._pending = PendingState()
        self._in_transaction = False
        self._fatal_error: KafkaError | None = None
        # Before the clients: a port that cannot be bound leaves nothing to close.
        self.metrics = WorkerMetrics(
            config.instance_id, alive_timeout_s=config.stall_timeout_ms / 1000
        )
        if config.metrics_port is not None:
            self.metrics.serve(config.metrics_host, config.metrics_port)
        self._consumer = Consumer(consumer_config(config))
        self._restore_consumer = Consumer(
            restore_consumer_config(config.kafka, config.application_id)
        )
        self._stores = PartitionStores(config, self._restore_consumer, self.metrics)
        self._producer = Producer(producer_config(config, on_error=self._on_client_error))
        self.commits = 0
        self.committed_records = 0  # input records of committed transactions
        self.aborts = 0
        self._stall = StallWatch(config.stall_timeout_ms / 1000, time.monotonic())
        self._committed_offsets: dict[int, int] = {}  # next input offset per partition, committed
        self._lost_at: float | None = None  # partitions lost, no assignment since
        self._lost_member_id: str | None = None  # the group member id when they were lost
        self._refused = RefusedRecords(config.stall_timeout_ms / 1000)

    # ---- main loop -------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Process until `stop` is set; then commit the open transaction and close.

        Raises WorkerFatalError for errors that a restart with the same
        configuration would not cure by itself.
        """
        timeout = self.config.kafka_timeout_s
        try:
            # Fences any earlier incarnation with our transactional.id and
            # aborts its open transaction.
            self._producer.init_transactions(timeout)
        except KafkaException as error:
            raise WorkerFatalError(
                f"init_transactions for transactional.id {self.config.transactional_id}"
                f" failed: {error.args[0].str()}"
            ) from error
        self._consumer.subscribe(
            [self.config.input_topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        graceful = False
        try:
            while not stop.is_set():
                messages = self._consumer.consume(
                    self.config.batch_size, timeout=self._poll_timeout()
                )
                now = time.monotonic()
                if messages:
                    self._stall.progressed(now)
                elif self._stall.due(now):
                    self._check_not_stuck()
                self.metrics.health.beat()
                if not messages and not self._in_transaction:
                    self.metrics.observe_lag(self._consumer, self._committed_offsets)
                try:
                    for message in messages:
                        self._process(message)
                        isolating = self._refused.isolating and self._in_transaction
                        if isolating and not self._commit_or_recover():
                            break  # rewound: the rest of the batch is read again
                except KafkaException as error:
                    self._recover(error)
                    continue
                except StateDamaged as damage:
                    self._rebuild_damaged(damage)  # aborts and rewinds: the batch is read again
                    continue
                except StateUnavailable as error:
                    raise WorkerFatalError(describe_unavailable(error, self.config)) from None
                if self._in_transaction and self._commit_due():
                    self._commit_or_recover()
            if self._in_transaction:
                self._commit_or_recover()
            graceful = True
        finally:
            self._close(graceful)

    def _poll_timeout(self) -> float:
        interval = self.config.commit_interval_ms / 1000
        if not self._in_transaction:
            return min(interval, 0.5)
        remaining = interval - (time.monotonic() - self._pending.started)
        return max(0.0, min(remaining, interval))

    def _commit_due(self) -> bool:
        pending = self._pending
        return (
            pending.records >= self.config.commit_every
            or (time.monotonic() - pending.started) * 1000 >= self.config.commit_interval_ms
        )

    # ---- one record --------------------------------------------------------------------------

    def _begin(self) -> None:
        self._producer.begin_transaction()
        self._in_transaction = True
        self._pending.started = time.monotonic()

    def _process(self, message: Message) -> None:
        # The hot path: one call per input record (see docs/benchmark.md).
        error = message.error()
        if error is not None:
            if is_fatal(error):
                raise WorkerFatalError(
                    consumer_failure(error, "the worker (it resumes from the committed offsets)")
                )
            log.warning("consumer error", extra={"error": error.str()})
            return
        if not self._in_transaction:
            self._begin()
        partition, offset = coordinates(message)
        pending = self._pending
        pending.records += 1
        pending.next_offsets[partition] = offset + 1
        raw = message.value() or b""
        try:
            event = OBJECT_EVENT.decode(raw)
        except CodecError as codec_error:
            self._dead_letter(message, RejectReason.UNDECODABLE_EVENT, str(codec_error), None)
            return
        key = message.key()
        try:
            identity = record_identity(key or None, event)
        except UndecidableEvent as undecidable:
            self._dead_letter(message, undecidable.reason, undecidable.message, event)
            return
        # The input record's timestamp, never the clock: replays decide the same
        # and produce byte-identical outbox records.
        record_time = message.timestamp()[1]
        at = InputPosition(partition, offset, record_time)
        view = pending.views.get(partition)
        if view is None:
            view = pending.views[partition] = OverlayView(
                pending.overlay, self._store(partition), partition
            )
        audit = self._audit
        previous = previous_position(view, identity) if audit else None
        unwritable = self._refused.get(partition, offset)
        if unwritable is not None:
            reason = RejectReason.UNWRITABLE_RECORD
            self._dead_letter(message, reason, unwritable.why, event, previous)
            return
        try:
            verdict = decide_record(view, event, identity, at, self._policy)
        except UndecidableEvent as undecidable:
            self._dead_letter(message, undecidable.reason, undecidable.message, event, previous)
            return
        if verdict.outbox is not None:
            # No delivery callback (but while isolating): a failed outbox record makes
            # the transaction abortable, and commit_transaction then raises (_recover).
            try:
                self._producer.produce(
                    self.config.outbox_topic,
                    key=key or identity.encode("utf-8"),
                    value=encode_outbox(verdict.outbox, raw),
                    timestamp=record_time,
                    on_delivery=self._on_delivery if self._refused.isolating else None,
                )
            except KafkaException as refused:
                if refused.args[0].code() not in UNWRITABLE_CODES:
                    raise
                # Refused before it was sent (above the producer's message.max.bytes):
                # this record alone, and nothing of it is in the transaction.
                why = f"its outbox record: {refused.args[0].str()}"
                self._dead_letter(message, RejectReason.UNWRITABLE_RECORD, why, event, previous)
                return
        if verdict.changes:
            view.changes.update(verdict.changes)
        outcome = verdict.outcome
        tally_key = (partition, outcome, event.kind, None)
        pending.tally[tally_key] = pending.tally.get(tally_key, 0) + 1
        if self._on_commit is not None or audit:
            decision = Decision.of((partition, offset), identity, event, outcome)
            self._report(decision, record_time, previous)
        self._faults.reach(FaultPoint.AFTER_STATE_UPDATE)

    def _report(self, decision: Decision, record_time: int, previous: str | None) -> None:
        """Keep a decision for the on_commit listener and, with an audit topic, write it there."""
        if self._on_commit is not None:
            self._pending.decisions.append(decision)
        if self.config.audit_topic is None:
            return
        self._producer.produce(
            self.config.audit_topic,
            key=decision.identity.encode("utf-8"),
            value=encode_decision(decision, previous),
            timestamp=record_time,
            on_delivery=self._on_delivery,
        )

    def _produce_changelog(self) -> None:
        """Write the transaction's state changes (last value per key) to the changelog,
        with tombstones for dedupe ids that have expired in record time."""
        overlay = self._pending.overlay
        for partition, changes in list(overlay.partitions().items()):
            raw_time = changes.get(STREAM_TIME_KEY)
            store = self._stores.get(partition)
            if raw_time is not None and store is not None:
                stream_time = decode_stream_time(raw_time)
                horizon = stream_time - self.config.policy.dedupe_retention_ms
                candidates = store.seen_older_than(horizon, limit=_PURGE_PER_COMMIT)
                for state_key in purgeable(candidates, stream_time, self.config.policy):
                    if state_key not in changes:
                        overlay.put(partition, state_key, None)
            # Only the partition's last record reports its delivery: it carries the
            # highest offset, the one the store records. A failure of any other
            # record makes the transaction abortable, so the commit raises.
            last = len(changes) - 1
            for index, (state_key, value) in enumerate(changes.items()):
                self._producer.produce(
                    self.config.changelog_topic,
                    key=state_key,
                    value=value,
                    partition=partition,
                    on_delivery=self._on_changelog_delivery if index == last else None,
                )

    def _dead_letter(
        self,
        message: Message,
        reason: RejectReason,
        text: str,
        event: ObjectEvent | None,
        previous: str | None = None,
    ) -> None:
        partition, offset = coordinates(message)
        origin = f"kafka:{message.topic()}:{partition}:{offset}"
        raw = message.value() or b""
        unwritable = self._refused.get(partition, offset)
        if unwritable is not None and unwritable.omit_raw:
            raw, text = b"", _without_bytes(text, len(raw), origin)
        record = RejectedRecord(raw, origin, reason.value, text, None)
        try:
            self._produce_dead_letter(message, record)
        except KafkaException as refused:
            if refused.args[0].code() not in UNWRITABLE_CODES or not raw:
                raise
            # Too large with the input's bytes copied: they stay readable at the origin.
            text = _without_bytes(text, len(raw), origin)
            record = RejectedRecord(b"", origin, reason.value, text, None)
            self._produce_dead_letter(message, record)
        key = message.key()
        identity = key.decode("utf-8", "replace") if key else ""
        decision = Decision.of((partition, offset), identity, event, Outcome.REJECTED, reason.value)
        tally_key = (partition, Outcome.REJECTED, decision.kind, reason.value)
        self._pending.tally[tally_key] = self._pending.tally.get(tally_key, 0) + 1
        self._report(decision, message.timestamp()[1], previous)

    def _produce_dead_letter(self, message: Message, record: RejectedRecord) -> None:
        self._producer.produce(
            self.config.rejected_topic,
            key=message.key(),
            value=REJECTED_RECORD.encode(record),
            timestamp=message.timestamp()[1],
            on_delivery=self._on_delivery,
        )

    def _store(self, partition: int) -> PartitionStore:
        store = self._stores.get(partition)
        if store is None:
            raise WorkerFatalError(f"partition {partition} is not assigned to this worker")
        return store

    # ---- delivery reports ---------------------------------------------------------------------

    # Delivery callbacks may run inside produce() while it is raising a fatal
    # error; any call into the client then fails, so a failed delivery is only
    # recorded here and described later.

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self._pending.delivery_errors.append(error)

    def _on_changelog_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self._pending.delivery_errors.append(error)
            return
        last = self._pending.changelog_last_offset
        partition, offset = coordinates(message)
        last[partition] = max(last.get(partition, -1), offset)

    # ---- commit and recovery -------------------------------------------------------------------

    def _commit_or_recover(self) -> bool:
        """Commit the open transaction; False when it was aborted (and the input rewound)."""
        try:
            self._commit()
        except KafkaException as error:
            self._recover(error)
            return False
        except StateDamaged as damage:  # the purge reads the store before the commit
            self._rebuild_damaged(damage)
            return False
        except StateUnavailable as error:
            raise WorkerFatalError(describe_unavailable(error, self.config)) from None
        return True

    def _recover(self, error: KafkaException) -> None:
        kafka_error = error.args[0]
        if is_fatal(kafka_error):
            # produce() only says "Fatal error": the producer knows the cause.
            fatal = self._producer_fatal_error() or kafka_error
            raise WorkerFatalError(self._describe_fatal(fatal)) from error
        # Abortable or retriable: aborting and re-reading from the committed
        # offsets is always safe, since nothing of this transaction is visible.
        kafka_error = self._transaction_failure(kafka_error)
        log.warning("transaction aborted", extra={"error": kafka_error.str()})
        self._find_unwritable(kafka_error)
        self._abort_and_rewind()
        self._check_abort_loop(kafka_error)

    def _transaction_failure(self, error: KafkaError) -> KafkaError:
        """Why the open transaction failed, where produce() only says "Erroneous state".

        The transactional calls name the failure; send_offsets_to_transaction is
        asked because it commits nothing (the transaction is aborted next anyway)."""
        if error.code() != KafkaError._STATE or not self._in_transaction:
            return error
        offsets = self._pending_offsets()
        if not offsets:
            return error
        try:
            self._producer.send_offsets_to_transaction(
                offsets, self._consumer.consumer_group_metadata(), self.config.kafka_timeout_s
            )
        except KafkaException as failure:
            cause: KafkaError = failure.args[0]
            return cause
        return error

    def _find_unwritable(self, error: KafkaError) -> None:
        """Before the abort: let `seqgate.streams.worker.refused` close in on a record the broker
        refuses
        for good, or stop when not even its bare dead letter can be written."""
        pending = self._pending
        codes = {error.code(), *(failed.code() for failed in pending.delivery_errors)}
        stuck = self._refused.after_abort(codes, error.str(), pending.records, pending.next_offsets)
        if stuck is None:
            return
        partition, offset = stuck
        raise WorkerFatalError(
            f"input record {self.config.input_topic}[{partition}] offset {offset} cannot be"
            f" written, not even as a dead letter without its bytes ({error.str()}): raise"
            f" max.message.bytes of {self.config.rejected_topic} (and"
            f" {self.config.outbox_topic}, {self.config.changelog_topic}) to the input"
            " topic's, then restart the worker"
        )

    def _check_abort_loop(self, error: KafkaError) -> None:
        """Aborts without a commit in between for --stall-timeout-ms: exit, never spin."""
        lasted = self._refused.abort_loop_seconds(time.monotonic())
        if lasted is None:
            return
        raise WorkerFatalError(
            f"no transaction committed for {lasted:.0f} s"
            f" (--stall-timeout-ms {self.config.stall_timeout_ms}): every attempt aborted,"
            f" the last with: {error.str()}; restart the worker (it resumes from the"
            " committed offsets) once Kafka accepts the worker's writes"
        )

    def _commit(self) -> None:
        started = time.monotonic()
        timeout = self.config.kafka_timeout_s
        pending = self._pending
        self._produce_changelog()
        # flush() serves the delivery reports: afterwards we know every
        # changelog offset this transaction wrote.
        flush(self._producer, timeout, self._producer_fatal_error)
        if pending.delivery_errors:
            raise KafkaException(
                KafkaError(
                    pending.delivery_errors[0].code(),
                    "delivery failed: "
                    + "; ".join(error.str() for error in pending.delivery_errors[:3]),
                    txn_requires_abort=True,
                )
            )
        self._producer.send_offsets_to_transaction(
            self._pending_offsets(), self._consumer.consumer_group_metadata(), timeout
        )
        self._faults.reach(FaultPoint.BEFORE_COMMIT)
        commit_transaction(self._producer, timeout)
        self._in_transaction = False
        self._faults.reach(FaultPoint.AFTER_COMMIT)
        # Kafka has the transaction; now (and only now) the committed state.
        for partition, changes in pending.overlay.partitions().items():
            last = pending.changelog_last_offset.get(partition)
            if last is not None:
                self._stores.apply_committed(partition, changes, last + 1)
        for (partition, outcome, _kind, _reason), count in pending.tally.items():
            self.counters.add(partition, outcome, count)
        self.commits += 1
        self.committed_records += pending.records
        self._committed_offsets.update(pending.next_offsets)
        self._refused.committed(pending.next_offsets)
        self.metrics.committed(pending.tally, time.monotonic() - started)
        self.metrics.observe_lag(self._consumer, self._committed_offsets)  # at most 1/s
        self._stall.progressed(time.monotonic())
        decisions = pending.decisions
        self._pending = PendingState()
        if self._on_commit is not None:
            self._on_commit(decisions)

    def _pending_offsets(self) -> list[TopicPartition]:
        """The open transaction's input offsets: the next offset to read, per partition."""
        return [
            TopicPartition(self.config.input_topic, partition, next_offset)
            for partition, next_offset in sorted(self._pending.next_offsets.items())
        ]

    def _abort_and_rewind(self) -> None:
        self.aborts += 1
        self.metrics.aborts.inc()
        try:
            abort_transaction(
                self._producer, self.config.kafka_timeout_s, give_up_after=self._stall.timeout_s
            )
        except KafkaException as error:
            raise WorkerFatalError(self._describe_fatal(error.args[0])) from error
        self._in_transaction = False
        self._pending = PendingState()
        rewind_to_committed(self._consumer, self.config.kafka_timeout_s)

    def _producer_fatal_error(self) -> KafkaError | None:
        with contextlib.suppress(KafkaException):
            self._producer.poll(0)  # serves error_cb
        if self._fatal_error is not None:
            return self._fatal_error
        # A transactional call on a failed producer raises the real cause
        # (e.g. _FENCED) where produce() only said "Fatal error".
        try:
            self._producer.abort_transaction(1)
        except KafkaException as error:
            cause: KafkaError = error.args[0]
            return cause
        return None

    def _on_client_error(self, error: KafkaError) -> None:
        if error.fatal():
            self._fatal_error = error

    def _describe_fatal(self, error: KafkaError) -> str:
        if error.code() in (KafkaError.INVALID_TXN_STATE, KafkaError.INVALID_PRODUCER_EPOCH):
            return (
                f"the broker aborted this worker's transaction ({error.str()}): it stayed"
                f" open longer than --transaction-timeout-ms ({self.config.transaction_timeout_ms}"
                " ms) while the worker could not finish it (a network partition, a broker"
                " outage or a paused process); restart the worker (it resumes from the"
                " committed offsets); where such outages are expected, raise"
                " --transaction-timeout-ms (at most the broker's transaction.max.timeout.ms)"
            )
        if error.code() in (KafkaError._FENCED, KafkaError.PRODUCER_FENCED):
            return (
                f"worker fenced (transactional.id {self.config.transactional_id}): either"
                " another worker runs with the same --instance-id (give each a distinct one),"
                " or this worker's transaction was open longer than --transaction-timeout-ms"
                f" ({self.config.transaction_timeout_ms} ms; the process was paused, or cut off"
                " from the broker) and the broker aborted it; restart the worker (it resumes"
                " from the committed offsets)"
            )
        return f"fatal Kafka error: {error.str()}"

    # ---- liveness --------------------------------------------------------------------------------

    def _check_not_stuck(self) -> None:
        """Exit (for a supervisor to restart us) if assigned partitions have readable
        records that this consumer has not read for --stall-timeout-ms, or if the
        partitions it lost have not been followed by a new assignment for as long."""
        lost_at = self._lost_at
        if lost_at is not None and self._consumer.memberid() != self._lost_member_id:
            self._lost_at = None  # rejoined under a new member id, given nothing: idle
        elif lost_at is not None and time.monotonic() - lost_at >= self._stall.timeout_s:
            raise WorkerFatalError(
                f"partitions lost {time.monotonic() - lost_at:.0f} s ago and no new assignment"
                f" since (--stall-timeout-ms {self.config.stall_timeout_ms}): rejoining the"
                " group is stuck; restart the worker (it resumes from the committed offsets)"
            )
        try:
            progress = [self._progress_of(tp) for tp in self._consumer.assignment()]
        except KafkaException as error:
            # The broker does not answer: an outage, not a stuck consumer.
            log.info("stall check skipped", extra={"error": error.args[0].str()})
            return
        stuck = readable_partitions(progress)
        if not self._stall.observed(time.monotonic(), bool(stuck)):
            return
        described = ", ".join(
            f"{entry.partition} (at {entry.position}, readable up to {entry.stable_end})"
            for entry in stuck
        )
        raise WorkerFatalError(
            f"no record consumed for {self.config.stall_timeout_ms} ms (--stall-timeout-ms)"
            f" while partitions {described} of {self.config.input_topic} have committed"
            " records to read: the Kafka client is stuck; restart the worker (it resumes"
            " from the committed offsets)"
        )

    def _progress_of(self, tp: TopicPartition) -> PartitionProgress:
        (positioned,) = self._consumer.position([tp])  # local: no broker call
        # Asked through the other client (read_committed: it answers the last stable
        # offset): a stuck consumer may not answer for itself either, which would
        # look like an outage forever; when the broker answers another client, it is not.
        low, stable_end = self._restore_consumer.get_watermark_offsets(
            tp, timeout=5.0, cached=False
        )
        position = positioned.offset if positioned.offset >= 0 else None
        return PartitionProgress(tp.partition, position, low, stable_end)

    # ---- rebalancing ---------------------------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self._lost_at = None
        self._stores.assign([tp.partition for tp in partitions])
        self.metrics.partitions_assigned(len(self._stores))
        self._stall.progressed(time.monotonic())

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Commit before giving the partitions away, so the next owner restores
        # everything this worker decided.
        if self._in_transaction:
            self._commit_or_recover()
        self._release(partitions)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # The group moved on without us: our offsets can no longer commit.
        aborted = self._in_transaction
        log.warning(
            "partitions lost: this worker was silent longer than --session-timeout-ms"
            " (paused or stalled) and the group gave them to another member; rejoining",
            extra={
                "partitions": sorted(tp.partition for tp in partitions),
                "session_timeout_ms": self.config.session_timeout_ms,
                "transaction_aborted": aborted,
            },
        )
        if aborted:
            self._abort_and_rewind()
        self._release(partitions)
        self._lost_at = time.monotonic()
        self._lost_member_id = consumer.memberid()
        self.metrics.health.set_ready(False, "partitions lost; rejoining the group")

    def _release(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._committed_offsets.pop(tp.partition, None)
            self._refused.release(tp.partition)
            self._stores.release(tp.partition)
        self.metrics.forget(partitions)
        self.metrics.partitions_assigned(len(self._stores))

    def _rebuild_damaged(self, damage: StateDamaged) -> None:
        """A store failed while processing: abort the open transaction (nothing of it is
        visible yet) and rewind, then rebuild the store from the changelog."""
        if self._in_transaction:
            self._abort_and_rewind()
        self._stores.rebuild(damage)

    def _close(self, graceful: bool) -> None:
        abort_if_open(self._producer, self._in_transaction)
        self._in_transaction = False
        try:
            self._consumer.close()
        finally:
            self._restore_consumer.close()
            self._stores.close()
            # A flush error here was already reported by what stopped the worker.
            with contextlib.suppress(KafkaException):
                flush(self._producer, 5 if graceful else 0, self._producer_fatal_error)
            close_producer(self._producer)
            self.metrics.close()


def _without_bytes(text: str, size: int, origin: str) -> str:
    return f"{text} (the input's {size} bytes are not copied here: read them at {origin})"
