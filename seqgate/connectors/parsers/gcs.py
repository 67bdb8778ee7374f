"""Google Cloud Storage notifications, delivered through Cloud Pub/Sub.

A bucket's notification configuration publishes one Pub/Sub message per object
change. Three shapes are parsed: the **push** envelope ``{"message": {...},
"subscription": ...}`` (its OIDC token is checked by :mod:`seqgate.connectors.auth.gcs_oidc`),
one **pulled** message ``{"data", "attributes", "messageId", ...}``, and a **pull
response** ``{"receivedMessages": [{"ackId", "message"}, ...]}`` whose messages
are parsed one by one and numbered by index, so one bad message never hides the
good ones. The parser is total: no input makes it raise.

Provider rules:

attributes
    String attributes ``eventType``, ``bucketId``, ``objectId``,
    ``objectGeneration``, ``eventTime``, ``payloadFormat``, ``notificationConfig``
    (and ``overwroteGeneration`` / ``overwrittenByGeneration`` on overwrites). A
    message with none of them (a hand-published test message, another publisher
    on the topic) is ``not_a_notification``.
``payloadFormat``
    ``JSON_API_V1``: ``data`` is base64 of the object resource (``kind``
    ``storage#object``, ``bucket``, ``name``, ``generation``, ``metageneration``,
    ``size``, ``etag``, ``updated``...). ``NONE``: no data; the event comes from
    the attributes alone (no size, no ETag). Absent: the presence of ``data``
    decides. Another value is ``unsupported_schema_version``. Bucket, name and
    generation may be given by both the attributes and the resource; both come
    from the same write, so a disagreement is ``invalid_field``.
names
    GCS sends object names verbatim, never URL-encoded: the key is the name as
    given (``%2F`` in a name is three characters). Identity
    ``gs://<bucket>/<name>``, source ``gcs``.
``generation``
    A positive int64 written in decimal (a string: JSON numbers lose precision
    past 2**53). ``version_id`` is its canonical text; ``position`` is that
    text zero-padded to 20 digits. Decimal digits are hex digits, and at one
    fixed width both of seqgate's string orders (``aws``, which right-pads, and
    ``numeric``) compare the padded strings exactly as the integers compare.
    Google does not promise increasing generations: docs/design.md §3 makes GCS
    dedupe-only by default. ``size`` is a decimal string too.

Event types: ``OBJECT_FINALIZE`` is ``created`` (a new object or generation,
overwrites included); ``OBJECT_METADATA_UPDATE`` is ``metadata_changed``;
``OBJECT_ARCHIVE`` (the live generation became noncurrent) is ``removed``: the
key names no live content any more. ``OBJECT_DELETE`` (a generation was deleted
for good) is ``version_removed`` when the resource shows the generation was
already noncurrent (``timeDeleted``: a purge, the key may still exist) or when
the payload is ``NONE`` (nothing tells, so the weaker claim is made), and
``removed`` otherwise. An archive or delete carrying ``overwrittenByGeneration``
was caused by an upload, whose own ``OBJECT_FINALIZE`` reports the change: it is
*ignored* (``gcs_overwritten_generation``). Other types: ``unsupported_event_type``.

Event id (docs/design.md §4.1): never the Pub/Sub ``messageId``, since GCS may publish one
change as several messages with different ids, but
:func:`~seqgate.schemas.identity.sequencer_event_id` with prefix ``gcs-`` over kind,
identity and change marker: the generation; for ``metadata_changed`` the
generation and metageneration (with payload ``NONE``: the ``eventTime``
attribute), because every metadata update of a generation keeps its generation.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from seqgate.connectors.parsers.json_fields import (
    check_text,
    index_path,
    member_path,
    nesting_exceeds,
    optional_string,
    show,
    too_deep_message,
)
from seqgate.connectors.parsers.results import Ignored, ParsedItem, ParseResult
from seqgate.schemas.identity import object_identity, sequencer_event_id
from seqgate.schemas.kinds import METADATA_CHANGED, EventKind
from seqgate.schemas.reasons import RecordRejected, Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import GCS_SOURCE

__all__ = [
    "GCS_EVENT_TYPES",
    "GCS_KIND_DESCRIPTIONS",
    "GCS_SCHEME",
    "OVERWRITTEN_GENERATION",
    "POSITION_WIDTH",
    "gcs_event_id",
    "gcs_position",
    "looks_like_gcs",
    "parse_gcs",
]

GCS_SCHEME: Final = "gs"
"""The identity scheme of GCS objects: ``gs://<bucket>/<name>``."""


