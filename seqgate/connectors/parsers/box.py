"""Box webhooks (V2) for files.

Box POSTs one ``webhook_event`` per request: ``{"type": "webhook_event",
"id", "created_at", "trigger", "webhook", "created_by", "source", ...}``
where ``source`` is the item the trigger fired on.

identity
    ``box://files/<file id>``, source and scheme ``box``. Box has no buckets
    and its API addresses files by id; ids are unique across all of Box and
    survive moves and renames. A path would not do: Box sends ``FILE.TRASHED``
    and ``FILE.DELETED`` with a bare ``{"id", "type"}`` source, so a path
    identity could never be removed, and ``path_collection`` is the folder
    tree as the webhook's owner sees it, which differs between users. The
    bucket is the fixed name ``files`` (the namespace of Box file ids); a
    deployment that receives several Box instances can pass another one.
    Only ``source.type`` ``file`` is handled: folder ids are another namespace.
kinds
    ``FILE.UPLOADED`` (a new file or a new version), ``FILE.COPIED`` and
    ``FILE.RESTORED`` (back from the trash) are ``created``. A copy is read as
    naming the new file; were it the original, the event would only make a
    consumer re-read unchanged content; ``FILE.TRASHED`` and ``FILE.DELETED`` are ``removed`` (the
    file is gone from its folder; the trash keeps it restorable for a while).
    A move, a rename, a lock or an unlock changes what Box knows about the
    file but not its content or its id: ``metadata_changed``. A preview or a
    download is ``accessed``. Any other trigger (folders, comments, tasks,
    shared links, ...) is ``unsupported_event_type``; ``WEBHOOK.DELETED``,
    which tells that the webhook itself is gone, is ignored
    (``box_webhook_deleted``).
fields
    ``version_id`` is ``source.file_version.id``, ``etag`` the SHA-1 of the
    content (``source.sha1``, else ``source.file_version.sha1``), ``size``
    ``source.size``, ``event_time`` the event's ``created_at``. All optional:
    removal events carry none of them.
ordering and id
    Box sends no reliable per-file order: dedupe-only (docs/design.md §3), ``position``
    None. The id is ``box-`` + the webhook event's ``id``, which Box keeps on
    every retry of the delivery.

Signatures: :mod:`seqgate.connectors.auth.box`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from seqgate.connectors.parsers.identity_check import checked_identity
from seqgate.connectors.parsers.json_fields import (
    check_text,
    optional_string,
    required_string,
    show,
    supported_name,
)
from seqgate.connectors.parsers.results import (
    Ignored,
    ParseResult,
    result_or_rejection,
    whole_message_rejection,
)
from seqgate.connectors.parsers.webhook_fields import optional_count, required_id
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.kinds import METADATA_CHANGED, EventKind
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import BOX_SOURCE

__all__ = [
    "BOX_BUCKET",
    "BOX_SCHEME",
    "BOX_TRIGGER_KINDS",
    "box_event_id",
    "looks_like_box",
    "parse_box",
]

BOX_SCHEME: Final = "box"
BOX_BUCKET: Final = "files"
"""The default bucket of Box identities: the namespace of Box file ids."""


_ACCESSED: Final = "accessed"
_WEBHOOK_DELETED: Final = "WEBHOOK.DELETED"
_EVENT_TYPE: Final = "webhook_event"

BOX_TRIGGER_KINDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "FILE.UPLOADED": EventKind.CREATED.value,
        "FILE.COPIED": EventKind.CREATED.value,
        "FILE.RESTORED": EventKind.CREATED.value,
        "FILE.TRASHED": EventKind.REMOVED.value,
        "FILE.DELETED": EventKind.REMOVED.value,
        "FILE.MOVED": METADATA_CHANGED,
        "FILE.RENAMED": METADATA_CHANGED,
        "FILE.LOCKED": METADATA_CHANGED,
        "FILE.UNLOCKED": METADATA_CHANGED,
        "FILE.PREVIEWED": _ACCESSED,
        "FILE.DOWNLOADED": _ACCESSED,
    }
)
"""Box ``trigger`` -> kind."""


def looks_like_box(document: object) -> bool:
    """Whether ``document`` has the shape of a Box webhook V2 body."""
    return (
        isinstance(document, dict)
        and document.get("type") == _EVENT_TYPE
        and isinstance(document.get("trigger"), str)
    )


def box_event_id(event_id: str) -> str:
    """The seqgate id of a Box event: ``box-`` + the webhook event's ``id``."""
    return f"box-{event_id}"


