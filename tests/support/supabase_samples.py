"""Supabase database webhooks on ``storage.objects``, for tests.

A webhook body is ``{"type", "table", "schema", "record", "old_record"}`` with
the rows of ``storage.objects``. Pass :data:`tests.support.builders.ABSENT` to leave a
member out.
"""

from __future__ import annotations

from typing import Any

from tests.support.builders import ABSENT

ROW_ID = "1f0c4a9e-2b7d-4c6a-8e5f-3d2c1b0a9f8e"
BUCKET = "avatars"
NAME = "users/42/profile photo+1 100%.png"
VERSION = "a3b1c9d2-6e4f-4f0a-9b8c-7d6e5f4a3b2c"
ETAG = '"c4ca4238a0b923820dcc509a6f75849b"'
CREATED_AT = "2026-11-25T10:00:00.123456+00:00"
UPDATED_AT = "2026-11-25T10:00:01.654321+00:00"


def object_metadata(*, etag: Any = ETAG, size: Any = 48213) -> dict[str, Any]:
    """The ``metadata`` column the Storage API writes once the content is stored."""
    members = {
        "eTag": etag,
        "size": size,
        "mimetype": "image/png",
        "cacheControl": "max-age=3600",
        "lastModified": "2026-11-25T10:00:01.000Z",
        "contentLength": size,
        "httpStatusCode": 200,
    }
    return {name: value for name, value in members.items() if value is not ABSENT}


def object_row(
    *,
    row_id: Any = ROW_ID,
    bucket: Any = BUCKET,
    name: Any = NAME,
    version: Any = VERSION,
    metadata: Any = None,
    updated_at: Any = UPDATED_AT,
) -> dict[str, Any]:
    """A ``storage.objects`` row; ``metadata=None`` gives the stored content's metadata."""
    tokens = name.split("/") if isinstance(name, str) else None
    members = {
        "id": row_id,
        "bucket_id": bucket,
        "name": name,
        "owner": "0b6e4c1a-58f2-4f0e-9d3c-2a1b0c9d8e7f",
        "owner_id": "0b6e4c1a-58f2-4f0e-9d3c-2a1b0c9d8e7f",
        "created_at": CREATED_AT,
        "updated_at": updated_at,
        "last_accessed_at": CREATED_AT,
        "metadata": object_metadata() if metadata is None else metadata,
        "user_metadata": {},
        "version": version,
        "path_tokens": tokens,
        "level": None if tokens is None else len(tokens),
    }
    return {name: value for name, value in members.items() if value is not ABSENT}


def pending_row(**fields: Any) -> dict[str, Any]:
    """The row the Storage API inserts before it stores the content: ``metadata`` null."""
    row = object_row(**fields)
    row["metadata"] = None
    return row


def webhook(
    event_type: Any,
    record: Any,
    old_record: Any,
    *,
    schema: Any = "storage",
    table: Any = "objects",
) -> dict[str, Any]:
    """A database webhook body."""
    members = {
        "type": event_type,
        "table": table,
        "record": record,
        "schema": schema,
        "old_record": old_record,
    }
    return {name: value for name, value in members.items() if value is not ABSENT}


def insert(record: Any = None) -> dict[str, Any]:
    return webhook("INSERT", object_row() if record is None else record, None)


def update(record: Any, old_record: Any) -> dict[str, Any]:
    return webhook("UPDATE", record, old_record)


def delete(old_record: Any = None) -> dict[str, Any]:
    return webhook("DELETE", None, object_row() if old_record is None else old_record)