GCS_KIND_DESCRIPTIONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        METADATA_CHANGED: "the object's metadata (content type, custom metadata, ACL, storage "
        "class...) changed; its content is unchanged (GCS OBJECT_METADATA_UPDATE)",
    }
)
"""The kinds GCS adds to the S3 family's, with their meaning."""

OVERWRITTEN_GENERATION: Final = "gcs_overwritten_generation"
"""The Ignored reason of an archive or delete caused by an overwrite."""

POSITION_WIDTH: Final = 20
"""Digits of ``position``: enough for every unsigned 64-bit generation."""

FINALIZE: Final = "OBJECT_FINALIZE"
METADATA_UPDATE: Final = "OBJECT_METADATA_UPDATE"
ARCHIVE: Final = "OBJECT_ARCHIVE"
DELETE: Final = "OBJECT_DELETE"

GCS_EVENT_TYPES: Final[Mapping[str, str]] = MappingProxyType(
    {
        FINALIZE: "a new object, or a new generation of it, was written",
        METADATA_UPDATE: "the metadata of a live object changed",
        ARCHIVE: "the live generation became noncurrent (versioned bucket)",
        DELETE: "a generation was permanently deleted",
    }
)
"""The ``eventType`` values seqgate maps, with what GCS sends them for."""

_JSON_API_V1: Final = "JSON_API_V1"
_PAYLOAD_NONE: Final = "NONE"
_OBJECT_RESOURCE_KIND: Final = "storage#object"
_GCS_ATTRIBUTES: Final = frozenset(
    {"eventType", "bucketId", "objectId", "objectGeneration", "payloadFormat", "notificationConfig"}
)
_DECIMAL: Final = re.compile(r"[0-9]+")
_INT64_MAX: Final = 2**63 - 1
_TYPES_SUMMARY: Final = ", ".join(GCS_EVENT_TYPES)


# --------------------------------------------------------------------------- public helpers


def gcs_position(generation: str) -> str:
    """The ``position`` of a canonical generation: zero-padded to :data:`POSITION_WIDTH` digits."""
    return generation.zfill(POSITION_WIDTH)


def gcs_event_id(kind: str, identity: str, change_marker: str) -> str:
    """The stable id of a GCS event (docs/design.md §4.1): ``gcs-`` + a hash of kind,
    identity, marker.

    ``change_marker`` is the canonical generation, or for ``metadata_changed``
    ``<generation>.<metageneration>`` (``<generation>@<eventTime>`` when the
    payload carries no metageneration).
    """
    return sequencer_event_id("gcs-", kind, identity, change_marker)


def looks_like_gcs(document: object) -> bool:
    """Whether a decoded JSON document is shaped like a GCS notification delivery.

    True for a push envelope, a pulled message or a pull response whose
    message(s) carry at least one GCS notification attribute. Cheap: it
    inspects only the shape, not the values.
    """
    if not isinstance(document, dict):
        return False
    received = document.get("receivedMessages")
    if isinstance(received, list):
        return any(
            isinstance(entry, dict) and _has_gcs_attributes(entry.get("message"))
            for entry in received
        )
    message = document.get("message")
    if isinstance(message, dict):
        return _has_gcs_attributes(message)
    return _has_gcs_attributes(document)


