"""Supabase Storage database webhooks on storage.objects
(seqgate/connectors/parsers/supabase.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.connectors.auth.supabase import verify_supabase_secret
from seqgate.connectors.errors import WebhookAuthError
from seqgate.connectors.parsers.results import Ignored, ParseResult
from seqgate.connectors.parsers.supabase import (
    looks_like_supabase,
    parse_supabase,
    supabase_event_id,
)
from seqgate.schemas.identity import parse_identity
from seqgate.schemas.kinds import METADATA_CHANGED
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support import supabase_samples as sb
from tests.support.builders import ABSENT, TRICKY_KEYS, only_event, only_rejection, sequencer_id
from tests.support.paths import FIXTURES as ALL_FIXTURES
from tests.support.strategies import json_documents

FIXTURES = ALL_FIXTURES / "supabase"
ORIGIN = "http:/supabase/storage"
IDENTITY = f"supabase://{sb.BUCKET}/{sb.NAME}"
NEW_VERSION = "e9d8c7b6-a5f4-4e3d-8c2b-1a0f9e8d7c6b"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def expected_id(
    kind: str, identity: str, row_id: str = sb.ROW_ID, version: str = sb.VERSION
) -> str:
    return sequencer_id("supabase-", kind, identity, f"{row_id}:{version}")


def identity(event: ObjectEvent) -> str:
    return f"{event.source}://{event.bucket}/{event.key}"


def only_ignored(result: ParseResult) -> Ignored:
    assert result.events == [] and result.rejections == [], result
    [ignored] = result.ignored
    return ignored


def only_events(result: ParseResult) -> list[ObjectEvent]:
    assert result.rejections == [] and result.ignored == []
    return result.events


def reject(document: Any) -> Rejection:
    rejection = only_rejection(parse_supabase(document, ORIGIN))
    assert rejection.record_index is None
    return rejection


# --------------------------------------------------------------------------- kinds


def test_insert_with_content_is_created() -> None:
    event = only_event(parse_supabase(sb.insert(), ORIGIN))
    assert event == ObjectEvent(
        id=expected_id("created", IDENTITY),
        source="supabase",
        bucket=sb.BUCKET,
        key=sb.NAME,
        kind="created",
        event_name="INSERT",
        position=None,
        version_id=sb.VERSION,
        size=48213,
        etag=sb.ETAG,
        event_time=sb.UPDATED_AT,
        origin=ORIGIN,
    )
    assert parse_identity(identity(event)) == ("supabase", sb.BUCKET, sb.NAME)
    assert event.id == supabase_event_id("created", IDENTITY, sb.ROW_ID, sb.VERSION)


def test_upload_is_an_insert_then_the_update_that_stores_metadata() -> None:
    pending = only_ignored(parse_supabase(load("insert_pending_upload.json"), ORIGIN))
    assert pending.reason == "supabase_upload_pending"
    assert pending.record_index is None
    completed = only_event(parse_supabase(load("update_upload_completed.json"), ORIGIN))
    assert (completed.kind, completed.event_name, completed.size) == ("created", "UPDATE", 48213)
    # The same write announced by an INSERT with metadata gets the same id.
    assert completed.id == only_event(parse_supabase(sb.insert(), ORIGIN)).id


def test_overwrite_is_created_with_a_new_id() -> None:
    first = only_event(parse_supabase(sb.insert(), ORIGIN))
    overwrite = only_event(parse_supabase(load("update_overwrite.json"), ORIGIN))
    assert (overwrite.kind, overwrite.version_id, overwrite.size) == ("created", NEW_VERSION, 51002)
    assert overwrite.id == expected_id("created", IDENTITY, version=NEW_VERSION)
    assert overwrite.id != first.id


def test_changed_etag_alone_is_new_content() -> None:
    record = sb.object_row(metadata=sb.object_metadata(etag='"other"'))
    event = only_event(parse_supabase(sb.update(record, sb.object_row()), ORIGIN))
    assert event.kind == "created"


def test_metadata_only_update() -> None:
    event = only_event(parse_supabase(load("update_metadata_only.json"), ORIGIN))
    assert event.kind == METADATA_CHANGED == "metadata_changed"
    assert event.event_time == "2026-11-26T09:30:00.000000+00:00"


def test_move_is_removed_then_created() -> None:
    result = parse_supabase(load("update_move.json"), ORIGIN)
    assert result.rejections == [] and result.ignored == []
    removed, created = result.events
    new_name = "users/42/archive/profile photo+1 100%.png"
    assert (removed.kind, removed.key) == ("removed", sb.NAME)
    assert (created.kind, created.key) == ("created", new_name)
    assert removed.id == expected_id("removed", IDENTITY)
    assert created.id == expected_id("created", f"supabase://{sb.BUCKET}/{new_name}")
    assert removed.event_time == created.event_time == "2026-11-26T09:00:00.000000+00:00"


def test_move_to_another_bucket() -> None:
    document = sb.update(sb.object_row(bucket="archive"), sb.object_row())
    removed, created = parse_supabase(document, ORIGIN).events
    assert (removed.bucket, created.bucket) == (sb.BUCKET, "archive")


def test_move_of_a_pending_upload_reports_only_the_removal() -> None:
    document = sb.update(sb.pending_row(name="elsewhere.png"), sb.pending_row())
    [removed] = only_events(parse_supabase(document, ORIGIN))
    assert removed.kind == "removed"


def test_update_to_pending_content_is_ignored() -> None:
    document = sb.update(sb.pending_row(version=NEW_VERSION), sb.object_row())
    assert only_ignored(parse_supabase(document, ORIGIN)).reason == "supabase_upload_pending"


def test_delete_is_removed_from_old_record() -> None:
    event = only_event(parse_supabase(load("delete.json"), ORIGIN))
    assert (event.kind, event.event_name, event.key) == ("removed", "DELETE", sb.NAME)
    assert (event.event_time, event.position, event.etag) == (None, None, sb.ETAG)
    assert event.id == expected_id("removed", IDENTITY)


def test_delete_of_a_pending_upload_is_still_removed() -> None:
    event = only_event(parse_supabase(sb.delete(sb.pending_row()), ORIGIN))
    assert (event.kind, event.etag, event.size) == ("removed", None, None)


def test_insert_copy_fixture() -> None:
    event = only_event(parse_supabase(load("insert_copy.json"), ORIGIN))
    assert (event.kind, event.key) == ("created", "users/42/profile photo copy.png")


@pytest.mark.parametrize("name", TRICKY_KEYS)
def test_names_are_kept_verbatim(name: str) -> None:
    event = only_event(parse_supabase(sb.insert(sb.object_row(name=name)), ORIGIN))
    assert event.key == name
    assert parse_identity(identity(event)) == ("supabase", sb.BUCKET, name)


def test_size_falls_back_to_content_length() -> None:
    metadata = sb.object_metadata()
    del metadata["size"]
    metadata["contentLength"] = 7
    event = only_event(parse_supabase(sb.insert(sb.object_row(metadata=metadata)), ORIGIN))
    assert event.size == 7


# --------------------------------------------------------------------------- event ids


def test_redelivery_gets_the_same_id() -> None:
    ids = {only_event(parse_supabase(sb.insert(), origin)).id for origin in ("a", "b")}
    assert len(ids) == 1


def test_row_without_version_falls_back_to_a_stable_id() -> None:
    row = sb.object_row(version=ABSENT)
    first = only_event(parse_supabase(sb.insert(row), ORIGIN))
    again = only_event(parse_supabase(sb.insert(sb.object_row(version=None)), ORIGIN))
    assert first.id == again.id
    assert first.id.startswith("supabase-") and len(first.id) == len("supabase-") + 32
    assert first.version_id is None
    later = sb.object_row(version=ABSENT, updated_at="2026-12-01T00:00:00+00:00")
    assert only_event(parse_supabase(sb.insert(later), ORIGIN)).id != first.id


def test_ids_differ_by_kind_and_identity() -> None:
    ids = {
        expected_id("created", IDENTITY),
        expected_id("removed", IDENTITY),
        expected_id("created", "supabase://other/" + sb.NAME),
    }
    assert len(ids) == 3


# --------------------------------------------------------------------------- rejections


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ([], RejectReason.NOT_A_NOTIFICATION),
        ("INSERT", RejectReason.NOT_A_NOTIFICATION),
        (None, RejectReason.NOT_A_NOTIFICATION),
        (sb.webhook("INSERT", sb.object_row(), None, table="profiles"), "wrong_event_source"),
        (sb.webhook("INSERT", sb.object_row(), None, schema="public"), "wrong_event_source"),
        (sb.webhook("INSERT", sb.object_row(), None, schema=ABSENT), "wrong_event_source"),
        (sb.webhook("TRUNCATE", None, None), "unsupported_event_type"),
        (sb.webhook("insert", sb.object_row(), None), "unsupported_event_type"),
        (sb.webhook(ABSENT, sb.object_row(), None), "missing_field"),
        (sb.webhook(1, sb.object_row(), None), "invalid_field"),
        (sb.webhook("INSERT", None, None), "missing_field"),
        (sb.webhook("INSERT", [sb.object_row()], None), "invalid_field"),
        (sb.webhook("DELETE", sb.object_row(), None), "missing_field"),
        (sb.webhook("UPDATE", sb.object_row(), None), "missing_field"),
        (sb.webhook("UPDATE", None, sb.object_row()), "missing_field"),
        (sb.insert(sb.object_row(row_id=ABSENT)), "missing_field"),
        (sb.insert(sb.object_row(bucket="")), "missing_field"),
        (sb.insert(sb.object_row(bucket="a/b")), "invalid_field"),
        (sb.insert(sb.object_row(bucket=3)), "invalid_field"),
        (sb.insert(sb.object_row(name=ABSENT)), "missing_field"),
        (sb.insert(sb.object_row(name=["a"])), "invalid_field"),
        (sb.insert(sb.object_row(name="bad\udc00name")), "invalid_key_encoding"),
        (sb.insert(sb.object_row(metadata="{}")), "invalid_field"),
        (sb.insert(sb.object_row(metadata=sb.object_metadata(size=-1))), "invalid_field"),
        (sb.insert(sb.object_row(metadata=sb.object_metadata(etag=5))), "invalid_field"),
        (sb.insert(sb.object_row(version=7)), "invalid_field"),
        (sb.insert(sb.object_row(updated_at=7)), "invalid_field"),
    ],
)
def test_rejections(document: Any, reason: str) -> None:
    assert reject(document).reason == reason


def test_rejection_messages_name_the_field() -> None:
    message = reject(sb.insert(sb.object_row(bucket="a/b"))).message
    assert message.startswith("record.bucket_id ")
    message = reject(sb.insert(sb.object_row(metadata=sb.object_metadata(size="1")))).message
    assert message.startswith("record.metadata.size ")


# --------------------------------------------------------------------------- recognition


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (sb.insert(), True),
        (sb.delete(), True),
        (sb.webhook("INSERT", {}, None, table="profiles", schema="public"), True),
        ({"type": "INSERT", "table": "objects", "schema": "storage"}, False),
        ({"type": "Microsoft.Storage.BlobCreated", "specversion": "1.0"}, False),
        ({"Records": []}, False),
        ([sb.insert()], False),
        (None, False),
    ],
)
def test_looks_like_supabase(document: Any, expected: bool) -> None:
    assert looks_like_supabase(document) is expected


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda path: path.name)
def test_every_fixture_is_recognized(path: Path) -> None:
    assert looks_like_supabase(json.loads(path.read_text(encoding="utf-8")))


# --------------------------------------------------------------------------- secret


def test_secret_accepted() -> None:
    verify_supabase_secret("s3cret", "s3cret")


@pytest.mark.parametrize("header", [None, ""])
def test_secret_missing(header: str | None) -> None:
    with pytest.raises(WebhookAuthError) as raised:
        verify_supabase_secret(header, "s3cret")
    assert raised.value.status == 401


@pytest.mark.parametrize("header", ["wrong", "S3CRET", "s3cret ", "s3cre", "é"])
def test_secret_wrong(header: str) -> None:
    with pytest.raises(WebhookAuthError) as raised:
        verify_supabase_secret(header, "s3cret")
    assert raised.value.status == 403


def test_secret_must_be_configured() -> None:
    with pytest.raises(ValueError, match="no shared secret"):
        verify_supabase_secret("x", "")


# --------------------------------------------------------------------------- properties

json_values = json_documents(
    [
        "type",
        "table",
        "schema",
        "record",
        "old_record",
        "id",
        "bucket_id",
        "name",
        "version",
        "metadata",
        "eTag",
        "size",
        "updated_at",
    ],
    ["INSERT", "UPDATE", "DELETE", "storage", "objects", sb.NAME],
)


def check_typed(result: ParseResult) -> None:
    assert isinstance(result, ParseResult)
    assert 1 <= len(result) <= 2
    for item in result.items:
        assert isinstance(item, ObjectEvent | Rejection | Ignored)
        if isinstance(item, Rejection):
            assert isinstance(item.reason, RejectReason)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_arbitrary_json_gives_typed_results(document: Any) -> None:
    check_typed(parse_supabase(document, ORIGIN))
    looks_like_supabase(document)


@settings(max_examples=300, deadline=None)
@given(
    st.sampled_from(["INSERT", "UPDATE", "DELETE"]),
    st.dictionaries(
        st.sampled_from(["id", "bucket_id", "name", "version", "metadata"]), json_values
    ),
    st.dictionaries(
        st.sampled_from(["id", "bucket_id", "name", "version", "metadata"]), json_values
    ),
)
def test_damaged_rows_give_typed_results(
    event_type: str, new: dict[str, Any], old: dict[str, Any]
) -> None:
    document = sb.webhook(event_type, sb.object_row() | new, sb.object_row() | old)
    check_typed(parse_supabase(document, ORIGIN))
