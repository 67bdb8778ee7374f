"""Backblaze B2 Cloud Storage event notifications (webhook target).

B2 POSTs ``{"events": [...]}`` to the URL of a bucket's notification rule.
One request may carry several events of the same bucket, so every element is
parsed on its own: a valid one becomes an event, an invalid one a rejection
carrying its index, and one bad element never hides the good ones.

How B2 differs from the other providers:

identity
    ``b2://<bucketName>/<objectName>``, source and scheme ``b2``. Bucket names
    are unique across all of B2, so no two accounts share an identity. The
    body writes ``objectName`` as plain JSON text (unlike S3, nothing is
    URL-encoded), so the key is taken as it is.
versions
    Every B2 bucket keeps versions. A *hide marker* is B2's delete marker: the
    key disappears from listings while its versions stay, so both
    ``b2:HideMarkerCreated:*`` names are ``removed``. ``b2:ObjectDeleted:*``
    deletes one file version, named by ``objectVersionId``; other versions,
    hence the key, may remain, so these are ``version_removed``.
ordering
    B2 sends no per-object sequence; ``eventTimestamp`` is informational.
    B2 is dedupe-only (docs/design.md §3) and ``position`` is None.
event id
    ``b2-`` + B2's ``eventId`` (docs/design.md §4.1), the same on every redelivery. The
    prefix keeps ids of different providers apart in the dedupe store.
``b2:TestEvent``
    A test message, not a change: ignored (``b2_test_event``) with its index.
``eventVersion``
    A JSON number; B2 sends ``1``, the only version supported.
``contentSha1``
    Becomes ``etag`` when present; B2 writes ``none`` for files uploaded in
    parts (they have no whole-file SHA-1), which gives None.

Signature: :mod:`seqgate.connectors.auth.b2`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from seqgate.connectors.parsers.identity_check import checked_identity
from seqgate.connectors.parsers.json_fields import (
    check_text,
    notification_object,
    optional_string,
    required_string,
    show,
    supported_name,
)
from seqgate.connectors.parsers.results import (
    Ignored,
    ParseResult,
    parse_each,
    whole_message_rejection,
)
from seqgate.connectors.parsers.webhook_fields import millis_to_iso, optional_count, required_id
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.kinds import EventKind
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import B2_SOURCE

__all__ = [
    "B2_EVENT_KINDS",
    "B2_SCHEME",
    "B2_TEST_EVENT",
    "B2_UNMAPPED_TYPES",
    "b2_event_id",
    "looks_like_b2",
    "parse_b2",
]

B2_SCHEME: Final = "b2"
B2_TEST_EVENT: Final = "b2:TestEvent"

_CREATED: Final = EventKind.CREATED.value
_REMOVED: Final = EventKind.REMOVED.value
_VERSION_REMOVED: Final = EventKind.VERSION_REMOVED.value

B2_EVENT_KINDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "b2:ObjectCreated:Upload": _CREATED,
        "b2:ObjectCreated:MultipartUpload": _CREATED,
        "b2:ObjectCreated:Copy": _CREATED,
        "b2:ObjectCreated:Replica": _CREATED,
        "b2:ObjectCreated:MultipartReplica": _CREATED,
        "b2:ObjectDeleted:Delete": _VERSION_REMOVED,
        "b2:ObjectDeleted:LifecycleRule": _VERSION_REMOVED,
        "b2:HideMarkerCreated:Hide": _REMOVED,
        "b2:HideMarkerCreated:LifecycleRule": _REMOVED,
    }
)
"""B2 ``eventType`` -> kind."""

B2_UNMAPPED_TYPES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "b2:MultipartUploadCreated:LiveRead": "a live-read multipart upload has started: "
        "the object is not complete yet",
    }
)
"""Documented B2 event types deliberately left ``unsupported_event_type``, and why."""

_EVENT_VERSION: Final = 1
_NO_SHA1: Final = "none"


def looks_like_b2(document: object) -> bool:
    """Whether ``document`` has the shape of a B2 notification body: ``{"events": [...]}``
    whose first element, if any, has a ``b2:`` event type."""
    if not isinstance(document, dict):
        return False
    events = document.get("events")
    if not isinstance(events, list):
        return False
    if not events:
        return True
    first = events[0]
    return (
        isinstance(first, dict)
        and isinstance(first.get("eventType"), str)
        and first["eventType"].startswith("b2:")
    )


def b2_event_id(event_id: str) -> str:
    """The seqgate id of a B2 event: ``b2-`` + B2's ``eventId``."""
    return f"b2-{event_id}"