def _has_gcs_attributes(message: object) -> bool:
    if not isinstance(message, dict):
        return False
    attributes = message.get("attributes")
    return isinstance(attributes, dict) and not _GCS_ATTRIBUTES.isdisjoint(attributes)


# --------------------------------------------------------------------------- parsing


def parse_gcs(document: object, origin: str) -> ParseResult:
    """Normalize one GCS notification delivery (already JSON-decoded).

    ``document`` is a push envelope, a pulled message or a pull response;
    ``origin`` is copied into every event. Never raises.
    """
    if not isinstance(document, dict):
        return _whole_message_rejection(
            f"expected a Pub/Sub push envelope, a pulled message or a pull response "
            f"(a JSON object), got {show(document)}"
        )
    if "receivedMessages" in document:
        return _parse_pull_response(document["receivedMessages"], origin)
    if "message" in document:
        return ParseResult.of(_parse_item(document["message"], "message", origin, None))
    if "attributes" in document or "data" in document:
        return ParseResult.of(_parse_item(document, "", origin, None))
    return _whole_message_rejection(
        "the document has no 'message', 'receivedMessages', 'attributes' or 'data': expected a "
        "Pub/Sub delivery of a Cloud Storage notification"
    )


def _parse_pull_response(received: object, origin: str) -> ParseResult:
    if not isinstance(received, list) or not received:
        shown = "is empty" if received == [] else f"is {show(received)}"
        return _whole_message_rejection(
            f"receivedMessages {shown}: expected a non-empty array of received Pub/Sub messages"
        )
    items: list[ParsedItem] = []
    for index, entry in enumerate(received):
        path = index_path("receivedMessages", index)
        if isinstance(entry, dict):  # {"ackId": ..., "message": {...}}
            entry, path = entry.get("message"), f"{path}.message"
        items.append(_parse_item(entry, path, origin, index))
    return ParseResult(tuple(items))


def _parse_item(message: object, path: str, origin: str, index: int | None) -> ParsedItem:
    try:
        return _parse_message(message, path, origin, index)
    except RecordRejected as rejected:
        return Rejection(rejected.reason, rejected.message, index)


@dataclass(frozen=True, slots=True)
class _Notification:
    """Where one message's fields live: its attributes and, with JSON_API_V1, the resource."""

    attributes: dict[object, object]
    attributes_path: str
    resource: dict[object, object] | None
    data_path: str

    def agreed(self, attribute: str, member: str, what: str, read: _Reader) -> str:
        """A required value given by an attribute and/or a resource member, which must agree."""
        found: list[tuple[str, str]] = []
        for parent, path, name in (
            (self.attributes, self.attributes_path, attribute),
            (self.resource, self.data_path, member),
        ):
            if parent is not None and parent.get(name) not in (None, ""):
                field = member_path(path, name)
                found.append((read(parent[name], field), field))
        if not found:
            also = "" if self.resource is None else f" and so is {self.data_path}.{member}"
            raise RecordRejected(
                RejectReason.MISSING_FIELD,
                f"{self.attributes_path}.{attribute} is missing{also}: expected {what}",
            )
        (value, field), *others = found
        for other, other_field in others:
            if other != value:
                raise RecordRejected(
                    RejectReason.INVALID_FIELD,
                    f"{field} {show(value)} and {other_field} {show(other)} disagree: both "
                    "describe the object of one notification",
                )
        return value

    def resource_string(self, name: str) -> str | None:
        resource = self.resource
        return None if resource is None else optional_string(resource, name, self.data_path)

    def resource_int(self, name: str) -> int | None:
        if self.resource is None or self.resource.get(name) in (None, ""):
            return None
        return _int64(self.resource[name], member_path(self.data_path, name))


_Reader = Callable[[object, str], str]


