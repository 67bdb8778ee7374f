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
    value: bytes | None  # None: a tombstone


class PartitionReplay:
    """Decides the records of ONE input partition, in offset order, like a worker would."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.state: dict[str, Watermark] = {}

    def apply(self, record: InputRecord) -> OutboxRecord | None:
        """The outbox record this input must produce, or None."""
        try:
            event = OBJECT_EVENT.decode(record.value or b"")
        except CodecError:
            return None
        identity = (
            record.key.decode("utf-8")
            if record.key
            else f"{event.source}://{event.bucket}/{event.key}"
        )
        current = self.state.get(identity)
        try:
            outcome = decide(event, current, self.policy)
        except UndecidableEvent:
            return None
        if outcome is not Outcome.ACCEPTED:
            return None
        assert event.position is not None
        self.state[identity] = Watermark(event.position, event.id, record.partition, record.offset)
        previous = current.position if current else None
        return OutboxRecord(event, previous, record.partition, record.offset)


def replay_partition(
    records: Iterable[InputRecord], policy: Policy
) -> tuple[list[OutboxRecord], dict[str, Watermark]]:
    """Records of ONE partition in offset order → (expected outbox, final watermarks)."""
    replay = PartitionReplay(policy)
    outbox = [accepted for record in records if (accepted := replay.apply(record)) is not None]
    return outbox, replay.state
