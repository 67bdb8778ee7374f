"""Backblaze B2 event notifications (seqgate/connectors/parsers/b2.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings

from seqgate.connectors.auth.b2 import verify_b2_signature
from seqgate.connectors.errors import WebhookAuthError
from seqgate.connectors.parsers.b2 import (
    B2_EVENT_KINDS,
    B2_UNMAPPED_TYPES,
    looks_like_b2,
    parse_b2,
)
from seqgate.connectors.parsers.results import Ignored
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.builders import ABSENT, only_event, only_rejection
from tests.support.paths import FIXTURES as ALL_FIXTURES
from tests.support.webhook_samples import (
    b2_body,
    b2_event,
    b2_signature,
    body_bytes,
    json_documents,
    new_key,
)

FIXTURES = ALL_FIXTURES / "b2"
ORIGIN = "http:/b2/events"


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def parse_one(**members: Any) -> ObjectEvent:
    return only_event(parse_b2(b2_body(b2_event(**members)), ORIGIN))


def reject_one(**members: Any) -> Rejection:
    rejection = only_rejection(parse_b2(b2_body(b2_event(**members)), ORIGIN))
    assert rejection.record_index == 0
    return rejection


# --------------------------------------------------------------------------- parsing


def test_upload_fixture() -> None:
    event = only_event(parse_b2(fixture("object_created_upload.json"), ORIGIN))
    assert event == ObjectEvent(
        id="b2-c0a4ee2e-8d76-4d54-b6d4-8f5e1f6b9a01",
        source="b2",
        bucket="example-photos",
        key="2026/summer trip/beach+sunset.jpg",
        kind="created",
        event_name="b2:ObjectCreated:Upload",
        position=None,
        version_id="4_zaea8c5bc362ae55070130333_f1000000000000001_d20261125_m100000"
        "_c000_v0001000_t0001",
        size=2457600,
        etag="f6c2ec3b5ddf5bbf4a1b6bb0e6ab7e3d0d4bd1b2",
        event_time="2025-11-25T10:00:00.123Z",
        origin=ORIGIN,
    )


@pytest.mark.parametrize(
    ("event_type", "kind"),
    [
        ("b2:ObjectCreated:Upload", "created"),
        ("b2:ObjectCreated:MultipartUpload", "created"),
        ("b2:ObjectCreated:Copy", "created"),
        ("b2:ObjectCreated:Replica", "created"),
        ("b2:ObjectCreated:MultipartReplica", "created"),
        ("b2:ObjectDeleted:Delete", "version_removed"),
        ("b2:ObjectDeleted:LifecycleRule", "version_removed"),
        ("b2:HideMarkerCreated:Hide", "removed"),
        ("b2:HideMarkerCreated:LifecycleRule", "removed"),
    ],
)
def test_every_event_type_has_its_kind(event_type: str, kind: str) -> None:
    event = parse_one(eventType=event_type)
    assert (event.kind, event.event_name, event.position) == (kind, event_type, None)
    assert B2_EVENT_KINDS[event_type] == kind


def test_the_table_holds_exactly_the_tested_types() -> None:
    assert len(B2_EVENT_KINDS) == 9


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("object_deleted_delete.json", "version_removed"),
        ("hide_marker_created_hide.json", "removed"),
    ],
)
def test_removal_fixtures(name: str, kind: str) -> None:
    event = only_event(parse_b2(fixture(name), ORIGIN))
    assert event.kind == kind
    assert (event.size, event.etag) == ((0 if kind == "removed" else None), None)


def test_several_events_per_request_each_keep_their_index() -> None:
    good = b2_event(eventId="one")
    bad = b2_event(eventId="two", bucketName=ABSENT)
    test = b2_event(eventId="three", eventType="b2:TestEvent")
    unknown = b2_event(eventId="four", eventType="b2:Nope")
    last = b2_event(eventId="five", objectName="z.txt")
    result = parse_b2(b2_body(good, bad, test, unknown, last), ORIGIN)
    assert len(result) == 5
    assert [event.id for event in result.events] == ["b2-one", "b2-five"]
    assert [(r.reason, r.record_index) for r in result.rejections] == [
        (RejectReason.MISSING_FIELD, 1),
        (RejectReason.UNSUPPORTED_EVENT_TYPE, 3),
    ]
    assert result.ignored == [Ignored("b2_test_event", result.ignored[0].message, 2)]


def test_batch_fixture() -> None:
    result = parse_b2(fixture("batch_mixed.json"), ORIGIN)
    assert result.rejections == []
    assert [(e.id, e.kind, e.etag) for e in result.events] == [
        ("b2-b2e-0001", "created", None),  # contentSha1 "none": a large file
        ("b2-b2e-0002", "removed", None),
        ("b2-b2e-0003", "version_removed", None),
    ]


def test_test_event_is_ignored() -> None:
    result = parse_b2(fixture("test_event.json"), ORIGIN)
    assert result.events == [] and result.rejections == []
    [ignored] = result.ignored
    assert (ignored.reason, ignored.record_index) == ("b2_test_event", 0)


def test_keys_are_verbatim() -> None:
    for key in ["a%2Fb", "100%25+x", " spaced ", "写真/猫.jpg", "\U0001f600"]:
        assert parse_one(objectName=key).key == key


def test_optional_members_may_be_absent() -> None:
    event = parse_one(
        objectVersionId=ABSENT, objectSize=ABSENT, contentSha1=ABSENT, eventTimestamp=ABSENT
    )
    assert (event.version_id, event.size, event.etag, event.event_time) == (None,) * 4


@pytest.mark.parametrize(
    ("members", "reason", "needle"),
    [
        ({"eventType": ABSENT}, RejectReason.UNSUPPORTED_EVENT_TYPE, "eventType is missing"),
        ({"eventType": 7}, RejectReason.UNSUPPORTED_EVENT_TYPE, "must be a string"),
        (
            {"eventType": "b2:MultipartUploadCreated:LiveRead"},
            RejectReason.UNSUPPORTED_EVENT_TYPE,
            "not complete yet",
        ),
        ({"eventVersion": 2}, RejectReason.UNSUPPORTED_SCHEMA_VERSION, "is number 2"),
        ({"eventVersion": "1"}, RejectReason.UNSUPPORTED_SCHEMA_VERSION, '"1"'),
        ({"eventVersion": True}, RejectReason.UNSUPPORTED_SCHEMA_VERSION, "boolean"),
        ({"eventVersion": ABSENT}, RejectReason.UNSUPPORTED_SCHEMA_VERSION, "missing"),
        ({"eventId": ABSENT}, RejectReason.MISSING_FIELD, "eventId"),
        ({"eventId": 5}, RejectReason.INVALID_FIELD, "eventId"),
        ({"bucketName": ""}, RejectReason.MISSING_FIELD, "bucketName"),
        ({"bucketName": "a/b"}, RejectReason.INVALID_FIELD, "contains '/'"),
        ({"objectName": ABSENT}, RejectReason.MISSING_FIELD, "objectName"),
        ({"objectName": "bad \ud800"}, RejectReason.INVALID_FIELD, "lone surrogate"),
        ({"objectSize": -1}, RejectReason.INVALID_FIELD, "objectSize"),
        ({"objectSize": "12"}, RejectReason.INVALID_FIELD, "objectSize"),
        ({"eventTimestamp": 10**20}, RejectReason.INVALID_FIELD, "eventTimestamp"),
        ({"objectVersionId": 3}, RejectReason.INVALID_FIELD, "objectVersionId"),
    ],
)
def test_invalid_events_are_rejected(
    members: dict[str, Any], reason: RejectReason, needle: str
) -> None:
    rejection = reject_one(**members)
    assert rejection.reason == reason
    assert needle in rejection.message
    assert "events[0]" in rejection.message


def test_unmapped_types_are_documented() -> None:
    assert set(B2_UNMAPPED_TYPES).isdisjoint(B2_EVENT_KINDS)


@pytest.mark.parametrize(
    ("document", "needle"),
    [
        ([], "got array"),
        ({}, "has no 'events'"),
        ({"events": {}}, "'events' of object"),
        ({"events": []}, "'events' is empty"),
    ],
)
def test_whole_message_rejections(document: Any, needle: str) -> None:
    rejection = only_rejection(parse_b2(document, ORIGIN))
    assert rejection.reason == RejectReason.NOT_A_NOTIFICATION
    assert rejection.record_index is None
    assert needle in rejection.message


def test_an_element_that_is_not_an_object() -> None:
    result = parse_b2({"events": [b2_event(), "x"]}, ORIGIN)
    assert len(result.events) == 1
    assert [(r.reason, r.record_index) for r in result.rejections] == [
        (RejectReason.NOT_A_NOTIFICATION, 1)
    ]


def test_looks_like_b2() -> None:
    assert looks_like_b2(b2_body(b2_event()))
    assert looks_like_b2({"events": []})
    assert not looks_like_b2({"events": [{"eventType": "s3:ObjectCreated:Put"}]})
    assert not looks_like_b2({"Records": []})
    assert not looks_like_b2([b2_event()])


def test_redelivery_gets_the_same_id() -> None:
    document = b2_body(b2_event())
    assert parse_b2(document, "a").events[0].id == parse_b2(document, "b").events[0].id


@settings(max_examples=300, deadline=None)
@given(
    json_documents(
        "events",
        "eventType",
        "eventId",
        "eventVersion",
        "bucketName",
        "objectName",
        "objectSize",
        "eventTimestamp",
        "b2:ObjectCreated:Upload",
        "b2:TestEvent",
    )
)
def test_arbitrary_json_yields_only_typed_results(document: Any) -> None:
    for doc in (document, {"events": [document]}, {"events": document}):
        result = parse_b2(doc, ORIGIN)
        assert result.items
        assert all(isinstance(i, ObjectEvent | Rejection | Ignored) for i in result.items)


# --------------------------------------------------------------------------- signature


def test_valid_signature() -> None:
    secret = new_key()
    body = body_bytes(b2_body(b2_event()))
    verify_b2_signature(body, b2_signature(body, secret), secret)
    verify_b2_signature(
        body, "  " + b2_signature(body, secret).upper().replace("V1=", "v1="), secret
    )


def test_forged_signatures() -> None:
    secret = new_key()
    body = body_bytes(b2_body(b2_event()))
    forgeries = [
        b2_signature(body, new_key()),  # another secret
        b2_signature(body + b" ", secret),  # another body
        b2_signature(body, secret)[:-2],  # truncated
    ]
    for header in forgeries:
        with pytest.raises(WebhookAuthError) as raised:
            verify_b2_signature(body, header, secret)
        assert raised.value.status == 403
        assert "does not match" in raised.value.message


def test_malformed_signature_header() -> None:
    secret = new_key()
    body = b"{}"
    bare = b2_signature(body, secret).removeprefix("v1=")
    with pytest.raises(WebhookAuthError) as raised:
        verify_b2_signature(body, bare, secret)
    assert raised.value.status == 403
    assert "v1=" in raised.value.message


@pytest.mark.parametrize("header", [None, "", "   "])
def test_missing_signature(header: str | None) -> None:
    with pytest.raises(WebhookAuthError) as raised:
        verify_b2_signature(b"{}", header, new_key())
    assert raised.value.status == 401
    assert "x-bz-event-notification-signature" in raised.value.message


def test_replayed_request_is_a_duplicate_not_an_auth_failure() -> None:
    # B2 signs no timestamp: a replay verifies, and the unchanged eventId makes it a duplicate.
    secret = new_key()
    body = body_bytes(b2_body(b2_event()))
    verify_b2_signature(body, b2_signature(body, secret), secret)
    verify_b2_signature(body, b2_signature(body, secret), secret)
    first = parse_b2(json.loads(body), ORIGIN).events[0].id
    assert parse_b2(json.loads(body), ORIGIN).events[0].id == first
