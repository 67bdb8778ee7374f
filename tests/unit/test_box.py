"""Box webhooks V2 (seqgate/connectors/parsers/box.py)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

import pytest
from hypothesis import given, settings

from seqgate.connectors.auth.box import verify_box_signature
from seqgate.connectors.errors import WebhookAuthError
from seqgate.connectors.parsers.box import (
    BOX_BUCKET,
    BOX_TRIGGER_KINDS,
    looks_like_box,
    parse_box,
)
from seqgate.connectors.parsers.results import Ignored
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.builders import ABSENT, only_event, only_rejection
from tests.support.paths import FIXTURES as ALL_FIXTURES
from tests.support.webhook_samples import (
    body_bytes,
    box_event,
    box_headers,
    box_source,
    box_trashed_source,
    json_documents,
    new_key,
)

FIXTURES = ALL_FIXTURES / "box"
ORIGIN = "http:/box/webhook"
SENT_AT = "2026-11-25T02:00:01-08:00"
NOW = datetime.fromisoformat(SENT_AT).timestamp()


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def reject(document: Any) -> Rejection:
    rejection = only_rejection(parse_box(document, ORIGIN))
    assert rejection.record_index is None
    return rejection


# --------------------------------------------------------------------------- parsing


def test_upload_fixture() -> None:
    event = only_event(parse_box(fixture("file_uploaded.json"), ORIGIN))
    assert event == ObjectEvent(
        id="box-7c3a1f0e-5b2d-4e8a-9f61-2d0b8c4e7a13",
        source="box",
        bucket="files",
        key="1442259386371",
        kind="created",
        event_name="FILE.UPLOADED",
        position=None,
        version_id="1577392874771",
        size=629644,
        etag="85136c79cbf9fe36bb9d05d0639c70c265c18d37",
        event_time="2026-11-25T02:00:01-08:00",
        origin=ORIGIN,
    )
    assert BOX_BUCKET == "files"


@pytest.mark.parametrize("name", ["file_trashed.json", "file_deleted.json"])
def test_removals_with_a_bare_source_share_the_upload_identity(name: str) -> None:
    upload = only_event(parse_box(fixture("file_uploaded.json"), ORIGIN))
    removal = only_event(parse_box(fixture(name), ORIGIN))
    assert removal.kind == "removed"
    assert (removal.bucket, removal.key) == (upload.bucket, upload.key)
    assert (removal.size, removal.etag, removal.version_id) == (None, None, None)
    assert removal.id != upload.id


def test_rename_keeps_the_identity() -> None:
    event = only_event(parse_box(fixture("file_renamed.json"), ORIGIN))
    assert (event.kind, event.key, event.event_name) == (
        "metadata_changed",
        "1442259386371",
        "FILE.RENAMED",
    )


@pytest.mark.parametrize(
    ("trigger", "kind"),
    [
        ("FILE.UPLOADED", "created"),
        ("FILE.COPIED", "created"),
        ("FILE.RESTORED", "created"),
        ("FILE.TRASHED", "removed"),
        ("FILE.DELETED", "removed"),
        ("FILE.MOVED", "metadata_changed"),
        ("FILE.RENAMED", "metadata_changed"),
        ("FILE.LOCKED", "metadata_changed"),
        ("FILE.UNLOCKED", "metadata_changed"),
        ("FILE.PREVIEWED", "accessed"),
        ("FILE.DOWNLOADED", "accessed"),
    ],
)
def test_every_trigger_has_its_kind(trigger: str, kind: str) -> None:
    event = only_event(parse_box(box_event(trigger), ORIGIN))
    assert (event.kind, event.event_name, event.position) == (kind, trigger, None)
    assert BOX_TRIGGER_KINDS[trigger] == kind


def test_the_table_holds_exactly_the_tested_triggers() -> None:
    assert len(BOX_TRIGGER_KINDS) == 11


def test_folder_events_are_unsupported() -> None:
    rejection = reject(fixture("folder_created.json"))
    assert rejection.reason == RejectReason.UNSUPPORTED_EVENT_TYPE
    assert "FOLDER.CREATED" in rejection.message


def test_file_trigger_on_a_folder_source_is_unsupported() -> None:
    rejection = reject(box_event(source={"id": "9", "type": "folder"}))
    assert rejection.reason == RejectReason.UNSUPPORTED_EVENT_TYPE
    assert "source.type" in rejection.message


def test_webhook_deleted_is_ignored() -> None:
    result = parse_box(
        box_event("WEBHOOK.DELETED", source={"id": "5514817", "type": "webhook"}), ORIGIN
    )
    assert result.events == [] and result.rejections == []
    assert [item.reason for item in result.ignored] == ["box_webhook_deleted"]


def test_version_sha1_stands_in_for_a_missing_sha1() -> None:
    event = only_event(parse_box(box_event(source=box_source(sha1=ABSENT)), ORIGIN))
    assert event.etag == "85136c79cbf9fe36bb9d05d0639c70c265c18d37"


def test_another_bucket_can_be_configured() -> None:
    event = only_event(parse_box(box_event(), ORIGIN, bucket="acme-box"))
    assert event.bucket == "acme-box"
    for bad in ["", "a/b"]:
        with pytest.raises(ValueError):
            parse_box(box_event(), ORIGIN, bucket=bad)


@pytest.mark.parametrize(
    ("members", "reason", "needle"),
    [
        ({"trigger": ABSENT}, RejectReason.UNSUPPORTED_EVENT_TYPE, "trigger is missing"),
        ({"trigger": 3}, RejectReason.UNSUPPORTED_EVENT_TYPE, "must be a string"),
        ({"trigger": "COMMENT.CREATED"}, RejectReason.UNSUPPORTED_EVENT_TYPE, "COMMENT"),
        ({"id": ABSENT}, RejectReason.MISSING_FIELD, "id is missing"),
        ({"id": 42}, RejectReason.INVALID_FIELD, "id must be"),
        ({"source": ABSENT}, RejectReason.MISSING_FIELD, "source is missing"),
        ({"source": []}, RejectReason.INVALID_FIELD, "source must be"),
        ({"source": {"type": "file"}}, RejectReason.MISSING_FIELD, "source.id"),
        ({"source": {"id": "a/b", "type": "file"}}, RejectReason.INVALID_FIELD, "'/'"),
        ({"source": box_source(size=-4)}, RejectReason.INVALID_FIELD, "source.size"),
        ({"source": box_source(file_version="v1")}, RejectReason.INVALID_FIELD, "file_version"),
        ({"source": box_source(sha1=1)}, RejectReason.INVALID_FIELD, "source.sha1"),
        ({"created_at": 5}, RejectReason.INVALID_FIELD, "created_at"),
    ],
)
def test_invalid_events_are_rejected(
    members: dict[str, Any], reason: RejectReason, needle: str
) -> None:
    rejection = reject(box_event(**members))
    assert rejection.reason == reason
    assert needle in rejection.message


@pytest.mark.parametrize(
    ("document", "needle"),
    [("x", "got"), ({}, "has no 'type'"), ({"type": "event"}, "'type' \"event\"")],
)
def test_not_a_box_event(document: Any, needle: str) -> None:
    rejection = reject(document)
    assert rejection.reason == RejectReason.NOT_A_NOTIFICATION
    assert needle in rejection.message


def test_looks_like_box() -> None:
    assert looks_like_box(box_event())
    assert not looks_like_box({"type": "webhook_event"})
    assert not looks_like_box({"events": []})
    assert not looks_like_box(None)


@settings(max_examples=300, deadline=None)
@given(
    json_documents(
        "type",
        "webhook_event",
        "id",
        "trigger",
        "FILE.UPLOADED",
        "FILE.TRASHED",
        "source",
        "file",
        "sha1",
        "size",
        "file_version",
        "created_at",
        "WEBHOOK.DELETED",
    )
)
def test_arbitrary_json_yields_only_typed_results(document: Any) -> None:
    candidates = [document, {"type": "webhook_event", "trigger": "FILE.UPLOADED", "id": "i"}]
    if isinstance(document, dict):
        candidates.append({**document, "type": "webhook_event"})
        candidates.append(box_event(source=document))
    for doc in candidates:
        result = parse_box(doc, ORIGIN)
        assert len(result) == 1
        assert all(isinstance(i, ObjectEvent | Rejection | Ignored) for i in result.items)


# --------------------------------------------------------------------------- signatures


def signed(primary: str | None, secondary: str | None, timestamp: str = SENT_AT) -> Any:
    body = body_bytes(box_event())
    return body, box_headers(body, timestamp, primary, secondary)


def test_either_key_verifies() -> None:
    primary, secondary = new_key(), new_key()
    body, headers = signed(primary, secondary)
    verify_box_signature(body, headers, primary, secondary, NOW)
    verify_box_signature(body, headers, primary, None, NOW)
    verify_box_signature(body, headers, None, secondary, NOW)
    lower = {name.lower(): value for name, value in headers.items()}
    verify_box_signature(body, lower, primary, secondary, NOW + 599)


def test_rotation_old_primary_wrong_but_secondary_right() -> None:
    old_primary, secondary = new_key(), new_key()
    body, headers = signed(old_primary, secondary)
    verify_box_signature(body, headers, new_key(), secondary, NOW)


def test_keys_are_not_crossed() -> None:
    primary, secondary = new_key(), new_key()
    body, headers = signed(primary, secondary)
    with pytest.raises(WebhookAuthError) as raised:
        verify_box_signature(body, headers, secondary, primary, NOW)
    assert raised.value.status == 403


def test_forged_body_or_key() -> None:
    primary, secondary = new_key(), new_key()
    body, headers = signed(primary, secondary)
    for attempt_body, keys in [
        (body + b" ", (primary, secondary)),
        (body, (new_key(), new_key())),
    ]:
        with pytest.raises(WebhookAuthError) as raised:
            verify_box_signature(attempt_body, headers, *keys, NOW)
        assert raised.value.status == 403
        assert "no signature matches" in raised.value.message


def test_timestamp_is_signed() -> None:
    primary = new_key()
    body, headers = signed(primary, None)
    headers["BOX-DELIVERY-TIMESTAMP"] = "2026-11-25T02:00:02-08:00"
    with pytest.raises(WebhookAuthError) as raised:
        verify_box_signature(body, headers, primary, None, NOW)
    assert raised.value.status == 403


@pytest.mark.parametrize("offset", [601, -601, 86400])
def test_replayed_outside_the_window(offset: int) -> None:
    primary = new_key()
    body, headers = signed(primary, None)
    with pytest.raises(WebhookAuthError) as raised:
        verify_box_signature(body, headers, primary, None, NOW + offset)
    assert raised.value.status == 403
    assert "window" in raised.value.message


def test_missing_signatures_and_timestamp() -> None:
    primary = new_key()
    body, headers = signed(None, None)
    with pytest.raises(WebhookAuthError) as raised:
        verify_box_signature(body, headers, primary, None, NOW)
    assert raised.value.status == 401
    body, headers = signed(primary, None)
    del headers["BOX-DELIVERY-TIMESTAMP"]
    with pytest.raises(WebhookAuthError) as raised:
        verify_box_signature(body, headers, primary, None, NOW)
    assert raised.value.status == 401


@pytest.mark.parametrize(
    ("header", "value", "needle"),
    [
        ("BOX-SIGNATURE-VERSION", "2", "VERSION"),
        ("BOX-SIGNATURE-ALGORITHM", "HmacSHA1", "ALGORITHM"),
        ("BOX-DELIVERY-TIMESTAMP", "yesterday", "ISO 8601"),
        ("BOX-DELIVERY-TIMESTAMP", "2026-11-25T02:00:01", "ISO 8601"),
    ],
)
def test_unsupported_headers(header: str, value: str, needle: str) -> None:
    primary = new_key()
    body, headers = signed(primary, None)
    headers[header] = value
    with pytest.raises(WebhookAuthError) as raised:
        verify_box_signature(body, headers, primary, None, NOW)
    assert raised.value.status == 403
    assert needle.lower() in raised.value.message.lower()


def test_no_key_configured() -> None:
    body, headers = signed(new_key(), None)
    with pytest.raises(ValueError):
        verify_box_signature(body, headers, None, None, NOW)


def test_trashed_event_signature_round_trip() -> None:
    primary = new_key()
    body = body_bytes(box_event("FILE.TRASHED", source=box_trashed_source()))
    headers = box_headers(body, SENT_AT, primary, None)
    verify_box_signature(body, headers, primary, None, NOW)
    assert only_event(parse_box(json.loads(body), ORIGIN)).kind == "removed"