def _event_type(event: dict[object, object], path: str) -> str:
    return supported_name(
        event,
        "eventType",
        path,
        B2_EVENT_KINDS,
        f"seqgate maps {', '.join(B2_EVENT_KINDS)} (docs/kinds.md)",
        hint=_unmapped_hint,
    )


def _unmapped_hint(name: str) -> str:
    why = B2_UNMAPPED_TYPES.get(name)
    return f" ({why})" if why else ""


def _check_version(event: dict[object, object], path: str) -> None:
    version = event.get("eventVersion")
    if isinstance(version, int) and not isinstance(version, bool) and version == _EVENT_VERSION:
        return
    detail = "is missing" if version is None else f"is {show(version)}"
    raise RecordRejected(
        RejectReason.UNSUPPORTED_SCHEMA_VERSION,
        f"{path}.eventVersion {detail}: seqgate accepts B2 event schema version 1 (a number)",
    )


def _event_time(event: dict[object, object], path: str) -> str | None:
    millis = optional_count(event, "eventTimestamp", path)
    if millis is None:
        return None
    try:
        return millis_to_iso(millis)
    except ValueError as error:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{path}.eventTimestamp must be milliseconds since the epoch: {error}",
        ) from None


def _parse_event(event: object, index: int, origin: str) -> ObjectEvent | Ignored:
    path = f"events[{index}]"
    event = notification_object(event, path, "one B2 event")
    if event.get("eventType") == B2_TEST_EVENT:
        return Ignored(
            "b2_test_event", "a B2 test message (b2:TestEvent): it names no change", index
        )
    name = _event_type(event, path)
    _check_version(event, path)
    event_id = required_string(event, "eventId", path, "B2's id of the event")
    check_text(event_id, f"{path}.eventId")
    bucket = required_id(event, "bucketName", path, "the bucket's name")
    key = required_string(event, "objectName", path, "the object's name")
    check_text(key, f"{path}.objectName")
    version_id = optional_string(event, "objectVersionId", path)
    size = optional_count(event, "objectSize", path)
    sha1 = optional_string(event, "contentSha1", path)
    event_time = _event_time(event, path)
    checked_identity(B2_SCHEME, bucket, key, path)
    return ObjectEvent(
        id=b2_event_id(event_id),
        source=B2_SOURCE,
        bucket=bucket,
        key=key,
        kind=B2_EVENT_KINDS[name],
        event_name=name,
        position=None,
        version_id=version_id,
        size=size,
        etag=None if sha1 == _NO_SHA1 else sha1,
        event_time=event_time,
        origin=origin,
    )


def parse_b2(document: object, origin: str) -> ParseResult:
    """Normalize one B2 notification body (already JSON-decoded); never raises.

    Each element of ``events`` gives one item, in order, with its index.
    """
    if not isinstance(document, dict):
        return whole_message_rejection(
            f"expected a B2 notification (a JSON object with an 'events' array), "
            f"got {show(document)}"
        )
    events = document.get("events")
    if not isinstance(events, list):
        detail = "has no 'events'" if events is None else f"has 'events' of {show(events)}"
        return whole_message_rejection(
            f"the document {detail}: expected a B2 notification with a non-empty 'events' array"
        )
    if not events:
        return whole_message_rejection("'events' is empty: expected at least one B2 event")
    return parse_each(events, lambda event, index: _parse_event(event, index, origin))
