"""The decision rule of the processor (docs/design.md §1.1, §3): pure, no I/O.

Given one event and the committed state it touches, say what happens to it.
Every input ends in exactly one `Outcome`.

Two modes, chosen per source (`Policy.trust_for`):

* **ordered** — the source's position orders the writes of one object
  (S3 and Azure sequencers): accepted iff strictly greater than the
  object's watermark; equal is a duplicate, lower is stale.
* **dedupe-only** — the position cannot be trusted to order (MinIO's node
  clock, GCS generations, webhooks without one): accepted iff the event id
  was not accepted within the dedupe window, measured in *record time*
  (the Kafka timestamps of the input) so that a replay decides the same.

Record time of the dedupe-only mode. The partition's *stream time* is the
highest record time seen. An event older than stream time minus the window is
`late`: its id may have been accepted and forgotten already, so it is never
accepted. Accepted ids are kept for twice the window (the window, then as much
again of grace), so an event that is not late always finds the id it repeats:
a redelivery is accepted again only when it comes more than one window after
the accepted copy, whatever timestamp a producer put on either.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Final

from seqgate.schemas.kinds import CREATED, KIND_DESCRIPTIONS
from seqgate.schemas.ordering import NUMERIC_SEQUENCER_ORDER, PositionOrder, order_named
from seqgate.schemas.outcomes import Outcome
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.reconciled import expectation
from seqgate.schemas.records import ObjectEvent, SeenEvent, Watermark
from seqgate.schemas.sources import AZURE_SOURCE, KNOWN_SOURCES, MINIO_SOURCE, S3_SOURCE
from seqgate.streams.errors import PolicyError, UndecidableEvent


class Trust(StrEnum):
    ORDERED = "ordered"
    DEDUPE = "dedupe"


DEFAULT_ADMITTED_KINDS: frozenset[str] = frozenset({CREATED})
DEFAULT_ORDERED_SOURCES: frozenset[str] = frozenset({S3_SOURCE, AZURE_SOURCE})
DEFAULT_DEDUPE_WINDOW_MS = 24 * 60 * 60 * 1000
KNOWN_KINDS: frozenset[str] = frozenset(kind.value for kind in KIND_DESCRIPTIONS)

# Sources whose positions have their own comparison whatever --ordering says.
SOURCE_ORDERS: Final[dict[str, PositionOrder]] = {MINIO_SOURCE: NUMERIC_SEQUENCER_ORDER}


@dataclass(frozen=True, slots=True)
class Policy:
    """Which events the processor forwards.

    `order` compares S3 positions of one object; `admitted_kinds` selects
    the kinds that may be accepted (the rest are `filtered`);
    `ordered_sources` are trusted to order, the others are dedupe-only
    with a window of `dedupe_window_ms` of record time.
    """

    order: PositionOrder
    admitted_kinds: frozenset[str] = DEFAULT_ADMITTED_KINDS
    ordered_sources: frozenset[str] = DEFAULT_ORDERED_SOURCES
    dedupe_window_ms: int = DEFAULT_DEDUPE_WINDOW_MS

    @classmethod
    def build(
        cls,
        ordering: str = "aws",
        admitted_kinds: Iterable[str] | None = None,
        *,
        ordered_sources: Iterable[str] | None = None,
        dedupe_window_ms: int = DEFAULT_DEDUPE_WINDOW_MS,
    ) -> Policy:
        kinds = _known_names(
            "admitted_kinds",
            admitted_kinds,
            DEFAULT_ADMITTED_KINDS,
            KNOWN_KINDS,
            "event kind",
            "kinds",
        )
        if dedupe_window_ms <= 0:
            raise PolicyError(
                "dedupe_window_ms", f"the dedupe window must be positive, got {dedupe_window_ms} ms"
            )
        sources = _known_names(
            "ordered_sources",
            ordered_sources,
            DEFAULT_ORDERED_SOURCES,
            KNOWN_SOURCES,
            "source",
            "sources",
        )
        return cls(order_named(ordering), kinds, sources, dedupe_window_ms)

    @property
    def dedupe_retention_ms(self) -> int:
        """How long (record time) an accepted id is kept: the window and as much grace."""
        return 2 * self.dedupe_window_ms

    def trust_for(self, source: str) -> Trust:
        return Trust.ORDERED if source in self.ordered_sources else Trust.DEDUPE

    def order_for(self, source: str) -> PositionOrder:
        return SOURCE_ORDERS.get(source, self.order)


def _known_names(
    field: str,
    names: Iterable[str] | None,
    default: frozenset[str],
    known: frozenset[str],
    singular: str,
    plural: str,
) -> frozenset[str]:
    """`names` as a set (`default` when None); a name outside `known` is refused."""
    chosen = default if names is None else frozenset(names)
    unknown = chosen - known
    if unknown:
        valid = ", ".join(sorted(known))
        raise PolicyError(
            field, f"unknown {singular}(s) {sorted(unknown)}: valid {plural} are {valid}"
        )
    return chosen


def decide(event: ObjectEvent, current: Watermark | None, policy: Policy) -> Outcome:
    """Decide one event of an ordered source against the watermark of its object.

    Accepted iff the kind is admitted and the position is strictly greater
    than the watermark's; equal is a duplicate (the same write delivered
    again), lower is stale. Raises UndecidableEvent for an event without a
    usable position; the caller rejects it.
    """
    return decide_position(event, None if current is None else current.position, policy)


def decide_position(event: ObjectEvent, current: str | None, policy: Policy) -> Outcome:
    """`decide` given only the watermark's position (None: the object has none)."""
    if event.kind not in policy.admitted_kinds:
        return Outcome.FILTERED
    if event.position is None:
        raise UndecidableEvent(
            RejectReason.MISSING_POSITION,
            f"event {event.id} for {event.source}://{event.bucket}/{event.key} has no position;"
            f" {event.source} is configured as an ordered source, which must carry one",
        )
    order = policy.order_for(event.source)
    try:
        if current is None:
            order.canonical(event.position)  # validates it
            return Outcome.ACCEPTED
        comparison = order.compare(event.position, current)
    except ValueError as error:
        reason = RejectReason.INVALID_SEQUENCER
        raise UndecidableEvent(reason, f"event {event.id}: {error}") from error
    if comparison > 0:
        return Outcome.ACCEPTED
    return Outcome.DUPLICATE if comparison == 0 else Outcome.STALE


