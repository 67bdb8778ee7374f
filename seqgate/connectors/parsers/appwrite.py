"""Appwrite Storage webhooks.

An Appwrite webhook POSTs the *document* the event is about, here a storage
file (``$id``, ``bucketId``, ``name``, ``signature``, ``mimeType``,
``sizeOriginal``, ``$createdAt``, ``$updatedAt``, ...), and names the action
only in the ``X-Appwrite-Webhook-Events`` header. The body alone cannot say
whether a file was created or deleted, so the HTTP route passes that header
to :func:`parse_appwrite`; :func:`looks_like_appwrite` recognizes the body of
a storage file for routing.

``X-Appwrite-Webhook-Events``
    A comma-separated list of every event pattern the action matches, from
    the concrete ``buckets.<bucketId>.files.<fileId>.create`` to wildcard and
    shortened forms (``buckets.*.files.*.create``, ``buckets.<bucketId>``,
    ...). Bucket and file ids may contain ``.``, so the header is not split
    on dots: the parser looks for the concrete entry built from the body's own
    ``bucketId`` and ``$id``, and refuses a header that names another file.
kinds
    ``create`` is ``created`` and ``delete`` is ``removed``. Appwrite files
    are immutable: ``update`` changes only the name or the permissions, so it
    is ``metadata_changed``. ``event_name`` is the concrete entry.
identity
    ``appwrite://<bucketId>/<file $id>``, source and scheme ``appwrite``. An
    Appwrite file is addressed by its id; its ``name`` is a label that need
    not be unique in the bucket and changes with ``update``. Bucket ids are
    unique within one project, so (as for MinIO deployments) one seqgate
    identity namespace serves one Appwrite project.
fields
    ``size`` is ``sizeOriginal``, ``etag`` the file's ``signature`` (the MD5
    of its content), ``event_time`` ``$updatedAt``; no version id.
ordering and id
    Nothing orders two events of one file: dedupe-only (docs/design.md §3),
    ``position`` None. Appwrite sends no per-event or per-delivery id:
    ``X-Appwrite-Webhook-Id`` is the id of the webhook *configuration*, the
    same on every request it ever sends, so it cannot tell events apart. The
    id is derived instead (docs/design.md §4.1): ``appwrite-`` + a hash of the kind, the
    identity, ``$createdAt``, ``$updatedAt`` and ``signature``, or of the
    whole document when none of the three is present.

Signature: :mod:`seqgate.connectors.auth.appwrite`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from seqgate.connectors.parsers.identity_check import checked_identity
from seqgate.connectors.parsers.json_fields import optional_string, show
from seqgate.connectors.parsers.results import (
    ParseResult,
    result_or_rejection,
    whole_message_rejection,
)
from seqgate.connectors.parsers.webhook_fields import derived_event_id, optional_count, required_id
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.kinds import METADATA_CHANGED, EventKind
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import APPWRITE_SOURCE

__all__ = [
    "APPWRITE_ACTION_KINDS",
    "APPWRITE_EVENTS_HEADER",
    "APPWRITE_SCHEME",
    "looks_like_appwrite",
    "parse_appwrite",
]

APPWRITE_SCHEME: Final = "appwrite"
APPWRITE_EVENTS_HEADER: Final = "X-Appwrite-Webhook-Events"

APPWRITE_ACTION_KINDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "create": EventKind.CREATED.value,
        "update": METADATA_CHANGED,
        "delete": EventKind.REMOVED.value,
    }
)
"""The last part of a concrete storage file event -> kind."""

_PREFIX: Final = "appwrite-"


def looks_like_appwrite(document: object) -> bool:
    """Whether ``document`` has the shape of an Appwrite storage file (``$id`` and ``bucketId``).

    The action travels in the ``X-Appwrite-Webhook-Events`` header, which the
    route passes to :func:`parse_appwrite`.
    """
    return (
        isinstance(document, dict)
        and isinstance(document.get("$id"), str)
        and isinstance(document.get("bucketId"), str)
    )


def _action(events: str | None, bucket: str, file_id: str) -> tuple[str, str]:
    """``(concrete event name, action)`` of the header naming this file."""
    if events is None or not events.strip():
        raise RecordRejected(
            RejectReason.MISSING_FIELD,
            f"the {APPWRITE_EVENTS_HEADER} header is missing: Appwrite names the action "
            "(create, update, delete) only there, and the route must pass it",
        )
    stem = f"buckets.{bucket}.files.{file_id}"
    entries = [entry.strip() for entry in events.split(",")]
    found = {
        entry: entry[len(stem) + 1 :]
        for entry in entries
        if entry.startswith(stem + ".") and entry[len(stem) + 1 :] in APPWRITE_ACTION_KINDS
    }
    if len(found) == 1:
        [(name, action)] = found.items()
        return name, action
    header = f"{APPWRITE_EVENTS_HEADER} {show(events)}"
    if len(found) > 1:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{header} names several actions on the file ({', '.join(sorted(found.values()))})"
            ": expected exactly one",
        )
    if any(entry.startswith(stem) for entry in entries):
        raise RecordRejected(
            RejectReason.UNSUPPORTED_EVENT_TYPE,
            f"{header} names an action on {stem} that is not supported: seqgate maps "
            f"{', '.join(APPWRITE_ACTION_KINDS)} (docs/kinds.md)",
        )
    if any(entry.startswith("buckets.") and ".files." in entry for entry in entries):
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{header} has no entry for the body's file {stem}: the header and the body "
            "disagree on the file",
        )
    raise RecordRejected(
        RejectReason.UNSUPPORTED_EVENT_TYPE,
        f"{header} is not a storage file event: seqgate maps "
        f"buckets.<bucketId>.files.<fileId>.{{{','.join(APPWRITE_ACTION_KINDS)}}}",
    )


def _parse(document: dict[object, object], origin: str, events: str | None) -> ObjectEvent:
    bucket = required_id(document, "bucketId", "", "the id of the file's bucket")
    file_id = required_id(document, "$id", "", "the file's id")
    name, action = _action(events, bucket, file_id)
    kind = APPWRITE_ACTION_KINDS[action]
    identity = checked_identity(APPWRITE_SCHEME, bucket, file_id, None)
    created_at = optional_string(document, "$createdAt", "")
    updated_at = optional_string(document, "$updatedAt", "")
    signature = optional_string(document, "signature", "")
    if created_at is None and updated_at is None and signature is None:
        material: list[object] = [kind, identity, "document", document]
    else:
        material = [kind, identity, "fields", created_at, updated_at, signature]
    return ObjectEvent(
        id=derived_event_id(_PREFIX, material),
        source=APPWRITE_SOURCE,
        bucket=bucket,
        key=file_id,
        kind=kind,
        event_name=name,
        position=None,
        version_id=None,
        size=optional_count(document, "sizeOriginal", ""),
        etag=signature,
        event_time=updated_at,
        origin=origin,
    )


def parse_appwrite(document: object, origin: str, *, events: str | None) -> ParseResult:
    """Normalize one Appwrite storage webhook (body already JSON-decoded); never raises.

    ``events`` is the value of the ``X-Appwrite-Webhook-Events`` header (None
    when the request had none).
    """
    if not isinstance(document, dict):
        return whole_message_rejection(
            f"expected an Appwrite storage file (a JSON object), got {show(document)}"
        )
    return result_or_rejection(lambda: ParseResult.of(_parse(document, origin, events)))
