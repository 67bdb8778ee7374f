"""Supabase Storage changes delivered by a database webhook on ``storage.objects``.

Supabase Storage keeps one row per object in the Postgres table
``storage.objects``; a database webhook on that table (a trigger that queues
an HTTP request through ``pg_net``) posts, after each row change::

    {"type": "INSERT" | "UPDATE" | "DELETE", "table": "objects", "schema": "storage",
     "record": {...} | null, "old_record": {...} | null}

with the row's columns: ``id`` (uuid), ``bucket_id``, ``name``, ``owner``,
``created_at``, ``updated_at``, ``last_accessed_at``, ``version``,
``metadata`` (``eTag``, ``size``, ``mimetype``, ``cacheControl``,
``lastModified``, ``contentLength``, ``httpStatusCode``), ``path_tokens``, ...

**Delivery is at most once.** Unlike every other source, a database webhook
is not retried: a request that fails (the bridge is down, a timeout, a 5xx)
is lost, not repeated. The cure is a reconciliation pass that lists the
bucket and compares it with what downstream knows; seqgate cannot recover a
lost request itself. The document carries no ordering marker either, so
``position`` is null and the source is dedupe-only (docs/design.md §3).

Identity (scheme ``supabase``): ``supabase://<bucket_id>/<name>``, the name
verbatim (a row holds the real name, nothing is encoded). Bucket ids never
contain ``/``.

How row changes map to events (one webhook normally gives one item):

* The Storage API writes an upload in two statements: it inserts the row
  with ``metadata`` null, stores the content, then updates the row with the
  content's metadata. A row whose ``metadata`` is null (or holds no
  ``eTag``) therefore names an upload that is not finished: *ignored*
  (``supabase_upload_pending``), because the update that completes it is the
  write. An INSERT with metadata (a copy, a direct insert) is ``created``.
* UPDATE that changes ``name`` or ``bucket_id`` is a move: ``removed`` for
  the old identity **and** ``created`` for the new one, two events from one
  webhook (a move is two changes of object state, and Supabase sends no other
  notice of either); both carry the new row's ``updated_at``.
* UPDATE of the same object whose ``version`` or ``metadata.eTag`` changed,
  or whose metadata was null before, is new content (an upsert overwrite, or
  the completion of an upload): ``created``.
* Any other UPDATE (``last_accessed_at``, ``owner``, user metadata) leaves
  content and name alone: ``metadata_changed``.
* DELETE -> ``removed`` from ``old_record``; its ``event_time`` is null, since
  a deleted row carries no deletion time.

Event id (docs/design.md §4.1): the row's ``version`` (a uuid the Storage API renews on
every upload) is Supabase's per-write marker, so the id is ``"supabase-"`` +
SHA-256 over kind, identity and ``<row id>:<version>``, the construction of
:func:`seqgate.schemas.identity.sequencer_event_id`. A row without a version falls
back to its ``updated_at`` and ETag, then to a hash of the row
(:func:`seqgate.connectors.parsers.s3.event_ids.fallback_event_id`). ``version_id`` is the row's
``version``, ``size`` ``metadata.size`` (else ``contentLength``), ``etag``
``metadata.eTag``, ``event_time`` ``updated_at`` (else ``created_at``).

Rules, in order (the first failure is the rejection, of the whole document):
the document is a JSON object (``not_a_notification``); ``schema`` is
``storage`` and ``table`` ``objects`` (``wrong_event_source``); ``type`` is
INSERT, UPDATE or DELETE (absent: ``missing_field``, not a string:
``invalid_field``, another value: ``unsupported_event_type``); the rows the
type needs are objects (``missing_field`` / ``invalid_field``); in each,
``id``, ``bucket_id`` and ``name`` are non-empty strings, ``bucket_id``
without ``/`` (``invalid_field``) and ``name`` valid text
(``invalid_key_encoding``); ``metadata`` an object or null, ``size`` a
non-negative integer (``invalid_field``).

Authentication: the webhook sends a shared secret in a header chosen when it
is created; :func:`seqgate.connectors.auth.supabase.verify_supabase_secret`
checks it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from seqgate.connectors.parsers.json_fields import (
    check_text,
    member_path,
    notification_object,
    optional_size,
    optional_string,
    required_member,
    required_string,
    show,
)
from seqgate.connectors.parsers.results import Ignored, ParsedItem, ParseResult, result_or_rejection
from seqgate.connectors.parsers.s3.event_ids import fallback_event_id
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.identity import object_identity, sequencer_event_id
from seqgate.schemas.kinds import CREATED, METADATA_CHANGED, REMOVED
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import SUPABASE_SOURCE

__all__ = [
    "SUPABASE_SCHEME",
    "looks_like_supabase",
    "parse_supabase",
    "supabase_event_id",
]


SUPABASE_SCHEME: Final = "supabase"
"""The identity scheme: ``supabase://<bucket_id>/<name>``."""