def decide_reconciled(event: ObjectEvent, latest_event_id: str | None, policy: Policy) -> Outcome:
    """Decide an event `seqgate reconcile` published (docs/reconcile.md), given the id of
    the object's latest accepted event (None: none yet).

    A listing has no position, so the event names (in `position`, as `expectation` of
    its id) the latest accepted event it was computed against, and is accepted only
    while that is still the latest: a compare-and-set. An event whose notification was
    accepted meanwhile finds another latest event, and the repair is stale: that state
    is newer than the listing's, or the same. The same repair again finds its own id: a
    duplicate. It never touches a watermark, so it cannot move one backwards.
    """
    if event.kind not in policy.admitted_kinds:
        return Outcome.FILTERED
    if latest_event_id == event.id:
        return Outcome.DUPLICATE
    if event.position != expectation(latest_event_id):
        return Outcome.STALE
    return Outcome.ACCEPTED


def decide_dedupe(
    event: ObjectEvent,
    seen: SeenEvent | None,
    stream_time: int,
    record_time: int,
    policy: Policy,
) -> Outcome:
    """Decide one event of a dedupe-only source.

    `stream_time` is the highest input record time of the partition so far
    (this record included) and `record_time` this record's. A repeated id
    that is still kept is a duplicate; otherwise an event older than the
    window is late; otherwise it is accepted. Purging expired ids later never
    changes a decision, because an expired entry already counts as absent.

    Why this holds whatever the timestamps: the id of an accepted copy at time
    t is kept while stream time <= t + 2 window, and an event at time r is
    decided only while r >= stream time - window. Both at once mean r - t >
    window whenever the id is gone, i.e. a repeat within one window of its
    accepted copy is never accepted (a producer stamping a record in the
    future only makes later events late, never accepted twice).
    """
    if event.kind not in policy.admitted_kinds:
        return Outcome.FILTERED
    if seen is not None and not expired(seen, stream_time, policy):
        return Outcome.DUPLICATE
    if is_late(record_time, stream_time, policy):
        return Outcome.LATE
    return Outcome.ACCEPTED


def is_late(record_time: int, stream_time: int, policy: Policy) -> bool:
    """Older than the dedupe window behind stream time: never accepted."""
    return record_time + policy.dedupe_window_ms < stream_time


def expired(seen: SeenEvent, stream_time: int, policy: Policy) -> bool:
    """An accepted id is kept for two windows of record time (the window and its grace)."""
    return seen.record_time + policy.dedupe_retention_ms < stream_time
