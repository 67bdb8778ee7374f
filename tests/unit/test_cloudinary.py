"""Cloudinary notifications (seqgate/connectors/parsers/cloudinary.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings

from seqgate.connectors.auth.cloudinary import verify_cloudinary_signature
from seqgate.connectors.errors import WebhookAuthError
from seqgate.connectors.parsers.cloudinary import (
    CLOUDINARY_NOTIFICATION_TYPES,
    looks_like_cloudinary,
    parse_cloudinary,
)
from seqgate.connectors.parsers.results import Ignored
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.builders import ABSENT, only_event, only_rejection
from tests.support.paths import FIXTURES as ALL_FIXTURES
from tests.support.webhook_samples import (
    CLOUD_NAME,
    body_bytes,
    cloudinary_delete,
    cloudinary_rename,
    cloudinary_resource,
    cloudinary_signature,
    cloudinary_upload,
    json_documents,
    new_key,
)

FIXTURES = ALL_FIXTURES / "cloudinary"
ORIGIN = "http:/cloudinary/notify"
NOW = 1764064800.0


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def parse(document: Any) -> Any:
    return parse_cloudinary(document, ORIGIN, cloud_name=CLOUD_NAME)


# --------------------------------------------------------------------------- parsing


def test_upload_fixture() -> None:
    event = only_event(parse(fixture("upload.json")))
    assert event == ObjectEvent(
        id="cloudinary-799b7a3e1f2b4c5d6e7f8091a2b3c4d5",
        source="cloudinary",
        bucket="demo-cloud",
        key="image/upload/products/red shoes+laces",
        kind="created",
        event_name="upload",
        position=None,
        version_id="1764064800",
        size=120253,
        etag="2c1c4a9f3b7f5d3a6e0c9f3e1a2b4c5d",
        event_time="2026-11-25T10:00:00Z",
        origin=ORIGIN,
    )


def test_bulk_delete_gives_one_event_per_resource_with_distinct_ids() -> None:
    result = parse(fixture("delete_bulk.json"))
    assert result.rejections == []
    assert [(e.key, e.kind) for e in result.events] == [
        ("image/upload/products/red shoes+laces", "removed"),
        ("image/upload/products/blue shoes", "removed"),
        ("video/upload/products/red shoes+laces", "removed"),
    ]
    assert len({e.id for e in result.events}) == 3
    assert all(e.id.startswith("cloudinary-") for e in result.events)
    assert {e.event_time for e in result.events} == {"2026-11-25T11:30:00.204Z"}
    assert parse(fixture("delete_bulk.json")) == result  # a retry: the same ids


def test_bulk_delete_keeps_good_resources_and_indexes_bad_ones() -> None:
    document = cloudinary_delete(
        cloudinary_resource(),
        cloudinary_resource(public_id=ABSENT),
        "junk",
        cloudinary_resource(type="private"),
    )
    result = parse(document)
    assert [e.key for e in result.events] == [
        "image/upload/products/red shoes+laces",
        "image/private/products/red shoes+laces",
    ]
    assert [(r.reason, r.record_index) for r in result.rejections] == [
        (RejectReason.MISSING_FIELD, 1),
        (RejectReason.INVALID_FIELD, 2),
    ]


def test_delete_ids_differ_from_the_upload_and_between_deletes() -> None:
    upload = only_event(parse(cloudinary_upload()))
    first = only_event(parse(cloudinary_delete()))
    later = only_event(
        parse(cloudinary_delete(notification_context={"triggered_at": "2026-12-01T00:00:00Z"}))
    )
    assert len({upload.id, first.id, later.id}) == 3
    assert (upload.bucket, upload.key) == (first.bucket, first.key)


def test_rename_is_a_removal_then_a_creation() -> None:
    result = parse(fixture("rename.json"))
    assert [(e.key, e.kind, e.event_name) for e in result.events] == [
        ("image/upload/products/red shoes+laces", "removed", "rename"),
        ("image/upload/archive/red shoes+laces", "created", "rename"),
    ]
    assert result.events[0].id != result.events[1].id


def test_public_id_is_verbatim_and_types_separate_identities() -> None:
    for public_id in ["a%2Fb", "folder/sub/x.pdf", "  spaced ", "写真"]:
        assert only_event(parse(cloudinary_upload(public_id=public_id))).key.endswith(public_id)
    image = only_event(parse(cloudinary_upload()))
    video = only_event(parse(cloudinary_upload(resource_type="video")))
    assert image.key != video.key


@pytest.mark.parametrize(
    ("document", "reason", "needle"),
    [
        (
            cloudinary_upload(notification_type="eager"),
            RejectReason.UNSUPPORTED_EVENT_TYPE,
            "eager",
        ),
        (cloudinary_upload(notification_type=1), RejectReason.UNSUPPORTED_EVENT_TYPE, "string"),
        (cloudinary_upload(request_id=ABSENT), RejectReason.MISSING_FIELD, "request_id"),
        (cloudinary_upload(public_id=""), RejectReason.MISSING_FIELD, "public_id"),
        (cloudinary_upload(public_id=["x"]), RejectReason.INVALID_FIELD, "public_id"),
        (cloudinary_upload(resource_type=ABSENT), RejectReason.MISSING_FIELD, "resource_type"),
        (cloudinary_upload(type="a/b"), RejectReason.INVALID_FIELD, "'/'"),
        (cloudinary_upload(bytes=-1), RejectReason.INVALID_FIELD, "bytes"),
        (cloudinary_upload(version="v1"), RejectReason.INVALID_FIELD, "version"),
        (cloudinary_upload(etag=5), RejectReason.INVALID_FIELD, "etag"),
        (cloudinary_delete(resources=ABSENT), RejectReason.MISSING_FIELD, "resources"),
        (cloudinary_delete(resources={}), RejectReason.INVALID_FIELD, "resources"),
        (cloudinary_delete(resources=[]), RejectReason.MISSING_FIELD, "resources is empty"),
        (cloudinary_rename(to_public_id=ABSENT), RejectReason.MISSING_FIELD, "to_public_id"),
    ],
)
def test_invalid_notifications_are_rejected(
    document: Any, reason: RejectReason, needle: str
) -> None:
    rejection = only_rejection(parse(document))
    assert rejection.reason == reason
    assert rejection.record_index is None
    assert needle in rejection.message


@pytest.mark.parametrize(("document", "needle"), [([], "got array"), ({}, "notification_type")])
def test_not_a_notification(document: Any, needle: str) -> None:
    rejection = only_rejection(parse(document))
    assert rejection.reason == RejectReason.NOT_A_NOTIFICATION
    assert needle in rejection.message


def test_cloud_name_must_be_a_bucket_name() -> None:
    for bad in ["", "a/b"]:
        with pytest.raises(ValueError):
            parse_cloudinary(cloudinary_upload(), ORIGIN, cloud_name=bad)


def test_looks_like_cloudinary() -> None:
    assert looks_like_cloudinary(cloudinary_upload())
    assert looks_like_cloudinary(cloudinary_delete())
    assert not looks_like_cloudinary({"events": []})
    assert not looks_like_cloudinary("upload")
    assert set(CLOUDINARY_NOTIFICATION_TYPES) == {"upload", "delete", "rename"}


@settings(max_examples=300, deadline=None)
@given(
    json_documents(
        "notification_type",
        "upload",
        "delete",
        "rename",
        "resources",
        "public_id",
        "resource_type",
        "type",
        "request_id",
        "version",
        "bytes",
        "from_public_id",
        "to_public_id",
        "notification_context",
        "triggered_at",
    )
)
def test_arbitrary_json_yields_only_typed_results(document: Any) -> None:
    candidates = [document, cloudinary_delete(resources=[document])]
    if isinstance(document, dict):
        for kind in CLOUDINARY_NOTIFICATION_TYPES:
            candidates.append({**document, "notification_type": kind})
    for doc in candidates:
        result = parse(doc)
        assert result.items
        assert all(isinstance(i, ObjectEvent | Rejection | Ignored) for i in result.items)


# --------------------------------------------------------------------------- signature


def signed(algorithm: str = "sha1") -> tuple[bytes, str, str, str]:
    secret = new_key()
    body = body_bytes(cloudinary_upload())
    timestamp = str(int(NOW))
    return body, timestamp, cloudinary_signature(body, timestamp, secret, algorithm), secret


@pytest.mark.parametrize("algorithm", ["sha1", "sha256"])
def test_valid_signature(algorithm: str) -> None:
    body, timestamp, signature, secret = signed(algorithm)
    verify_cloudinary_signature(body, timestamp, signature, secret, NOW, algorithm=algorithm)
    verify_cloudinary_signature(
        body, timestamp, signature.upper(), secret, NOW + 7199, algorithm=algorithm
    )


def test_wrong_algorithm_does_not_verify() -> None:
    body, timestamp, signature, secret = signed("sha256")
    with pytest.raises(WebhookAuthError) as raised:
        verify_cloudinary_signature(body, timestamp, signature, secret, NOW)
    assert raised.value.status == 403


def test_forged_signatures() -> None:
    body, timestamp, signature, secret = signed()
    attempts = [
        (body + b" ", timestamp, signature, secret),
        (body, timestamp, signature, new_key()),
        (body, str(int(NOW) + 1), signature, secret),
        (body, timestamp, cloudinary_signature(body, timestamp, new_key()), secret),
    ]
    for attempt in attempts:
        with pytest.raises(WebhookAuthError) as raised:
            verify_cloudinary_signature(*attempt, NOW)
        assert raised.value.status == 403
        assert "does not match" in raised.value.message


@pytest.mark.parametrize("offset", [7201, -7201, 10**6])
def test_replayed_outside_the_window(offset: int) -> None:
    body, timestamp, signature, secret = signed()
    with pytest.raises(WebhookAuthError) as raised:
        verify_cloudinary_signature(body, timestamp, signature, secret, NOW + offset)
    assert raised.value.status == 403
    assert "window" in raised.value.message


def test_shorter_window() -> None:
    body, timestamp, signature, secret = signed()
    with pytest.raises(WebhookAuthError):
        verify_cloudinary_signature(body, timestamp, signature, secret, NOW + 61, window_s=60)


@pytest.mark.parametrize("timestamp", ["soon", "1.5", "-3", "١٢٣"])
def test_unreadable_timestamp(timestamp: str) -> None:
    body, _, signature, secret = signed()
    with pytest.raises(WebhookAuthError) as raised:
        verify_cloudinary_signature(body, timestamp, signature, secret, NOW)
    assert raised.value.status == 403
    assert "whole seconds" in raised.value.message


def test_missing_headers() -> None:
    body, timestamp, signature, secret = signed()
    for ts, sig, needle in [
        (timestamp, None, "X-Cld-Signature"),
        (timestamp, "", "X-Cld-Signature"),
        (None, signature, "X-Cld-Timestamp"),
    ]:
        with pytest.raises(WebhookAuthError) as raised:
            verify_cloudinary_signature(body, ts, sig, secret, NOW)
        assert raised.value.status == 401
        assert needle in raised.value.message


def test_unknown_algorithm_is_a_configuration_error() -> None:
    body, timestamp, signature, secret = signed()
    with pytest.raises(ValueError):
        verify_cloudinary_signature(body, timestamp, signature, secret, NOW, algorithm="md5")
