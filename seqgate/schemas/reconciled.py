"""Events that `seqgate reconcile` publishes to repair what notifications never delivered.

A listing has no ordering marker (S3 gives the sequencer to notifications only), so a
reconciled event cannot be ordered against a provider's positions. It names instead the
object's latest accepted event it was computed against, and the worker accepts it only
while that is still the object's latest accepted event (docs/reconcile.md): a
compare-and-set that never touches a watermark.

* its ``origin`` is ``reconcile:<bucket>``: no bridge writes that prefix;
* its ``position`` is :func:`expectation` of that event's id (a fixed-length digest, as
  ids may be longer than a position may be), or None when nothing was accepted yet;
* its ``id`` is derived from the listed state alone (identity, version id, ETag,
  last-modified), never from a clock, so publishing the same drift twice gives the same
  id, and the id says which state it stands for (:func:`reconciled_state`).

Pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Final, Literal

from seqgate.schemas.identity import event_identity
from seqgate.schemas.kinds import CREATED, REMOVED
from seqgate.schemas.listing import ListedObject
from seqgate.schemas.records import ObjectEvent

__all__ = [
    "ABSENT_EVENT_NAME",
    "PRESENT_EVENT_NAME",
    "RECONCILE_ORIGIN_PREFIX",
    "absent_event",
    "absent_id",
    "expectation",
    "is_reconciled",
    "present_event",
    "present_id",
    "reconciled_state",
]

RECONCILE_ORIGIN_PREFIX: Final = "reconcile:"
PRESENT_EVENT_NAME: Final = "seqgate:Reconcile:ObjectPresent"
ABSENT_EVENT_NAME: Final = "seqgate:Reconcile:ObjectAbsent"

_PRESENT_PREFIX: Final = "reconcile-present-"
_ABSENT_PREFIX: Final = "reconcile-absent-"
_SEPARATOR: Final = "\x1f"


def _digest(*parts: str) -> str:
    return hashlib.sha256(_SEPARATOR.join(parts).encode("utf-8")).hexdigest()[:32]


def expectation(event_id: str | None) -> str | None:
    """What a reconciled event's ``position`` holds when it was computed against the
    accepted event `event_id` (None: none accepted)."""
    return None if event_id is None else "accepted-" + _digest(event_id)


def present_id(identity: str, listed: ListedObject) -> str:
    """The id of the event saying `listed` is the object's current state."""
    return _PRESENT_PREFIX + _digest(
        identity, listed.version_id or "", listed.etag or "", str(listed.last_modified_ms)
    )


def absent_id(identity: str, superseded_event_id: str) -> str:
    """The id of the event saying the object is gone since `superseded_event_id`: one per
    accepted state, so a key deleted, written and deleted again gets two distinct ids."""
    return _ABSENT_PREFIX + _digest(identity, superseded_event_id)


def reconciled_state(event_id: str) -> Literal["present", "absent"] | None:
    """Which state a reconciled event's id stands for; None for any other event."""
    if event_id.startswith(_PRESENT_PREFIX):
        return "present"
    if event_id.startswith(_ABSENT_PREFIX):
        return "absent"
    return None


def is_reconciled(event: ObjectEvent) -> bool:
    return event.origin.startswith(RECONCILE_ORIGIN_PREFIX)


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def present_event(
    source: str, bucket: str, listed: ListedObject, latest_event_id: str | None
) -> ObjectEvent:
    """The repair for an object the listing has and seqgate's state does not (or not at
    this version): a `created` event with the listing's version, ETag and size."""
    identity = event_identity(source, bucket, listed.key)
    return ObjectEvent(
        id=present_id(identity, listed),
        source=source,
        bucket=bucket,
        key=listed.key,
        kind=CREATED,
        event_name=PRESENT_EVENT_NAME,
        position=expectation(latest_event_id),
        version_id=listed.version_id,
        size=listed.size,
        etag=listed.etag,
        event_time=_iso(listed.last_modified_ms),
        origin=RECONCILE_ORIGIN_PREFIX + bucket,
    )


def absent_event(source: str, bucket: str, key: str, superseded_event_id: str) -> ObjectEvent:
    """The repair for an object seqgate's state says exists and the listing does not
    have: a `removed` event superseding the accepted event `superseded_event_id`."""
    identity = event_identity(source, bucket, key)
    return ObjectEvent(
        id=absent_id(identity, superseded_event_id),
        source=source,
        bucket=bucket,
        key=key,
        kind=REMOVED,
        event_name=ABSENT_EVENT_NAME,
        position=expectation(superseded_event_id),
        version_id=None,
        size=None,
        etag=None,
        event_time=None,
        origin=RECONCILE_ORIGIN_PREFIX + bucket,
    )
