"""The decision rule of the processor (DESIGN §1, §3): pure, no I/O.

Given one event and the committed watermark of its object, say what happens
to it. Every input ends in exactly one `Outcome`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from connectors.errors import RejectReason
from schemas.records import EventKind, ObjectEvent, Watermark
from streams.ordering import PositionOrder, order_named


class Outcome(StrEnum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    STALE = "stale"
    FILTERED = "filtered"
    IGNORED = "ignored"
    REJECTED = "rejected"


OUTCOMES: tuple[Outcome, ...] = tuple(Outcome)
DEFAULT_ADMITTED_KINDS: frozenset[str] = frozenset({EventKind.CREATED.value})


@dataclass(frozen=True, slots=True)
class Policy:
    """Which events the processor forwards.

    `order` compares positions of one object; `admitted_kinds` selects the
    kinds that may advance a watermark (the rest are `filtered`).
    """

    order: PositionOrder
    admitted_kinds: frozenset[str] = DEFAULT_ADMITTED_KINDS

    @classmethod
    def build(cls, ordering: str = "aws", admitted_kinds: Iterable[str] | None = None) -> Policy:
        kinds = DEFAULT_ADMITTED_KINDS if admitted_kinds is None else frozenset(admitted_kinds)
        unknown = kinds - {kind.value for kind in EventKind}
        if unknown:
            valid = ", ".join(kind.value for kind in EventKind)
            raise ValueError(f"unknown event kind(s) {sorted(unknown)}: valid kinds are {valid}")
        return cls(order=order_named(ordering), admitted_kinds=kinds)


class UndecidableEvent(Exception):
    """The event cannot be ordered (no position, or a malformed one)."""

    def __init__(self, reason: RejectReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


def decide(event: ObjectEvent, current: Watermark | None, policy: Policy) -> Outcome:
    """Decide one event against the watermark of its object.

    Accepted iff the kind is admitted and the position is strictly greater
    than the watermark's; equal is a duplicate (the same write delivered
    again), lower is stale. Raises UndecidableEvent for an event without a
    usable position; the caller dead-letters it.
    """
    if event.kind not in policy.admitted_kinds:
        return Outcome.FILTERED
    if event.position is None:
        raise UndecidableEvent(
            RejectReason.MISSING_POSITION,
            f"event {event.id} for {event.source}://{event.bucket}/{event.key} has no position;"
            " ordered sources must carry one",
        )
    try:
        if current is None:
            policy.order.canonical(event.position)  # validates it
            return Outcome.ACCEPTED
        comparison = policy.order.compare(event.position, current.position)
    except ValueError as error:
        reason = RejectReason.INVALID_SEQUENCER
        raise UndecidableEvent(reason, f"event {event.id}: {error}") from error
    if comparison > 0:
        return Outcome.ACCEPTED
    return Outcome.DUPLICATE if comparison == 0 else Outcome.STALE
