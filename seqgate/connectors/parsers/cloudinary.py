"""Cloudinary webhook notifications.

Cloudinary POSTs one JSON notification per request; ``notification_type``
says what happened. Three types name objects whose content changed:

``upload``
    One asset at the top level (``public_id``, ``resource_type``, ``type``,
    ``version``, ``bytes``, ``etag``, ``created_at``, ``request_id``, ...):
    ``created``. An overwrite of an existing public id is an upload too.
``delete``
    A ``resources`` array (one bulk delete may remove many assets): each
    element becomes one ``removed`` event, or one rejection carrying its index.
``rename``
    ``from_public_id`` and ``to_public_id`` of one asset: a ``removed`` event
    for the old identity followed by a ``created`` event for the new one, so a
    consumer that follows keys sees the asset leave one and appear at the
    other.

Every other type (eager, moderation, tags, context, metadata, folders, ...)
is ``unsupported_event_type``.

identity
    ``cloudinary://<cloud name>/<resource_type>/<type>/<public_id>``, source
    and scheme ``cloudinary``. A public id is unique only within a resource
    type (image, video, raw) and a delivery type (upload, private,
    authenticated, ...): ``sample`` can be an image and a video at once. The
    three together are the path of Cloudinary's own delivery URLs, so the key
    reads like one. The body does not name the cloud (delete notifications
    carry no URL), so the route passes its configured cloud name as the bucket.
``version_id``
    Cloudinary's ``version`` (the ``v<digits>`` of delivery URLs), as text.
ordering and id
    Nothing reliable orders two notifications of one asset: dedupe-only
    (docs/design.md §3), ``position`` None. An upload's id is ``cloudinary-`` + its
    ``request_id``, which retries keep. A delete or rename names several
    objects under one request, and each record needs an id of its own, so
    theirs is ``cloudinary-`` + a hash of the request id (when sent), the
    kind, the identity, the version and ``notification_context.triggered_at``:
    fields of the notification only, so a retry gets the same ids.

Signature: :mod:`seqgate.connectors.auth.cloudinary`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from seqgate.connectors.parsers.identity_check import checked_identity
from seqgate.connectors.parsers.json_fields import (
    check_text,
    index_path,
    is_text,
    member_path,
    optional_string,
    required_member,
    required_string,
    show,
    supported_name,
)
from seqgate.connectors.parsers.results import (
    ParseResult,
    parse_each,
    result_or_rejection,
    whole_message_rejection,
)
from seqgate.connectors.parsers.webhook_fields import derived_event_id, optional_count, required_id
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.kinds import EventKind
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import CLOUDINARY_SOURCE

__all__ = [
    "CLOUDINARY_NOTIFICATION_TYPES",
    "CLOUDINARY_SCHEME",
    "looks_like_cloudinary",
    "parse_cloudinary",
]

CLOUDINARY_SCHEME: Final = "cloudinary"
CLOUDINARY_NOTIFICATION_TYPES: Final = ("upload", "delete", "rename")
"""The ``notification_type`` values seqgate maps."""

_CREATED: Final = EventKind.CREATED.value
_REMOVED: Final = EventKind.REMOVED.value
_PREFIX: Final = "cloudinary-"


def looks_like_cloudinary(document: object) -> bool:
    """Whether ``document`` has the shape of a Cloudinary notification."""
    return isinstance(document, dict) and isinstance(document.get("notification_type"), str)


def _public_id(parent: dict[object, object], name: str, path: str) -> str:
    value = required_string(parent, name, path, "the asset's public id")
    check_text(value, member_path(path, name))
    return value


def _version(parent: dict[object, object], path: str) -> str | None:
    version = optional_count(parent, "version", path)
    return None if version is None else str(version)


def _event(
    cloud: str,
    asset: dict[object, object],
    path: str,
    public_id: str,
    kind: str,
    event_name: str,
    event_id: str | None,
    request: Sequence[str | None],
    origin: str,
) -> ObjectEvent:
    """One event for ``public_id`` of the asset described by ``asset`` (at ``path``).

    ``request`` is ``(request_id, triggered_at)`` of the notification: the
    material of a derived id (when ``event_id`` is None) and, failing the
    asset's ``created_at``, the event time.
    """
    resource_type = required_id(asset, "resource_type", path, "the resource type, e.g. 'image'")
    delivery_type = required_id(asset, "type", path, "the delivery type, e.g. 'upload'")
    key = f"{resource_type}/{delivery_type}/{public_id}"
    identity = checked_identity(CLOUDINARY_SCHEME, cloud, key, path)
    version_id = _version(asset, path)
    if event_id is None:
        event_id = derived_event_id(_PREFIX, [*request, kind, identity, version_id])
    return ObjectEvent(
        id=event_id,
        source=CLOUDINARY_SOURCE,
        bucket=cloud,
        key=key,
        kind=kind,
        event_name=event_name,
        position=None,
        version_id=version_id,
        size=optional_count(asset, "bytes", path),
        etag=optional_string(asset, "etag", path),
        event_time=optional_string(asset, "created_at", path) or request[1],
        origin=origin,
    )


def _triggered_at(document: dict[object, object]) -> str | None:
    context = document.get("notification_context")
    if not isinstance(context, dict):
        return None
    value = context.get("triggered_at")
    # Informational context: a value of another shape is left out, not refused.
    return value if isinstance(value, str) and value and is_text(value) else None


def _upload(document: dict[object, object], cloud: str, origin: str) -> ObjectEvent:
    request_id = required_string(document, "request_id", "", "Cloudinary's id of the request")
    check_text(request_id, "request_id")
    public_id = _public_id(document, "public_id", "")
    request = (request_id, _triggered_at(document))
    event_id = _PREFIX + request_id
    return _event(cloud, document, "", public_id, _CREATED, "upload", event_id, request, origin)


def _request(document: dict[object, object]) -> tuple[str | None, str | None]:
    return optional_string(document, "request_id", ""), _triggered_at(document)


def _rename(document: dict[object, object], cloud: str, origin: str) -> list[ObjectEvent]:
    request = _request(document)
    old = _public_id(document, "from_public_id", "")
    new = _public_id(document, "to_public_id", "")
    return [
        _event(cloud, document, "", old, _REMOVED, "rename", None, request, origin),
        _event(cloud, document, "", new, _CREATED, "rename", None, request, origin),
    ]


def _delete(document: dict[object, object], cloud: str, origin: str) -> ParseResult:
    request = _request(document)
    resources = required_member(
        document,
        "resources",
        "",
        list,
        missing="expected the array of deleted assets",
        invalid="an array of deleted assets",
    )
    if not resources:
        raise RecordRejected(
            RejectReason.MISSING_FIELD, "resources is empty: expected at least one deleted asset"
        )

    def one(resource: object, index: int) -> ObjectEvent:
        path = index_path("resources", index)
        if not isinstance(resource, dict):
            raise RecordRejected(
                RejectReason.INVALID_FIELD,
                f"{path} must be a JSON object (one deleted asset), got {show(resource)}",
            )
        public_id = _public_id(resource, "public_id", path)
        return _event(cloud, resource, path, public_id, _REMOVED, "delete", None, request, origin)

    return parse_each(resources, one)


def _notification_type(document: dict[object, object]) -> str:
    return supported_name(
        document,
        "notification_type",
        "",
        CLOUDINARY_NOTIFICATION_TYPES,
        f"seqgate maps {', '.join(CLOUDINARY_NOTIFICATION_TYPES)}, the notifications that "
        "change which content a public id names (docs/kinds.md)",
        null_is_missing=False,  # a null type is present: parse_cloudinary refuses an absent one
    )


def parse_cloudinary(document: object, origin: str, *, cloud_name: str) -> ParseResult:
    """Normalize one Cloudinary notification (already JSON-decoded); never raises.

    ``cloud_name`` is the product environment's cloud name, the bucket of every
    identity; it must be non-empty without ``/`` (ValueError otherwise, a
    configuration mistake).
    """
    if not cloud_name or "/" in cloud_name:
        raise ValueError(f"the cloud name {cloud_name!r} must be non-empty and contain no '/'")
    if not isinstance(document, dict):
        return whole_message_rejection(
            f"expected a Cloudinary notification (a JSON object), got {show(document)}"
        )
    if "notification_type" not in document:
        return whole_message_rejection(
            "the document has no 'notification_type': expected a Cloudinary notification"
        )
    return result_or_rejection(lambda: _parse(document, cloud_name, origin))


def _parse(document: dict[object, object], cloud_name: str, origin: str) -> ParseResult:
    notification_type = _notification_type(document)
    if notification_type == "delete":
        return _delete(document, cloud_name, origin)
    if notification_type == "rename":
        return ParseResult(tuple(_rename(document, cloud_name, origin)))
    return ParseResult.of(_upload(document, cloud_name, origin))