_ID_PREFIX: Final = "supabase-"
_INSERT: Final = "INSERT"
_UPDATE: Final = "UPDATE"
_DELETE: Final = "DELETE"
_TYPES: Final = (_INSERT, _UPDATE, _DELETE)
_ROW_EXPECTED: Final = "a JSON object (a storage.objects row)"


@dataclass(frozen=True, slots=True)
class _Row:
    """What seqgate reads from one ``storage.objects`` row."""

    row: dict[object, object]
    row_id: str
    bucket: str
    name: str
    version: str | None
    etag: str | None
    size: int | None
    has_content: bool
    updated_at: str | None

    @property
    def identity(self) -> str:
        return object_identity(SUPABASE_SCHEME, self.bucket, self.name)


# --------------------------------------------------------------------------- recognition


def looks_like_supabase(document: object) -> bool:
    """Whether ``document`` has the shape of a Supabase database webhook.

    A JSON object with ``type``, ``table`` and ``schema`` and a ``record`` or
    ``old_record`` member, whatever the table: a webhook on another table is
    recognized, then refused as ``wrong_event_source``.
    """
    return (
        isinstance(document, dict)
        and {"type", "table", "schema"} <= document.keys()
        and ("record" in document or "old_record" in document)
    )


def supabase_event_id(kind: str, identity: str, row_id: str, version: str) -> str:
    """The stable id of a Supabase event whose row has a ``version`` (docs/design.md §4.1).

    ``"supabase-"`` + the first 32 hex digits of SHA-256 over the kind, the
    identity and ``<row id>:<version>``, joined by U+001F.
    """
    return sequencer_event_id(_ID_PREFIX, kind, identity, f"{row_id}:{version}")


def _event_id(kind: str, row: _Row) -> str:
    if row.version is not None:
        return supabase_event_id(kind, row.identity, row.row_id, row.version)
    return fallback_event_id(
        _ID_PREFIX, kind, row.identity, None, row.updated_at, row.etag, row.row
    )


# --------------------------------------------------------------------------- rows


def _metadata(row: dict[object, object], path: str) -> dict[object, object] | None:
    metadata = row.get("metadata")
    if metadata is None or isinstance(metadata, dict):
        return metadata
    raise RecordRejected(
        RejectReason.INVALID_FIELD,
        f"{member_path(path, 'metadata')} must be a JSON object or null, got {show(metadata)}",
    )


def _read_row(document: dict[object, object], member: str) -> _Row:
    row = required_member(
        document, member, "", dict, missing=f"expected {_ROW_EXPECTED}", invalid=_ROW_EXPECTED
    )
    row_id = required_string(row, "id", member, "the row's uuid")
    bucket = required_string(row, "bucket_id", member, "the bucket id")
    name = required_string(row, "name", member, "the object's name")
    if "/" in bucket:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{member}.bucket_id {show(bucket)} contains '/': bucket ids never do",
        )
    check_text(bucket, f"{member}.bucket_id")
    try:
        check_text(name, f"{member}.name")
    except RecordRejected as rejected:
        raise RecordRejected(RejectReason.INVALID_KEY_ENCODING, rejected.message) from None
    check_text(row_id, f"{member}.id")
    metadata_path = member_path(member, "metadata")
    metadata = _metadata(row, member)
    etag = None if metadata is None else optional_string(metadata, "eTag", metadata_path)
    size = None
    if metadata is not None:
        size = optional_size(metadata, "size", metadata_path)
        if size is None:
            size = optional_size(metadata, "contentLength", metadata_path)
    updated_at = optional_string(row, "updated_at", member) or optional_string(
        row, "created_at", member
    )
    return _Row(
        row=row,
        row_id=row_id,
        bucket=bucket,
        name=name,
        version=optional_string(row, "version", member),
        etag=etag,
        size=size,
        has_content=etag is not None,
        updated_at=updated_at,
    )


