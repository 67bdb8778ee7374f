"""The reference model: what the outbox must contain for a given input.

Replaying each input partition in offset order through the same decision
rules (`seqgate.streams.rules.decider`) with a plain dict as state yields the outbox that
exactly-once processing promises (docs/design.md §5.7). Tests and the `verify`
command compare the real outbox, and the committed state, against it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from seqgate.schemas.codec import OBJECT_EVENT, WATERMARK
from seqgate.schemas.errors import CodecError
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.records import OutboxRecord, Watermark
from seqgate.streams.errors import UndecidableEvent
from seqgate.streams.rules.decider import InputPosition, decide_record, record_identity
from seqgate.streams.rules.policy import Policy


@dataclass(frozen=True, slots=True)
class InputRecord:
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None  # None: a tombstone
    timestamp: int = 0  # Kafka record timestamp (ms)


class _DictView:
    def __init__(self, state: dict[bytes, bytes]) -> None:
        self._state = state

    def get(self, key: bytes) -> bytes | None:
        return self._state.get(key)


class PartitionReplay:
    """Decides the records of ONE input partition, in offset order, like a worker would."""

    def __init__(
        self,
        policy: Policy,
        unwritable: frozenset[int] = frozenset(),
        framing: Framing = SINGLE_OBJECT,
    ) -> None:
        self.policy = policy
        self.framing = framing  # input events come in either encoding
        self.state: dict[bytes, bytes] = {}  # changelog key -> latest value
        # Offsets the worker rejected as unwritable_record: the one decision that
        # depends on the broker (what it refuses to store), so it is read, not replayed.
        self.unwritable = unwritable

    def apply(self, record: InputRecord) -> OutboxRecord | None:
        """The outbox record this input must produce, or None."""
        try:
            event = self.framing.decode(OBJECT_EVENT, record.value or b"")
        except CodecError:
            return None
        if record.offset in self.unwritable:
            return None  # the worker rejected it: the broker refused what it became
        at = InputPosition(record.partition, record.offset, record.timestamp)
        try:
            identity = record_identity(record.key or None, event)
            verdict = decide_record(_DictView(self.state), event, identity, at, self.policy)
        except UndecidableEvent:
            return None
        for key, value in verdict.changes.items():
            if value is None:
                self.state.pop(key, None)
            else:
                self.state[key] = value
        return verdict.outbox

    def watermarks(self) -> dict[str, Watermark]:
        """The final watermarks of the ordered sources' objects, by identity."""
        return {
            key.decode("utf-8"): WATERMARK.decode(value)
            for key, value in self.state.items()
            if not key.startswith(b"\x00")
        }


def replay_partition(
    records: Iterable[InputRecord], policy: Policy, framing: Framing = SINGLE_OBJECT
) -> tuple[list[OutboxRecord], dict[str, Watermark]]:
    """Records of ONE partition in offset order → (expected outbox, final watermarks)."""
    replay = PartitionReplay(policy, framing=framing)
    outbox = [accepted for record in records if (accepted := replay.apply(record)) is not None]
    return outbox, replay.watermarks()