def _parse_message(
    message: object, path: str, origin: str, index: int | None
) -> ObjectEvent | Ignored:
    """One Pub/Sub message -> one event or one Ignored; raises RecordRejected."""
    if not isinstance(message, dict):
        raise RecordRejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"{path or 'the document'} must be a Pub/Sub message (a JSON object), "
            f"got {show(message)}",
        )
    attributes_path = member_path(path, "attributes")
    attributes = _gcs_attributes(message, attributes_path)
    event_type = _event_type(attributes, attributes_path)
    data_path = member_path(path, "data")
    resource = None
    if _payload_format(message, attributes, attributes_path) == _JSON_API_V1:
        resource = _object_resource(message, data_path)
    notification = _Notification(attributes, attributes_path, resource, data_path)

    bucket = notification.agreed("bucketId", "bucket", "the bucket's name", _bucket_name)
    name = notification.agreed("objectId", "name", "the object's name (verbatim)", _text)
    generation = notification.agreed(
        "objectGeneration", "generation", "the object's generation", _generation
    )
    try:
        identity = object_identity(GCS_SCHEME, bucket, name)
    except ValueError as error:  # excluded by the checks above; kept as a guard
        raise RecordRejected(RejectReason.INVALID_FIELD, f"{path or 'message'}: {error}") from None

    overwritten_by = optional_string(attributes, "overwrittenByGeneration", attributes_path)
    if overwritten_by is not None and event_type in (ARCHIVE, DELETE):
        return Ignored(
            OVERWRITTEN_GENERATION,
            f"{event_type} of {identity} generation {generation} was caused by the upload of "
            f"generation {overwritten_by}, whose OBJECT_FINALIZE reports the change",
            index,
        )

    metageneration = notification.resource_int("metageneration")
    event_time = (
        optional_string(attributes, "eventTime", attributes_path)
        or notification.resource_string("updated")
        or notification.resource_string("timeCreated")
    )
    kind = _kind(event_type, resource)
    marker = generation
    if kind == METADATA_CHANGED and metageneration is not None:
        marker = f"{generation}.{metageneration}"
    elif kind == METADATA_CHANGED and event_time is not None:
        marker = f"{generation}@{event_time}"
    return ObjectEvent(
        id=gcs_event_id(kind, identity, marker),
        source=GCS_SOURCE,
        bucket=bucket,
        key=name,
        kind=kind,
        event_name=event_type,
        position=gcs_position(generation),
        version_id=generation,
        size=notification.resource_int("size"),
        etag=notification.resource_string("etag"),
        event_time=event_time,
        origin=origin,
    )


def _kind(event_type: str, resource: dict[object, object] | None) -> str:
    if event_type == FINALIZE:
        return EventKind.CREATED.value
    if event_type == METADATA_UPDATE:
        return METADATA_CHANGED
    if event_type == ARCHIVE:
        return EventKind.REMOVED.value
    if resource is None or resource.get("timeDeleted") not in (None, ""):
        return EventKind.VERSION_REMOVED.value
    return EventKind.REMOVED.value


# --------------------------------------------------------------------------- members


def _gcs_attributes(message: dict[object, object], path: str) -> dict[object, object]:
    attributes = message.get("attributes")
    if isinstance(attributes, dict) and not _GCS_ATTRIBUTES.isdisjoint(attributes):
        return attributes
    if isinstance(attributes, dict):
        found = "has none of the Cloud Storage notification attributes"
    else:
        found = "is missing" if attributes is None else f"is {show(attributes)}"
    raise RecordRejected(
        RejectReason.NOT_A_NOTIFICATION,
        f"{path} {found}: a Cloud Storage notification carries eventType, bucketId, "
        "objectId and objectGeneration (a message from another publisher on the topic?)",
    )