def _event(
    kind: str, event_type: str, row: _Row, origin: str, event_time: str | None
) -> ObjectEvent:
    return ObjectEvent(
        id=_event_id(kind, row),
        source=SUPABASE_SOURCE,
        bucket=row.bucket,
        key=row.name,
        kind=kind,
        event_name=event_type,
        position=None,
        version_id=row.version,
        size=row.size,
        etag=row.etag,
        event_time=event_time,
        origin=origin,
    )


def _upload_pending(event_type: str, row: _Row) -> Ignored:
    return Ignored(
        "supabase_upload_pending",
        f"{event_type} of {row.identity} without content metadata: the Storage API records "
        "the upload's content in a later UPDATE, which is the write",
    )


# --------------------------------------------------------------------------- the webhook


def _event_type(document: dict[object, object]) -> str:
    event_type = required_member(
        document, "type", "", str, missing="expected INSERT, UPDATE or DELETE", invalid="a string"
    )
    if event_type not in _TYPES:
        raise RecordRejected(
            RejectReason.UNSUPPORTED_EVENT_TYPE,
            f"type {show(event_type)} is not supported: expected INSERT, UPDATE or DELETE",
        )
    return event_type


def _check_table(document: dict[object, object]) -> None:
    schema, table = document.get("schema"), document.get("table")
    if schema != "storage" or table != "objects":
        raise RecordRejected(
            RejectReason.WRONG_EVENT_SOURCE,
            f"the webhook is for table {show(schema)}.{show(table)}: seqgate reads webhooks on "
            "storage.objects (Supabase Storage); point other tables' webhooks elsewhere",
        )


def _update(document: dict[object, object], origin: str) -> tuple[ParsedItem, ...]:
    new, old = _read_row(document, "record"), _read_row(document, "old_record")
    moved = (new.bucket, new.name) != (old.bucket, old.name)
    if moved:
        removed = _event(REMOVED, _UPDATE, old, origin, new.updated_at)
        if not new.has_content:
            return (removed,)
        return removed, _event(CREATED, _UPDATE, new, origin, new.updated_at)
    if not new.has_content:
        return (_upload_pending(_UPDATE, new),)
    rewritten = not old.has_content or (new.version, new.etag) != (old.version, old.etag)
    kind = CREATED if rewritten else METADATA_CHANGED
    return (_event(kind, _UPDATE, new, origin, new.updated_at),)


def _parse(document: object, origin: str) -> tuple[ParsedItem, ...]:
    document = notification_object(document, "", "a Supabase database webhook")
    _check_table(document)
    event_type = _event_type(document)
    if event_type == _UPDATE:
        return _update(document, origin)
    if event_type == _DELETE:
        return (_event(REMOVED, _DELETE, _read_row(document, "old_record"), origin, None),)
    row = _read_row(document, "record")
    if not row.has_content:
        return (_upload_pending(_INSERT, row),)
    return (_event(CREATED, _INSERT, row, origin, row.updated_at),)


def parse_supabase(document: object, origin: str) -> ParseResult:
    """Normalize one Supabase database webhook (already JSON-decoded).

    Gives one item, or two events for a move (``removed`` then ``created``).
    A rejection is of the whole document (``record_index`` None). ``origin``
    is copied into each event. Never raises.
    """
    return result_or_rejection(lambda: ParseResult(_parse(document, origin)))
