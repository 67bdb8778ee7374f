"""What the worker decided per input record, and its audit-log form (`--audit`).

The audit log is optional: with an audit topic the worker writes one
:class:`~seqgate.schemas.records.DecisionRecord` per input record — duplicates, stale,
filtered, ignored and rejected records included — in the same transaction as
the outbox record, the changelog and the input offsets. A ``read_committed``
reader thus sees exactly one decision per committed input record, and nothing
of an aborted transaction. No field depends on a clock: replays are
byte-identical.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqgate.schemas.codec import watermark_position
from seqgate.schemas.outcomes import Outcome
from seqgate.schemas.records import DecisionRecord, ObjectEvent
from seqgate.streams.rules.decider import StateView
from seqgate.streams.state.keys import watermark_key


@dataclass(frozen=True, slots=True)
class Decision:
    """What the worker decided for one input record (reported after commit)."""

    partition: int
    offset: int
    identity: str
    position: str | None
    outcome: Outcome
    event_id: str | None
    reason: str | None = None
    kind: str | None = None

    @classmethod
    def of(
        cls,
        at: tuple[int, int],
        identity: str,
        event: ObjectEvent | None,
        outcome: Outcome,
        reason: str | None = None,
    ) -> Decision:
        """The decision on the record at (partition, offset) holding `event` (None: undecodable)."""
        if event is None:
            return cls(at[0], at[1], identity, None, outcome, None, reason)
        return cls(at[0], at[1], identity, event.position, outcome, event.id, reason, event.kind)


def previous_position(state: StateView, identity: str) -> str | None:
    """The object's watermark position as the record sees it (None: it has none)."""
    raw = state.get(watermark_key(identity))
    return None if raw is None else watermark_position(raw)


def decision_record(decision: Decision, previous: str | None) -> DecisionRecord:
    """The audit record of one decision."""
    return DecisionRecord(
        decision.partition,
        decision.offset,
        decision.identity,
        decision.event_id,
        decision.position,
        decision.kind,
        decision.outcome.value,
        decision.reason,
        previous,
    )