def _trigger(document: dict[object, object]) -> str:
    return supported_name(
        document,
        "trigger",
        "",
        BOX_TRIGGER_KINDS,
        f"seqgate maps the file triggers {', '.join(BOX_TRIGGER_KINDS)} (docs/kinds.md)",
    )


def _source(document: dict[object, object]) -> dict[object, object]:
    source = document.get("source")
    if source is None:
        raise RecordRejected(RejectReason.MISSING_FIELD, "source is missing: expected the file")
    if not isinstance(source, dict):
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"source must be a JSON object, got {show(source)}"
        )
    if source.get("type") != "file":
        found = source.get("type")
        detail = "is missing" if found is None else f"is {show(found)}"
        raise RecordRejected(
            RejectReason.UNSUPPORTED_EVENT_TYPE,
            f"source.type {detail}: seqgate handles Box files only (type 'file')",
        )
    return source


def _version(source: dict[object, object]) -> tuple[str | None, str | None]:
    """``(file_version.id, file_version.sha1)``, each None when absent."""
    version = source.get("file_version")
    if version is None:
        return None, None
    if not isinstance(version, dict):
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"source.file_version must be a JSON object when present, got {show(version)}",
        )
    path = "source.file_version"
    return optional_string(version, "id", path), optional_string(version, "sha1", path)


def _parse(document: dict[object, object], origin: str, bucket: str) -> ObjectEvent | Ignored:
    if document.get("trigger") == _WEBHOOK_DELETED:
        return Ignored("box_webhook_deleted", "Box reports that the webhook itself was deleted")
    trigger = _trigger(document)
    event_id = required_string(document, "id", "", "Box's id of the webhook event")
    check_text(event_id, "id")
    source = _source(document)
    key = required_id(source, "id", "source", "the file's id")
    version_id, version_sha1 = _version(source)
    sha1 = optional_string(source, "sha1", "source") or version_sha1
    checked_identity(BOX_SCHEME, bucket, key, "source.id")
    return ObjectEvent(
        id=box_event_id(event_id),
        source=BOX_SOURCE,
        bucket=bucket,
        key=key,
        kind=BOX_TRIGGER_KINDS[trigger],
        event_name=trigger,
        position=None,
        version_id=version_id,
        size=optional_count(source, "size", "source"),
        etag=sha1,
        event_time=optional_string(document, "created_at", ""),
        origin=origin,
    )


def parse_box(document: object, origin: str, *, bucket: str = BOX_BUCKET) -> ParseResult:
    """Normalize one Box webhook body (already JSON-decoded); never raises.

    ``bucket`` names the Box instance in identities (non-empty, no ``/``);
    raises ValueError otherwise, a configuration mistake.
    """
    if not bucket or "/" in bucket:
        raise ValueError(f"the Box bucket {bucket!r} must be non-empty and contain no '/'")
    if not isinstance(document, dict):
        return whole_message_rejection(
            f"expected a Box webhook event (a JSON object), got {show(document)}"
        )
    if document.get("type") != _EVENT_TYPE:
        found = document.get("type")
        detail = "has no 'type'" if found is None else f"has 'type' {show(found)}"
        return whole_message_rejection(
            f"the document {detail}: expected a Box webhook V2 event (type {_EVENT_TYPE!r})"
        )
    return result_or_rejection(lambda: ParseResult.of(_parse(document, origin, bucket)))
