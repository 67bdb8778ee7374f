"""A bucket listing against seqgate's committed state: what notifications never delivered.

Pure: the listing and the committed state come in, one `Finding` per object goes out
(docs/reconcile.md). The state of an object is its latest accepted event as the changelog
names it (its watermark's, or its latest accepted without a position, whichever is later)
and, while the input topic still holds it, that event itself (for its version id, ETag
and kind).

* `missing` - listed, and seqgate never accepted a write of it (no watermark, or the last
  accepted event removed it);
* `behind` - listed at another version (version id, else ETag) than the last accepted
  event's; or, that event having left the input topic, modified after it was committed;
* `gone` - seqgate's last accepted event says it exists, the listing does not have it;
* `in_flight` - would be one of those, but changed within the grace period: its
  notification may still be on its way;
* `unknown` - cannot be compared (the accepted event has left the input topic and the
  object was not modified since, or it has neither version id nor ETag);
* `in_sync` - the rest.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from enum import StrEnum

from seqgate.schemas.identity import event_identity
from seqgate.schemas.kinds import REMOVED
from seqgate.schemas.listing import ListedObject, plain_etag
from seqgate.schemas.reconciled import absent_event, present_event, present_id, reconciled_state
from seqgate.schemas.records import ObjectEvent

__all__ = ["DRIFTS", "CommittedObject", "Drift", "Finding", "compare"]


class Drift(StrEnum):
    IN_SYNC = "in_sync"
    MISSING = "missing"
    BEHIND = "behind"
    GONE = "gone"
    IN_FLIGHT = "in_flight"
    UNKNOWN = "unknown"


DRIFTS = frozenset({Drift.MISSING, Drift.BEHIND, Drift.GONE})
"""The findings a repair is published for, and that make the command exit 1."""


@dataclass(frozen=True, slots=True)
class CommittedObject:
    """One object's committed state: the id and input place of its latest accepted event,
    when that was committed (the changelog record's timestamp, ms), and the event itself
    if the input still has it."""

    key: str
    event_id: str
    input_partition: int
    input_offset: int
    written_at_ms: int
    event: ObjectEvent | None


@dataclass(frozen=True, slots=True)
class Finding:
    drift: Drift
    key: str
    why: str
    listed: ListedObject | None = None
    committed: CommittedObject | None = None
    repair: ObjectEvent | None = None


def compare(
    source: str,
    bucket: str,
    listing: Iterable[ListedObject],
    committed: Mapping[str, CommittedObject],
    *,
    now_ms: int,
    grace_ms: int,
) -> Iterator[Finding]:
    """One finding per object of `listing` (in its order), then one per committed object
    the listing did not have (in key order). `committed` is keyed by object key."""
    listed_keys: set[str] = set()
    for listed in listing:
        listed_keys.add(listed.key)
        state = committed.get(listed.key)
        finding = _listed(source, bucket, listed, state)
        if finding.drift in DRIFTS and now_ms - listed.last_modified_ms < grace_ms:
            finding = Finding(Drift.IN_FLIGHT, listed.key, finding.why, listed, state)
        yield finding
    for key in sorted(committed.keys() - listed_keys):
        state = committed[key]
        finding = _unlisted(source, bucket, state)
        if finding.drift in DRIFTS and now_ms - state.written_at_ms < grace_ms:
            # the delete came after this state was accepted: it is no older than the grace
            finding = Finding(Drift.IN_FLIGHT, key, finding.why, None, state)
        yield finding


def _listed(
    source: str, bucket: str, listed: ListedObject, state: CommittedObject | None
) -> Finding:
    key = listed.key

    def drift(kind: Drift, why: str) -> Finding:
        repair = present_event(source, bucket, listed, None if state is None else state.event_id)
        return Finding(kind, key, why, listed, state, repair)

    if state is None:
        return drift(Drift.MISSING, "no event of it was accepted")
    accepted = state.event_id
    if accepted == present_id(event_identity(source, bucket, key), listed):
        return Finding(Drift.IN_SYNC, key, "a repair of this very state", listed, state)
    repaired = reconciled_state(accepted)
    if repaired == "absent":
        return drift(Drift.MISSING, "a repair said it was gone; it is back")
    if repaired == "present":
        return drift(Drift.BEHIND, "a repair of an earlier state was accepted")
    event = state.event
    if event is None:
        if listed.last_modified_ms > state.written_at_ms:
            # the event is gone, but a write after its commit never made one accepted
            return drift(
                Drift.BEHIND,
                f"modified after its latest accepted event ({accepted}) was committed",
            )
        why = f"the accepted event {accepted} is no longer in the input topic"
        return Finding(Drift.UNKNOWN, key, why, listed, state)
    if event.kind == REMOVED:
        return drift(Drift.MISSING, f"the last accepted event ({event.id}) removed it")
    if listed.version_id is not None and event.version_id is not None:
        if listed.version_id == event.version_id:
            return Finding(Drift.IN_SYNC, key, "same version id", listed, state)
        return drift(Drift.BEHIND, f"version {listed.version_id}, accepted {event.version_id}")
    if listed.etag is not None and event.etag is not None:
        if listed.etag == plain_etag(event.etag):
            return Finding(Drift.IN_SYNC, key, "same ETag", listed, state)
        return drift(Drift.BEHIND, f"ETag {listed.etag}, accepted {plain_etag(event.etag)}")
    why = f"the accepted event {event.id} has neither a version id nor an ETag to compare"
    return Finding(Drift.UNKNOWN, key, why, listed, state)


def _unlisted(source: str, bucket: str, state: CommittedObject) -> Finding:
    key = state.key
    repaired = reconciled_state(state.event_id)
    if repaired == "absent":
        return Finding(Drift.IN_SYNC, key, "a repair said it was gone", None, state)
    if repaired is None:
        if state.event is None:
            why = f"the accepted event {state.event_id} is no longer in the input topic"
            return Finding(Drift.UNKNOWN, key, why, None, state)
        if state.event.kind == REMOVED:
            return Finding(Drift.IN_SYNC, key, "the last accepted event removed it", None, state)
    repair = absent_event(source, bucket, key, state.event_id)
    why = f"not in the listing; the last accepted event ({state.event_id}) says it exists"
    return Finding(Drift.GONE, key, why, None, state, repair)