def _event_type(attributes: dict[object, object], path: str) -> str:
    value = attributes.get("eventType")
    if isinstance(value, str) and value in GCS_EVENT_TYPES:
        return value
    if value is None:
        detail = "is missing"
    elif not isinstance(value, str):
        detail = f"must be a string, got {show(value)}"
    else:
        detail = f"{show(value)} is not supported"
    raise RecordRejected(
        RejectReason.UNSUPPORTED_EVENT_TYPE,
        f"{path}.eventType {detail}: seqgate maps these GCS event types: {_TYPES_SUMMARY} "
        "(docs/kinds.md)",
    )


def _payload_format(
    message: dict[object, object], attributes: dict[object, object], path: str
) -> str:
    value = attributes.get("payloadFormat")
    if value is None or value == "":
        return _PAYLOAD_NONE if message.get("data") in (None, "") else _JSON_API_V1
    if value in (_JSON_API_V1, _PAYLOAD_NONE):
        return str(value)
    raise RecordRejected(
        RejectReason.UNSUPPORTED_SCHEMA_VERSION,
        f"{path}.payloadFormat {show(value)} is not supported: expected "
        f"{_JSON_API_V1!r} (the object resource in 'data') or {_PAYLOAD_NONE!r} (attributes only)",
    )


def _object_resource(message: dict[object, object], path: str) -> dict[object, object]:
    raw = message.get("data")
    if raw is None or raw == "":
        raise RecordRejected(
            RejectReason.MISSING_FIELD,
            f"{path} is missing: payloadFormat {_JSON_API_V1} carries the object resource "
            "as base64-encoded JSON",
        )
    if not isinstance(raw, str):
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{path} must be a base64 string, got {show(raw)}"
        )
    try:
        data = _decode_base64(raw)
    except ValueError as error:
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{path} {show(raw)} is not valid base64: {error}"
        ) from None
    if nesting_exceeds(data):
        raise RecordRejected(RejectReason.NESTING_TOO_DEEP, too_deep_message(f"{path} (decoded)"))
    try:
        resource: object = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise RecordRejected(
            RejectReason.MALFORMED_JSON,
            f"{path} does not decode to JSON text (expected the object resource): {error}",
        ) from None
    if not isinstance(resource, dict):
        raise RecordRejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"{path} decodes to {show(resource)}: expected the object resource, a JSON object",
        )
    kind = resource.get("kind")
    if kind is not None and kind != _OBJECT_RESOURCE_KIND:
        raise RecordRejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"{path}.kind is {show(kind)}: expected {_OBJECT_RESOURCE_KIND!r}",
        )
    return resource


def _decode_base64(text: str) -> bytes:
    # Pub/Sub's JSON form writes bytes in standard base64; the proto3 JSON
    # mapping also allows the URL-safe alphabet and dropped padding.
    standard = text.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except binascii.Error as error:
        raise ValueError(str(error)) from None


def _text(value: object, field: str) -> str:
    if not isinstance(value, str):
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{field} must be a non-empty string, got {show(value)}"
        )
    check_text(value, field)
    return value


def _bucket_name(value: object, field: str) -> str:
    name = _text(value, field)
    if "/" in name:
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{field} {show(name)} contains '/': bucket names never do"
        )
    return name


def _int64(value: object, field: str) -> int:
    """A non-negative int64 in decimal: a string of digits (a JSON number is tolerated)."""
    number = -1
    if isinstance(value, str) and _DECIMAL.fullmatch(value) and len(value.lstrip("0")) <= 19:
        number = int(value.lstrip("0") or "0")
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    if not 0 <= number <= _INT64_MAX:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{field} must be a decimal integer from 0 to 2**63-1, got {show(value)}",
        )
    return number


def _generation(value: object, field: str) -> str:
    generation = _int64(value, field)
    if generation == 0:
        raise RecordRejected(RejectReason.INVALID_FIELD, f"{field} is 0: generations are positive")
    return str(generation)


def _whole_message_rejection(message: str) -> ParseResult:
    return ParseResult.rejected(RejectReason.NOT_A_NOTIFICATION, message)
