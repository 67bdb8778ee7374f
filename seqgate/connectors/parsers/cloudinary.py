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

Signature: ``X-Cld-Signature`` is the hex SHA-1 (or SHA-256, an account
setting) of the body, then the ``X-Cld-Timestamp`` value, then the API
secret: a plain digest, not an HMAC. Cloudinary's SDKs accept a timestamp for
two hours by default; so does this check, with an injected clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Final

from seqgate.connectors.auth.shared import (
    MISSING,
    WRONG,
    WebhookAuthError,
    check_timestamp_window,
    same_secret,
)
from seqgate.connectors.parsers.json_fields import (
    check_text,
    index_path,
    is_text,
    member_path,
    optional_string,
    required_member,
    required_string,
    show,
)
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.parsers.webhook_fields import (
    derived_event_id,
    optional_count,
    parse_each,
    required_id,
    whole_message_rejection,
)
from seqgate.schemas.identity import object_identity
from seqgate.schemas.kinds import EventKind
from seqgate.schemas.reasons import RecordRejected, RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import CLOUDINARY_SOURCE

__all__ = [
    "CLOUDINARY_NOTIFICATION_TYPES",
    "CLOUDINARY_SCHEME",
    "looks_like_cloudinary",
    "parse_cloudinary",
    "verify_cloudinary_signature",
]

CLOUDINARY_SCHEME: Final = "cloudinary"
CLOUDINARY_NOTIFICATION_TYPES: Final = ("upload", "delete", "rename")
"""The ``notification_type`` values seqgate maps."""

_CREATED: Final = EventKind.CREATED.value
_REMOVED: Final = EventKind.REMOVED.value
_PREFIX: Final = "cloudinary-"
_ALGORITHMS: Final = ("sha1", "sha256")


def looks_like_cloudinary(document: object) -> bool:
    """Whether ``document`` has the shape of a Cloudinary notification."""
    return isinstance(document, dict) and isinstance(document.get("notification_type"), str)


def verify_cloudinary_signature(
    body: bytes,
    timestamp: str | None,
    signature: str | None,
    api_secret: str,
    now_s: float,
    window_s: float = 7200,
    algorithm: str = "sha1",
) -> None:
    """Check the ``X-Cld-Timestamp`` and ``X-Cld-Signature`` headers of a Cloudinary request.

    ``algorithm`` is the account's signature algorithm, ``sha1`` (Cloudinary's
    default) or ``sha256``; ``now_s`` is the current time in seconds since the
    epoch. Raises :class:`WebhookAuthError`: 401 when either header is
    missing, 403 for a timestamp that is not whole seconds, one outside
    ``window_s``, or a signature that does not match. Raises ValueError for
    another ``algorithm``.
    """
    if algorithm not in _ALGORITHMS:
        raise ValueError(f"algorithm must be one of {_ALGORITHMS}, got {algorithm!r}")
    if not signature or not signature.strip():
        raise WebhookAuthError(
            MISSING, "the X-Cld-Signature header is missing: Cloudinary signs every notification"
        )
    if not timestamp or not timestamp.strip():
        raise WebhookAuthError(MISSING, "the X-Cld-Timestamp header is missing: it is signed")
    stamp = timestamp.strip()
    if not stamp.isascii() or not stamp.isdigit():
        raise WebhookAuthError(
            WRONG, f"X-Cld-Timestamp {show(timestamp)} is not a Unix time in whole seconds"
        )
    check_timestamp_window(float(stamp), now_s, window_s, "X-Cld-Timestamp")
    material = body + stamp.encode("ascii") + api_secret.encode("utf-8")
    expected = hashlib.new(algorithm, material).hexdigest()
    if not same_secret(signature.strip().lower(), expected):
        raise WebhookAuthError(
            WRONG,
            f"X-Cld-Signature does not match the body and timestamp under the API secret "
            f"({algorithm.upper()}): forged, altered, or signed with another secret or algorithm",
        )


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
    try:
        identity = object_identity(CLOUDINARY_SCHEME, cloud, key)
    except ValueError as error:  # excluded by the checks above; kept as a guard
        raise RecordRejected(RejectReason.INVALID_FIELD, f"{path}: {error}") from None
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
    found = document.get("notification_type")
    if isinstance(found, str) and found in CLOUDINARY_NOTIFICATION_TYPES:
        return found
    if not isinstance(found, str):
        detail = f"must be a string, got {show(found)}"
    else:
        detail = f"{show(found)} is not supported"
    raise RecordRejected(
        RejectReason.UNSUPPORTED_EVENT_TYPE,
        f"notification_type {detail}: seqgate maps {', '.join(CLOUDINARY_NOTIFICATION_TYPES)}, "
        "the notifications that change which content a public id names (docs/kinds.md)",
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
    try:
        notification_type = _notification_type(document)
        if notification_type == "delete":
            return _delete(document, cloud_name, origin)
        if notification_type == "rename":
            return ParseResult(tuple(_rename(document, cloud_name, origin)))
        return ParseResult.of(_upload(document, cloud_name, origin))
    except RecordRejected as rejected:
        return ParseResult.rejected(rejected.reason, rejected.message)
