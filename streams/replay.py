"""The reference model: what the outbox must contain for a given input.

Replaying each input partition in offset order through the same pure
decision function (`streams.policy.decide`) with a plain dict as state
yields the outbox that exactly-once processing promises (DESIGN §5). Tests
and the `verify` command compare the real outbox against it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from schemas.codec import OBJECT_EVENT, CodecError
from schemas.records import OutboxRecord, Watermark
from streams.policy import Outcome, Policy, UndecidableEvent, decide


@dataclass(frozen=True, slots=True)
class InputRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes


def replay_partition(
    records: Iterable[InputRecord], policy: Policy
) -> tuple[list[OutboxRecord], dict[str, Watermark]]:
    """Records of ONE partition in offset order → (expected outbox, final watermarks)."""
    state: dict[str, Watermark] = {}
    outbox: list[OutboxRecord] = []
    for record in records:
        try:
            event = OBJECT_EVENT.decode(record.value)
        except CodecError:
            continue
        identity = (
            record.key.decode("utf-8")
            if record.key
            else f"{event.source}://{event.bucket}/{event.key}"
        )
        current = state.get(identity)
        try:
            outcome = decide(event, current, policy)
        except UndecidableEvent:
            continue
        if outcome is Outcome.ACCEPTED:
            assert event.position is not None
            state[identity] = Watermark(event.position, event.id, record.partition, record.offset)
            previous = current.position if current else None
            outbox.append(OutboxRecord(event, previous, record.partition, record.offset))
    return outbox, state
