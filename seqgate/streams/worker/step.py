"""One input record into the worker's open transaction (docs/design.md §5.2 step 3).

Decode it, check it, decide it against the overlay over committed state, produce
its outbox record (or its rejected record) and, with an audit topic, its decision:
all into the transaction the `TransactionalSession` holds open.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable

from confluent_kafka import KafkaException, Message

from seqgate.runtime.errors import WorkerFatalError
from seqgate.runtime.faults import FaultInjector, FaultPoint
from seqgate.runtime.kafka_clients import consumer_failure, is_fatal
from seqgate.schemas.codec import DECISION_RECORD, OBJECT_EVENT, REJECTED_RECORD
from seqgate.schemas.errors import CodecError
from seqgate.schemas.outcomes import Outcome
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent, RejectedRecord
from seqgate.streams.errors import UndecidableEvent
from seqgate.streams.rules.decider import InputPosition, decide_record, record_identity
from seqgate.streams.state.store import PartitionStore
from seqgate.streams.worker.audit import Decision, decision_record, previous_position
from seqgate.streams.worker.pending import OverlayView, TransactionParts, coordinates
from seqgate.streams.worker.refused import UNWRITABLE_CODES

log = logging.getLogger(__name__)


class RecordStep:
    """Decides each input record into the open transaction."""

    def __init__(
        self,
        parts: TransactionParts,
        *,
        begin: Callable[[], None],
        faults: FaultInjector,
        keep_decisions: bool,
    ) -> None:
        self.config = parts.config
        self._policy = parts.config.policy  # read per record
        self._audit = parts.config.audit_topic is not None
        self._session = parts.session
        self._transaction = parts.transaction
        self._stores = parts.stores
        self._refused = parts.refused
        self._begin = begin  # opens the transaction at its first record
        self._faults = faults
        self._keep_decisions = keep_decisions  # for an on_commit listener
        config = parts.config
        framing = config.framing
        self._decode_event = functools.partial(framing.decode, OBJECT_EVENT)
        self._encode_outbox = framing.outbox_writer(config.outbox_topic)
        self._encode_rejected = framing.writer(REJECTED_RECORD, config.rejected_topic)
        self._encode_decision = (
            None
            if config.audit_topic is None
            else framing.writer(DECISION_RECORD, config.audit_topic)
        )

    def process(self, message: Message) -> None:
        # The hot path: one call per input record (see docs/benchmark.md).
        error = message.error()
        if error is not None:
            if is_fatal(error):
                raise WorkerFatalError(
                    consumer_failure(error, "the worker (it resumes from the committed offsets)")
                )
            log.warning("consumer error", extra={"error": error.str()})
            return
        session = self._session
        if not session.in_transaction:
            self._begin()
        pending = self._transaction.pending
        partition, offset = coordinates(message)
        pending.records += 1
        pending.next_offsets[partition] = offset + 1
        raw = message.value() or b""
        try:
            event = self._decode_event(raw)
        except CodecError as codec_error:
            self._reject(message, RejectReason.UNDECODABLE_EVENT, str(codec_error), None)
            return
        key = message.key()
        try:
            identity = record_identity(key or None, event)
        except UndecidableEvent as undecidable:
            self._reject(message, undecidable.reason, undecidable.message, event)
            return
        # The input record's timestamp, never the clock: replays decide the same
        # and produce byte-identical outbox records.
        record_time = message.timestamp()[1]
        at = InputPosition(partition, offset, record_time)
        view = self.view_of(partition)
        previous = previous_position(view, identity) if self._audit else None
        unwritable = self._refused.get(partition, offset)
        if unwritable is not None:
            reason = RejectReason.UNWRITABLE_RECORD
            self._reject(message, reason, unwritable.why, event, previous)
            return
        try:
            verdict = decide_record(view, event, identity, at, self._policy)
        except UndecidableEvent as undecidable:
            self._reject(message, undecidable.reason, undecidable.message, event, previous)
            return
        if verdict.outbox is not None:
            # No delivery callback (but while isolating): a failed outbox record makes
            # the transaction abortable, and the commit then raises.
            try:
                session.produce(
                    self.config.outbox_topic,
                    self._encode_outbox(verdict.outbox, raw),
                    key=key or identity.encode("utf-8"),
                    timestamp=record_time,
                    on_delivery=session.on_delivery if self._refused.isolating else None,
                )
            except KafkaException as refused:
                if refused.args[0].code() not in UNWRITABLE_CODES:
                    raise
                # Refused before it was sent (above the producer's message.max.bytes):
                # this record alone, and nothing of it is in the transaction.
                why = f"its outbox record: {refused.args[0].str()}"
                self._reject(message, RejectReason.UNWRITABLE_RECORD, why, event, previous)
                return
        if verdict.changes:
            view.changes.update(verdict.changes)
        outcome = verdict.outcome
        tally_key = (partition, outcome, event.kind, None)
        pending.tally[tally_key] = pending.tally.get(tally_key, 0) + 1
        if self._keep_decisions or self._audit:
            decision = Decision.of((partition, offset), identity, event, outcome)
            self._report(decision, record_time, previous)
        self._faults.reach(FaultPoint.AFTER_STATE_UPDATE)

    def _report(self, decision: Decision, record_time: int, previous: str | None) -> None:
        """Keep a decision for the on_commit listener and, with an audit topic, write it there."""
        if self._keep_decisions:
            self._transaction.pending.decisions.append(decision)
        if self.config.audit_topic is None or self._encode_decision is None:
            return
        self._session.produce(
            self.config.audit_topic,
            self._encode_decision(decision_record(decision, previous)),
            key=decision.identity.encode("utf-8"),
            timestamp=record_time,
            on_delivery=self._session.on_delivery,
        )

    def _reject(
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
            self._produce_rejected(message, record)
        except KafkaException as refused:
            if refused.args[0].code() not in UNWRITABLE_CODES or not raw:
                raise
            # Too large with the input's bytes copied: they stay readable at the origin.
            text = _without_bytes(text, len(raw), origin)
            record = RejectedRecord(b"", origin, reason.value, text, None)
            self._produce_rejected(message, record)
        key = message.key()
        identity = key.decode("utf-8", "replace") if key else ""
        decision = Decision.of((partition, offset), identity, event, Outcome.REJECTED, reason.value)
        tally = self._transaction.pending.tally
        tally_key = (partition, Outcome.REJECTED, decision.kind, reason.value)
        tally[tally_key] = tally.get(tally_key, 0) + 1
        self._report(decision, message.timestamp()[1], previous)

    def _produce_rejected(self, message: Message, record: RejectedRecord) -> None:
        self._session.produce(
            self.config.rejected_topic,
            self._encode_rejected(record),
            key=message.key(),
            timestamp=message.timestamp()[1],
            on_delivery=self._session.on_delivery,
        )

    def view_of(self, partition: int) -> OverlayView:
        """The state the open transaction's records of `partition` see."""
        pending = self._transaction.pending
        view = pending.views.get(partition)
        if view is None:
            view = pending.views[partition] = OverlayView(
                pending.overlay, self._store(partition), partition
            )
        return view

    def _store(self, partition: int) -> PartitionStore:
        store = self._stores.get(partition)
        if store is None:
            raise WorkerFatalError(f"partition {partition} is not assigned to this worker")
        return store


def _without_bytes(text: str, size: int, origin: str) -> str:
    return f"{text} (the input's {size} bytes are not copied here: read them at {origin})"
