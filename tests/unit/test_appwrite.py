"""Appwrite Storage webhooks (seqgate/connectors/parsers/appwrite.py)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any

import pytest
from hypothesis import given, settings

from seqgate.connectors.auth.appwrite import verify_appwrite_signature
from seqgate.connectors.errors import WebhookAuthError
from seqgate.connectors.parsers.appwrite import (
    APPWRITE_ACTION_KINDS,
    looks_like_appwrite,
    parse_appwrite,
)
from seqgate.connectors.parsers.results import Ignored
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.builders import ABSENT, only_event, only_rejection
from tests.support.paths import FIXTURES as ALL_FIXTURES
from tests.support.webhook_samples import (
    APPWRITE_URL,
    appwrite_events,
    appwrite_file,
    appwrite_signature,
    body_bytes,
    json_documents,
    new_key,
)

FIXTURES = ALL_FIXTURES / "appwrite"
ORIGIN = "http:/appwrite/storage"
BUCKET = "avatars"
FILE_ID = "6745a1b2c3d4e5f60718"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def header(action: str, bucket: str = BUCKET, file_id: str = FILE_ID) -> str:
    return appwrite_events(bucket, file_id, action)


def reject(document: Any, events: str | None) -> Rejection:
    rejection = only_rejection(parse_appwrite(document, ORIGIN, events=events))
    assert rejection.record_index is None
    return rejection


# --------------------------------------------------------------------------- parsing


def test_create_fixture() -> None:
    event = only_event(parse_appwrite(fixture("file_create.json"), ORIGIN, events=header("create")))
    assert event.id.startswith("appwrite-") and len(event.id) == len("appwrite-") + 32
    assert event == ObjectEvent(
        id=event.id,
        source="appwrite",
        bucket="avatars",
        key="6745a1b2c3d4e5f60718",
        kind="created",
        event_name="buckets.avatars.files.6745a1b2c3d4e5f60718.create",
        position=None,
        version_id=None,
        size=48213,
        etag="5d41402abc4b2a76b9719d911017c592",
        event_time="2026-11-25T10:00:00.123+00:00",
        origin=ORIGIN,
    )


@pytest.mark.parametrize(
    ("action", "kind"),
    [("create", "created"), ("update", "metadata_changed"), ("delete", "removed")],
)
def test_every_action_has_its_kind(action: str, kind: str) -> None:
    event = only_event(parse_appwrite(appwrite_file(), ORIGIN, events=header(action)))
    assert (event.kind, event.event_name) == (kind, f"buckets.{BUCKET}.files.{FILE_ID}.{action}")
    assert APPWRITE_ACTION_KINDS[action] == kind


def test_ids_are_stable_and_distinct() -> None:
    create = parse_appwrite(fixture("file_create.json"), ORIGIN, events=header("create"))
    again = parse_appwrite(fixture("file_create.json"), "elsewhere", events=header("create"))
    delete = parse_appwrite(fixture("file_delete.json"), ORIGIN, events=header("delete"))
    update = parse_appwrite(
        appwrite_file(**{"$updatedAt": "2026-11-25T11:00:00.000+00:00"}),
        ORIGIN,
        events=header("update"),
    )
    assert create.events[0].id == again.events[0].id
    ids = {r.events[0].id for r in (create, delete, update)}
    assert len(ids) == 3


def test_id_without_timestamps_or_signature_uses_the_document() -> None:
    bare = {"$createdAt": ABSENT, "$updatedAt": ABSENT, "signature": ABSENT}
    one = only_event(parse_appwrite(appwrite_file(**bare), ORIGIN, events=header("create")))
    two = only_event(
        parse_appwrite(appwrite_file(**bare, name="other.png"), ORIGIN, events=header("create"))
    )
    assert one.id != two.id


def test_ids_with_dots_are_matched_whole() -> None:
    document = appwrite_file(**{"$id": "file.v2", "bucketId": "my.bucket"})
    event = only_event(
        parse_appwrite(document, ORIGIN, events=header("delete", "my.bucket", "file.v2"))
    )
    assert (event.bucket, event.key, event.kind) == ("my.bucket", "file.v2", "removed")


def test_header_with_spaces_after_commas() -> None:
    events = ", ".join(header("create").split(","))
    assert only_event(parse_appwrite(appwrite_file(), ORIGIN, events=events)).kind == "created"


@pytest.mark.parametrize(
    ("events", "reason", "needle"),
    [
        (None, RejectReason.MISSING_FIELD, "header is missing"),
        ("  ", RejectReason.MISSING_FIELD, "header is missing"),
        (header("create", file_id="another"), RejectReason.INVALID_FIELD, "disagree"),
        (header("create", bucket="other"), RejectReason.INVALID_FIELD, "disagree"),
        ("users.1.create,users.*.create", RejectReason.UNSUPPORTED_EVENT_TYPE, "not a storage"),
        (
            f"buckets.{BUCKET}.files.{FILE_ID}.create,buckets.{BUCKET}.files.{FILE_ID}.delete",
            RejectReason.INVALID_FIELD,
            "several actions",
        ),
        (
            f"buckets.{BUCKET}.files.{FILE_ID}.preview,buckets.{BUCKET}.files.{FILE_ID}",
            RejectReason.UNSUPPORTED_EVENT_TYPE,
            "not supported",
        ),
    ],
)
def test_header_problems(events: str | None, reason: RejectReason, needle: str) -> None:
    rejection = reject(appwrite_file(), events)
    assert rejection.reason == reason
    assert needle in rejection.message


@pytest.mark.parametrize(
    ("members", "reason", "needle"),
    [
        ({"$id": ABSENT}, RejectReason.MISSING_FIELD, "$id"),
        ({"bucketId": ""}, RejectReason.MISSING_FIELD, "bucketId"),
        ({"bucketId": 4}, RejectReason.INVALID_FIELD, "bucketId"),
        ({"$id": "a/b"}, RejectReason.INVALID_FIELD, "'/'"),
        ({"sizeOriginal": -2}, RejectReason.INVALID_FIELD, "sizeOriginal"),
        ({"signature": {}}, RejectReason.INVALID_FIELD, "signature"),
        ({"$updatedAt": 7}, RejectReason.INVALID_FIELD, "$updatedAt"),
    ],
)
def test_invalid_documents(members: dict[str, Any], reason: RejectReason, needle: str) -> None:
    rejection = reject(appwrite_file(**members), header("create"))
    assert rejection.reason == reason
    assert needle in rejection.message


def test_not_an_object() -> None:
    rejection = reject(["x"], header("create"))
    assert rejection.reason == RejectReason.NOT_A_NOTIFICATION


def test_looks_like_appwrite() -> None:
    assert looks_like_appwrite(appwrite_file())
    assert not looks_like_appwrite({"$id": "x"})
    assert not looks_like_appwrite({"notification_type": "upload"})
    assert not looks_like_appwrite(None)


@settings(max_examples=300, deadline=None)
@given(
    json_documents(
        "$id",
        "bucketId",
        "signature",
        "sizeOriginal",
        "$createdAt",
        "$updatedAt",
        "name",
        BUCKET,
        FILE_ID,
    )
)
def test_arbitrary_json_yields_only_typed_results(document: Any) -> None:
    candidates = [document]
    if isinstance(document, dict):
        candidates.append({**document, "$id": FILE_ID, "bucketId": BUCKET})
    for doc in candidates:
        for events in (None, header("create"), header("delete"), "x,,y"):
            result = parse_appwrite(doc, ORIGIN, events=events)
            assert len(result) == 1
            assert all(isinstance(i, ObjectEvent | Rejection | Ignored) for i in result.items)


@settings(max_examples=200, deadline=None)
@given(
    json_documents(
        "buckets",
        "files",
        "create",
        "*",
        BUCKET,
        FILE_ID,
        ".",
    )
)
def test_arbitrary_header_text_never_raises(value: Any) -> None:
    result = parse_appwrite(appwrite_file(), ORIGIN, events=str(value))
    assert len(result) == 1


# --------------------------------------------------------------------------- signature


def test_valid_signature() -> None:
    key = new_key()
    body = body_bytes(appwrite_file())
    verify_appwrite_signature(APPWRITE_URL, body, appwrite_signature(APPWRITE_URL, body, key), key)


def test_the_url_is_signed_percent_decoded() -> None:
    # Appwrite signs rawurldecode(url): %20 becomes a space, a '+' stays a '+'.
    key = new_key()
    body = b"{}"
    url = "https://h.example/a%20b+c"
    by_hand = base64.b64encode(
        hmac.new(key.encode(), b"https://h.example/a b+c" + body, hashlib.sha1).digest()
    ).decode()
    verify_appwrite_signature(url, body, by_hand, key)


def test_forged_signatures() -> None:
    key = new_key()
    body = body_bytes(appwrite_file())
    good = appwrite_signature(APPWRITE_URL, body, key)
    attempts = [
        (APPWRITE_URL, body + b" ", good, key),
        (
            "https://evil.example/hook",
            body,
            appwrite_signature("https://evil.example/hook", body, new_key()),
            key,
        ),
        (APPWRITE_URL, body, good, new_key()),
        (APPWRITE_URL + "x", body, good, key),
    ]
    for url, attempt_body, signature, attempt_key in attempts:
        with pytest.raises(WebhookAuthError) as raised:
            verify_appwrite_signature(url, attempt_body, signature, attempt_key)
        assert raised.value.status == 403
        assert "does not match" in raised.value.message


@pytest.mark.parametrize("value", [None, "", " "])
def test_missing_signature(value: str | None) -> None:
    with pytest.raises(WebhookAuthError) as raised:
        verify_appwrite_signature(APPWRITE_URL, b"{}", value, new_key())
    assert raised.value.status == 401
    assert "X-Appwrite-Webhook-Signature" in raised.value.message


def test_replay_verifies_and_dedupes_on_the_derived_id() -> None:
    # No timestamp is signed: a replayed request verifies and gets the same event id.
    key = new_key()
    body = body_bytes(appwrite_file())
    signature = appwrite_signature(APPWRITE_URL, body, key)
    ids = []
    for _ in range(2):
        verify_appwrite_signature(APPWRITE_URL, body, signature, key)
        ids.append(only_event(parse_appwrite(json.loads(body), ORIGIN, events=header("create"))).id)
    assert ids[0] == ids[1]
