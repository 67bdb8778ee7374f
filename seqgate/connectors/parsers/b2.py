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

Signature: header ``x-bz-event-notification-signature: v1=<hex>``, the
HMAC-SHA256 of the raw body with the rule's signing secret. B2 puts no
timestamp under the signature, so a replay cannot be told from a redelivery
here; the dedupe on ``eventId`` absorbs both.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from seqgate.connectors.auth.shared import MISSING, WRONG, WebhookAuthError, same_secret
from seqgate.connectors.parsers.json_fields import (
    check_text,
    optional_string,
    required_string,
    show,
)
from seqgate.connectors.parsers.results import Ignored, ParseResult
from seqgate.connectors.parsers.webhook_fields import (
    millis_to_iso,
    optional_count,
    parse_each,
    required_id,
    whole_message_rejection,
)
from seqgate.schemas.identity import object_identity
from seqgate.schemas.kinds import EventKind
from seqgate.schemas.reasons import RecordRejected, RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import B2_SOURCE

__all__ = [
    "B2_EVENT_KINDS",
    "B2_SCHEME",
    "B2_SIGNATURE_HEADER",
    "B2_TEST_EVENT",
    "B2_UNMAPPED_TYPES",
    "b2_event_id",
    "looks_like_b2",
    "parse_b2",
    "verify_b2_signature",
]

B2_SCHEME: Final = "b2"
B2_TEST_EVENT: Final = "b2:TestEvent"
B2_SIGNATURE_HEADER: Final = "x-bz-event-notification-signature"

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

_SIGNATURE_VERSION: Final = "v1="
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


def verify_b2_signature(body: bytes, header: str | None, secret: str) -> None:
    """Check the ``x-bz-event-notification-signature`` header of a B2 request.

    ``body`` is the raw request body, ``secret`` the rule's signing secret.
    Raises :class:`WebhookAuthError`: 401 without the header, 403 for a value
    that is not ``v1=<hex>`` or a signature that does not match.
    """
    if header is None or not header.strip():
        raise WebhookAuthError(
            MISSING,
            f"the {B2_SIGNATURE_HEADER} header is missing: B2 signs every notification of a "
            "rule that has a signing secret",
        )
    value = header.strip()
    if not value.startswith(_SIGNATURE_VERSION):
        raise WebhookAuthError(
            WRONG,
            f"the {B2_SIGNATURE_HEADER} header is not 'v1=<hex HMAC-SHA256>': got {show(value)}",
        )
    expected = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    if not same_secret(value[len(_SIGNATURE_VERSION) :].lower(), expected):
        raise WebhookAuthError(
            WRONG,
            f"the {B2_SIGNATURE_HEADER} signature does not match the body: forged, altered "
            "in transit, or signed with another rule's secret",
        )


def _event_type(event: dict[object, object], path: str) -> str:
    name = event.get("eventType")
    if isinstance(name, str) and name in B2_EVENT_KINDS:
        return name
    if name is None:
        detail = "is missing"
    elif not isinstance(name, str):
        detail = f"must be a string, got {show(name)}"
    else:
        why = B2_UNMAPPED_TYPES.get(name)
        detail = f"{show(name)} is not supported" + (f" ({why})" if why else "")
    raise RecordRejected(
        RejectReason.UNSUPPORTED_EVENT_TYPE,
        f"{path}.eventType {detail}: seqgate maps {', '.join(B2_EVENT_KINDS)} (docs/kinds.md)",
    )


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
    if not isinstance(event, dict):
        raise RecordRejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"{path} must be a JSON object (one B2 event), got {show(event)}",
        )
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
    try:
        object_identity(B2_SCHEME, bucket, key)
    except ValueError as error:  # excluded by the checks above; kept as a guard
        raise RecordRejected(RejectReason.INVALID_FIELD, f"{path}: {error}") from None
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
