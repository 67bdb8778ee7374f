"""Typed in-memory forms of the Avro contracts (docs/design.md §2).

These classes are what the rest of the code passes around; `seqgate.schemas.codec`
turns them into bytes and back. Field names match the `.avsc` files exactly.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Self, cast

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


class FlatRecord:
    """The dict form of a record whose fields are all plain values (no nested record)."""

    __slots__: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return asdict(cast("DataclassInstance", self))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Self:
        return cls(**{name: data[name] for name in cls.__slots__})


@dataclass(frozen=True, slots=True)
class ObjectEvent(FlatRecord):
    """One normalized notification record: the value of topic `object-events`."""

    id: str
    source: str
    bucket: str
    key: str
    kind: str
    event_name: str
    position: str | None
    version_id: str | None
    size: int | None
    etag: str | None
    event_time: str | None
    origin: str


@dataclass(frozen=True, slots=True)
class OutboxRecord:
    """An accepted event as published to `object-events.outbox`.

    No field depends on a clock or on the process, so replaying the same
    input yields byte-identical records.
    """

    event: ObjectEvent
    previous_position: str | None
    input_partition: int
    input_offset: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "event": self.event.to_dict(),
            "previous_position": self.previous_position,
            "input_partition": self.input_partition,
            "input_offset": self.input_offset,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> OutboxRecord:
        return cls(
            event=ObjectEvent.from_dict(data["event"]),
            previous_position=data["previous_position"],
            input_partition=data["input_partition"],
            input_offset=data["input_offset"],
        )


@dataclass(frozen=True, slots=True)
class RejectedRecord(FlatRecord):
    """A rejected record: the exact bytes received and why they were refused."""

    raw: bytes
    origin: str
    reason: str
    message: str
    record_index: int | None


@dataclass(frozen=True, slots=True)
class Watermark(FlatRecord):
    """The committed state of one object: the highest accepted position.

    Stored in RocksDB and in the compacted changelog topic.
    """

    position: str
    event_id: str
    input_partition: int
    input_offset: int


@dataclass(frozen=True, slots=True)
class SeenEvent(FlatRecord):
    """An event id accepted from a dedupe-only source, with its record time."""

    event_id: str
    identity: str
    record_time: int
    input_partition: int
    input_offset: int


@dataclass(frozen=True, slots=True)
class DecisionRecord(FlatRecord):
    """One worker decision, as written to the optional audit topic.

    One per input record, whatever its outcome, in the transaction that commits
    it. No field depends on a clock or on the process (replays are byte-identical).
    """

    input_partition: int
    input_offset: int
    identity: str
    event_id: str | None
    position: str | None
    kind: str | None
    outcome: str
    reason: str | None
    previous_position: str | None
