"""The record step compiled: `seqgate._core` decides runs of a batch (docs/design.md §5.2.1).

The Python record step (`seqgate.streams.worker.step`) stays the specification. The
compiled core (Rust, `core/`) decides a batch's records in one call, in order, as long as
it can prove it decides them exactly as that step would; at the first record it cannot (a
consumer error, bytes to reject, a state value of an older schema, a reconciled
event, a produce() that raised, ...) it stops before touching anything of that record and
returns its index: the Python step decides that record, and the core goes on from the next.
Differential tests compare both, decision by decision and byte by byte
(tests/unit/test_compiled_differential.py).

The core is used only while nothing is being isolated after a refusal
(`seqgate.streams.worker.refused`): those records are decided one transaction at a time by
the Python step.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import ModuleType

from confluent_kafka import Message

from seqgate.runtime.engines import OUTCOMES
from seqgate.runtime.faults import FaultInjector, FaultPoint
from seqgate.schemas.codec import (
    DECISION_RECORD,
    OBJECT_EVENT,
    OUTBOX_RECORD,
    SEEN_EVENT,
    WATERMARK,
)
from seqgate.schemas.identity import SCHEMES_OF_SOURCES
from seqgate.schemas.limits import TEXT_LIMITS
from seqgate.schemas.reconciled import RECONCILE_ORIGIN_PREFIX
from seqgate.schemas.sources import KNOWN_SOURCES
from seqgate.streams.rules.policy import SOURCE_ORDERS
from seqgate.streams.state.keys import LATEST_PREFIX, SEEN_PREFIX, STREAM_TIME_KEY
from seqgate.streams.worker.audit import Decision
from seqgate.streams.worker.pending import TransactionParts
from seqgate.streams.worker.step import RecordStep


class CompiledStep:
    """Decides runs of a batch's records with the compiled core, into the open transaction."""

    def __init__(
        self,
        parts: TransactionParts,
        reference: RecordStep,
        *,
        begin: Callable[[], None],
        faults: FaultInjector,
        keep_decisions: bool,
        core: ModuleType,
    ) -> None:
        config = parts.config
        policy = config.policy
        framing = config.framing
        self._session = parts.session
        self._transaction = parts.transaction
        self._refused = parts.refused
        self._reference = reference
        self._begin = begin
        self._keep_decisions = keep_decisions
        self._framing = framing
        self._outbox_topic = config.outbox_topic
        self._audit_topic = config.audit_topic
        self._reach = (
            None
            if type(faults) is FaultInjector  # the injector that does nothing
            else functools.partial(faults.reach, FaultPoint.AFTER_STATE_UPDATE)
        )
        self._core = core.WorkerCore(
            text_limits=list(TEXT_LIMITS.values()),
            known_sources=sorted(KNOWN_SOURCES),
            schemes=sorted(SCHEMES_OF_SOURCES.items()),
            order=policy.order.name,
            source_orders=sorted((s, order.name) for s, order in SOURCE_ORDERS.items()),
            admitted_kinds=sorted(policy.admitted_kinds),
            ordered_sources=sorted(policy.ordered_sources),
            dedupe_window_ms=policy.dedupe_window_ms,
            reconcile_prefix=RECONCILE_ORIGIN_PREFIX,
            seen_prefix=SEEN_PREFIX,
            latest_prefix=LATEST_PREFIX,
            stream_time_key=STREAM_TIME_KEY,
            watermark_header=WATERMARK.header,
            seen_header=SEEN_EVENT.header,
            outbox_header=framing.header(OUTBOX_RECORD, config.outbox_topic),
            decision_header=(
                None
                if config.audit_topic is None
                else framing.header(DECISION_RECORD, config.audit_topic)
            ),
        )

    @property
    def usable(self) -> bool:
        """False while refused records are being isolated or rejected: the Python step
        decides those, one transaction at a time."""
        return self._refused.quiet

    def run(self, messages: Sequence[Message], start: int) -> int:
        """Decide `messages[start:]` until a record the core leaves to the Python step;
        the index of that record (`len(messages)` when none)."""
        session = self._session
        if not session.in_transaction:
            if messages[start].error() is not None:
                return start  # the Python step reports it; no transaction for it
            self._begin()
        audit = (
            None
            if self._audit_topic is None
            else (session.produce, self._audit_topic, session.on_delivery)
        )
        stop, records, next_offsets, tally, decisions, error = self._core.run(
            messages if isinstance(messages, list) else list(messages),
            start,
            prefixes=self._framing.current_headers(OBJECT_EVENT),
            view_for=self._reference.view_of,
            produce=session.producer.produce,
            outbox_topic=self._outbox_topic,
            audit=audit,
            reach=self._reach,
            keep_decisions=self._keep_decisions,
        )
        pending = self._transaction.pending
        pending.records += records
        pending.compiled_records += records
        pending.next_offsets.update(next_offsets)
        counts = pending.tally
        for partition, outcome, kind, count in tally:
            tally_key = (partition, OUTCOMES[outcome], kind, None)
            counts[tally_key] = counts.get(tally_key, 0) + count
        if decisions:
            pending.decisions.extend(
                Decision(p, o, identity, position, OUTCOMES[outcome], event_id, None, kind)
                for p, o, identity, position, outcome, event_id, kind in decisions
            )
        if error is not None:
            raise error
        return int(stop)
