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

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from seqgate.connectors.parsers.gcs_fields import (
    GcsNotification,
    bucket_name,
    generation_number,
    text,
)
from seqgate.connectors.parsers.gcs_payload import JSON_API_V1, object_resource, payload_format
from seqgate.connectors.parsers.identity_check import checked_identity
from seqgate.connectors.parsers.json_fields import (
    index_path,
    member_path,
    optional_string,
    show,
    supported_name,
)
from seqgate.connectors.parsers.results import (
    Ignored,
    ParseResult,
    parse_each,
    result_or_rejection,
    whole_message_rejection,
)
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.identity import sequencer_event_id
from seqgate.schemas.kinds import METADATA_CHANGED, EventKind
from seqgate.schemas.reasons import RejectReason
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

_GCS_ATTRIBUTES: Final = frozenset(
    {"eventType", "bucketId", "objectId", "objectGeneration", "payloadFormat", "notificationConfig"}
)
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
        return whole_message_rejection(
            f"expected a Pub/Sub push envelope, a pulled message or a pull response "
            f"(a JSON object), got {show(document)}"
        )
    if "receivedMessages" in document:
        return _parse_pull_response(document["receivedMessages"], origin)
    if "message" in document:
        message = document["message"]
        return result_or_rejection(
            lambda: ParseResult.of(_parse_message(message, "message", origin, None))
        )
    if "attributes" in document or "data" in document:
        return result_or_rejection(
            lambda: ParseResult.of(_parse_message(document, "", origin, None))
        )
    return whole_message_rejection(
        "the document has no 'message', 'receivedMessages', 'attributes' or 'data': expected a "
        "Pub/Sub delivery of a Cloud Storage notification"
    )


def _parse_pull_response(received: object, origin: str) -> ParseResult:
    if not isinstance(received, list) or not received:
        shown = "is empty" if received == [] else f"is {show(received)}"
        return whole_message_rejection(
            f"receivedMessages {shown}: expected a non-empty array of received Pub/Sub messages"
        )
    return parse_each(received, lambda entry, index: _received(entry, index, origin))


def _received(entry: object, index: int, origin: str) -> ObjectEvent | Ignored:
    path = index_path("receivedMessages", index)
    if isinstance(entry, dict):  # {"ackId": ..., "message": {...}}
        entry, path = entry.get("message"), f"{path}.message"
    return _parse_message(entry, path, origin, index)


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
    if payload_format(message, attributes, attributes_path) == JSON_API_V1:
        resource = object_resource(message, data_path)
    notification = GcsNotification(attributes, attributes_path, resource, data_path)

    bucket = notification.agreed("bucketId", "bucket", "the bucket's name", bucket_name)
    name = notification.agreed("objectId", "name", "the object's name (verbatim)", text)
    generation = notification.agreed(
        "objectGeneration", "generation", "the object's generation", generation_number
    )
    identity = checked_identity(GCS_SCHEME, bucket, name, path or "message")

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
    return supported_name(
        attributes,
        "eventType",
        path,
        GCS_EVENT_TYPES,
        f"seqgate maps these GCS event types: {_TYPES_SUMMARY} (docs/kinds.md)",
    )
