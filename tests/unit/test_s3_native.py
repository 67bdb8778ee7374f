"""The native S3 notification parser (seqgate/connectors/parsers/s3/native.py)."""

from __future__ import annotations

import copy
import hashlib
import json
import random
from typing import Any

import pytest
from seqgate_devtools.samples import s3_notification, s3_record

from seqgate.connectors.errors import KeyEncodingError
from seqgate.connectors.parsers.results import Ignored
from seqgate.connectors.parsers.s3.event_ids import fallback_event_id, s3_event_id
from seqgate.connectors.parsers.s3.native import ParseResult, parse_s3_records
from seqgate.connectors.parsers.s3.object_keys import decode_form_key
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.builders import (
    ABSENT,
    assert_tricky_keys,
    only_event,
    only_rejection,
    put,
    sequencer_id,
    with_members,
)
from tests.support.paths import FIXTURES as ALL_FIXTURES

ORIGIN = "file:fixtures/s3.json:1"

# make_record's keywords and the members they set.
RECORD_MEMBERS: dict[str, tuple[str, ...]] = {
    "event_name": ("eventName",),
    "version": ("eventVersion",),
    "source": ("eventSource",),
    "event_time": ("eventTime",),
    "bucket": ("s3", "bucket", "name"),
    "key": ("s3", "object", "key"),
    "sequencer": ("s3", "object", "sequencer"),
    "version_id": ("s3", "object", "versionId"),
    "size": ("s3", "object", "size"),
    "etag": ("s3", "object", "eTag"),
}


def make_record(**members: Any) -> dict[str, Any]:
    """A realistic native S3 record (shape of AWS's documented example).

    Without arguments: an ObjectCreated:Put of ``incoming/June report+final.csv``
    in ``example-input`` with sequencer 0055AED6DCD90281E5 and no versionId.
    Each keyword of RECORD_MEMBERS writes its member as given (None is a JSON
    null, ABSENT leaves the member out).
    """
    record = s3_record(
        sequencer="0055AED6DCD90281E5", version_id=None, event_time="2026-11-25T10:00:00.000Z"
    )
    return with_members(record, RECORD_MEMBERS, members)


def parse_one(**members: Any) -> ObjectEvent:
    return only_event(parse_s3_records(s3_notification(make_record(**members)), ORIGIN))


def reject_one(**members: Any) -> Rejection:
    rejection = only_rejection(parse_s3_records(s3_notification(make_record(**members)), ORIGIN))
    assert rejection.record_index == 0
    return rejection


def expected_id(kind: str, identity: str, canonical_sequencer: str) -> str:
    return sequencer_id("s3-", kind, identity, canonical_sequencer)


# --------------------------------------------------------------------------- happy path


def test_full_event() -> None:
    event = parse_one(version_id="096fKKXTRTtl3on89fVO.nfljtsv6qko")
    assert event == ObjectEvent(
        id=expected_id(
            "created", "s3://example-input/incoming/June report+final.csv", "0055aed6dcd90281e5"
        ),
        source="s3",
        bucket="example-input",
        key="incoming/June report+final.csv",
        kind="created",
        event_name="ObjectCreated:Put",
        position="0055aed6dcd90281e5",
        version_id="096fKKXTRTtl3on89fVO.nfljtsv6qko",
        size=1024,
        etag="d41d8cd98f00b204e9800998ecf8427e",
        event_time="2026-11-25T10:00:00.000Z",
        origin=ORIGIN,
    )
    assert type(event.kind) is str  # a plain string, not the enum member


def test_unused_fields_are_ignored() -> None:
    record = make_record()
    record["glacierEventData"] = {"anything": [1, 2]}
    record["s3"]["object"]["newField"] = None
    result = parse_s3_records(s3_notification(record), ORIGIN)
    assert len(result.events) == 1


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ("incoming%2FJune+report%2Bfinal.csv", "incoming/June report+final.csv"),
        ("a%252Fb", "a%2Fb"),  # decoded once, never twice
        ("caf%C3%A9+%E2%82%AC.txt", "café €.txt"),
        ("caf%c3%a9", "café"),  # lowercase hex escapes
        ("HappyFace.jpg", "HappyFace.jpg"),
        ("a+b++c", "a b  c"),
        ("%2B%2b", "++"),
        ("%25", "%"),
        ("%20", " "),
        ("dir/sub/file", "dir/sub/file"),  # unescaped slashes tolerated
        ("café", "café"),  # unescaped non-ASCII taken as its UTF-8
        ("%F0%9F%98%80", "\U0001f600"),
        ("%00", "\x00"),
    ],
)
def test_key_decoding(raw: str, decoded: str) -> None:
    assert decode_form_key(raw) == decoded
    event = parse_one(key=raw)
    assert event.key == decoded


@pytest.mark.parametrize(
    ("raw", "detail"),
    [
        ("bad%2", "two hex digits"),
        ("bad%zz", "two hex digits"),
        ("bad%", "two hex digits"),
        ("%", "two hex digits"),
        ("bad%2g", "two hex digits"),
        ("bad%+1", "two hex digits"),
        ("bad% 1", "two hex digits"),
        ("%%41", "two hex digits"),
        ("%\u0661\u0662", "two hex digits"),  # non-ASCII digits are not hex
        ("%FF", "not valid UTF-8"),
        ("%C3%28", "not valid UTF-8"),
        ("%C3", "not valid UTF-8"),  # truncated sequence
        ("%ED%A0%80", "not valid UTF-8"),  # encoded surrogate
        ("%C0%AF", "not valid UTF-8"),  # overlong '/'
        ("\ud800", "lone surrogate"),
    ],
)
def test_malformed_keys(raw: str, detail: str) -> None:
    with pytest.raises(KeyEncodingError, match=detail):
        decode_form_key(raw)
    rejection = reject_one(key=raw)
    assert rejection.reason is RejectReason.INVALID_KEY_ENCODING
    assert "Records[0].s3.object.key" in rejection.message
    assert detail in rejection.message


def test_key_error_positions() -> None:
    with pytest.raises(KeyEncodingError, match="byte offset 3"):
        decode_form_key("bad%2")
    with pytest.raises(KeyEncodingError, match=r"byte\(s\) FF at decoded byte offset 1"):
        decode_form_key("a%FFb")


def test_key_decoding_is_stricter_than_unquote_plus() -> None:
    from urllib.parse import unquote_plus

    assert unquote_plus("bad%zz") == "bad%zz"  # the lenient stdlib behaviour
    with pytest.raises(KeyEncodingError):
        decode_form_key("bad%zz")


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("", RejectReason.MISSING_FIELD),
        (None, RejectReason.MISSING_FIELD),
        (ABSENT, RejectReason.MISSING_FIELD),
        (42, RejectReason.INVALID_FIELD),
        (["a"], RejectReason.INVALID_FIELD),
        ({"k": "v"}, RejectReason.INVALID_FIELD),
    ],
)
def test_missing_or_mistyped_key(key: Any, reason: RejectReason) -> None:
    rejection = reject_one(key=key)
    assert rejection.reason is reason
    assert rejection.message.startswith("Records[0].s3.object.key ")


# --------------------------------------------------------------------------- schema version


@pytest.mark.parametrize("version", ["2.1", "2.2", "2.3", "2.9", "2.10", "2.01", "2.100"])
def test_supported_schema_versions(version: str) -> None:
    parse_one(version=version)


@pytest.mark.parametrize(
    "version",
    [
        "2.0",
        "2.00",
        "3.0",
        "1.0",
        "2",
        "2.",
        "2.x",
        " 2.1",
        "2.1 ",
        "2.1.0",
        "v2.1",
        "2.\u0661",
        "",
    ],
)
def test_unsupported_schema_versions(version: str) -> None:
    rejection = reject_one(version=version)
    assert rejection.reason is RejectReason.UNSUPPORTED_SCHEMA_VERSION
    assert "seqgate accepts S3 event schema 2.x with x >= 1" in rejection.message


def test_schema_version_message() -> None:
    rejection = reject_one(version="3.0")
    assert rejection.message == (
        'Records[0].eventVersion "3.0" is not supported: '
        "seqgate accepts S3 event schema 2.x with x >= 1"
    )


@pytest.mark.parametrize("version", [ABSENT, None, 2.1, 2, True, ["2.1"]])
def test_missing_or_non_string_schema_version(version: Any) -> None:
    rejection = reject_one(version=version)
    assert rejection.reason is RejectReason.UNSUPPORTED_SCHEMA_VERSION


def test_huge_minor_version_is_accepted_without_overflow() -> None:
    parse_one(version="2." + "9" * 10_000)


# --------------------------------------------------------------------------- source


@pytest.mark.parametrize(
    "source", ["aws:sqs", "AWS:S3", "MINIO:S3", "minio", "aws:s3 ", "", ABSENT, None, 1, ["aws:s3"]]
)
def test_wrong_event_source(source: Any) -> None:
    rejection = reject_one(source=source)
    assert rejection.reason is RejectReason.WRONG_EVENT_SOURCE
    assert "Records[0].eventSource" in rejection.message
    assert "'aws:s3'" in rejection.message
    assert "'minio:s3'" in rejection.message


def test_minio_source_follows_minio_rules() -> None:
    # The native S3 record shape with MinIO's source: MinIO's table applies, so
    # the unprefixed S3 name is refused with a hint.
    rejection = reject_one(source="minio:s3")
    assert rejection.reason is RejectReason.UNSUPPORTED_EVENT_TYPE
    assert "MinIO names events with the 's3:' prefix" in rejection.message
    event = parse_one(source="minio:s3", event_name="s3:ObjectCreated:Put", version="2.0")
    assert event.source == "minio"
    assert event.id.startswith("minio-")


# --------------------------------------------------------------------------- event names


@pytest.mark.parametrize(
    "name",
    [
        "ObjectCreated:Put",
        "ObjectCreated:Post",
        "ObjectCreated:Copy",
        "ObjectCreated:CompleteMultipartUpload",
    ],
)
def test_created_names(name: str) -> None:
    event = parse_one(event_name=name)
    assert event.kind == "created"
    assert event.event_name == name


def test_delete_marker_is_removed() -> None:
    event = parse_one(
        event_name="ObjectRemoved:DeleteMarkerCreated", version_id="marker-1", size=ABSENT
    )
    assert event.kind == "removed"
    assert event.version_id == "marker-1"
    assert event.size is None


def test_delete_with_version_is_version_removed() -> None:
    event = parse_one(event_name="ObjectRemoved:Delete", version_id="v1", size=ABSENT)
    assert event.kind == "version_removed"
    assert event.event_name == "ObjectRemoved:Delete"


@pytest.mark.parametrize("version_id", [ABSENT, None, ""])
def test_delete_without_version_is_removed(version_id: Any) -> None:
    event = parse_one(event_name="ObjectRemoved:Delete", version_id=version_id, size=ABSENT)
    assert event.kind == "removed"
    assert event.version_id is None


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("ObjectRestore:Post", "restore_started"),
        ("ObjectRestore:Completed", "restored"),
        ("ObjectRestore:Delete", "restore_expired"),
        ("LifecycleTransition", "storage_class_changed"),
        ("IntelligentTiering", "access_tier_changed"),
        ("ObjectTagging:Put", "tags_changed"),
        ("ObjectTagging:Delete", "tags_changed"),
        ("ObjectAcl:Put", "acl_changed"),
        ("ReducedRedundancyLostObject", "object_lost"),
        ("Replication:OperationFailedReplication", "replication_failed"),
        ("Replication:OperationMissedThreshold", "replication_missed_threshold"),
        ("Replication:OperationReplicatedAfterThreshold", "replication_after_threshold"),
        ("Replication:OperationNotTracked", "replication_not_tracked"),
    ],
)
def test_names_that_do_not_change_content(name: str, kind: str) -> None:
    # With a sequencer: it is validated and becomes the position.
    event = parse_one(event_name=name, version_id="v1")
    assert (event.kind, event.event_name) == (kind, name)
    assert event.position == "0055aed6dcd90281e5"
    assert event.id == expected_id(
        kind, "s3://example-input/incoming/June report+final.csv", "0055aed6dcd90281e5"
    )
    # Without one: no position, and still an event (S3 documents the sequencer
    # for writes and deletes only). The kind does not depend on versionId.
    bare = parse_one(event_name=name, sequencer=ABSENT)
    assert (bare.kind, bare.position) == (kind, None)
    assert bare.id.startswith("s3-")
    assert len(bare.id) == 35
    # Present but invalid is still invalid.
    rejection = reject_one(event_name=name, sequencer="xyz")
    assert rejection.reason is RejectReason.INVALID_SEQUENCER


@pytest.mark.parametrize(
    ("name", "version_id", "kind"),
    [
        ("LifecycleExpiration:Delete", ABSENT, "removed"),  # unversioned: the key is gone
        ("LifecycleExpiration:Delete", "v1", "version_removed"),  # a noncurrent version
        ("LifecycleExpiration:DeleteMarkerCreated", "marker-1", "removed"),
        ("LifecycleExpiration:DeleteMarkerCreated", ABSENT, "removed"),
        ("ObjectRemoved:DeleteMarkerCreated", ABSENT, "removed"),
    ],
)
def test_lifecycle_expiration(name: str, version_id: Any, kind: str) -> None:
    event = parse_one(event_name=name, version_id=version_id, size=ABSENT)
    assert event.kind == kind
    rejection = reject_one(event_name=name, version_id=version_id, sequencer=ABSENT)
    assert rejection.reason is RejectReason.INVALID_SEQUENCER  # a delete always has one
    assert name in rejection.message


@pytest.mark.parametrize(
    "name",
    [
        "s3:ObjectCreated:Put",  # prefixed names are not native S3
        "s3:ObjectRemoved:Delete",
        "s3:TestEvent",
        "TestEvent",
        "ObjectCreated:*",
        "ObjectRemoved:*",
        "ObjectCreated",
        "objectcreated:put",
        "ObjectCreated:Put ",
        "ObjectAccessed:Get",  # MinIO only
        "ObjectCreated:PutTagging",  # MinIO only
        "ObjectRestore:Expired",
        "Replication:OperationFailed",
        "LifecycleExpiration",
        "",
        ABSENT,
        None,
        7,
    ],
)
def test_unsupported_event_types(name: Any) -> None:
    rejection = reject_one(event_name=name)
    assert rejection.reason is RejectReason.UNSUPPORTED_EVENT_TYPE
    assert rejection.message.startswith("Records[0].eventName ")
    assert "ObjectCreated:*" in rejection.message  # summarizes what is handled
    assert "docs/kinds.md" in rejection.message
    assert len(rejection.message) < 400


def test_prefixed_name_message_explains_the_prefix() -> None:
    rejection = reject_one(event_name="s3:ObjectCreated:Put")
    assert "without the 's3:' prefix" in rejection.message


# --------------------------------------------------------------------------- bucket


@pytest.mark.parametrize(
    ("bucket", "reason"),
    [
        (ABSENT, RejectReason.MISSING_FIELD),
        (None, RejectReason.MISSING_FIELD),
        ("", RejectReason.MISSING_FIELD),
        (12, RejectReason.INVALID_FIELD),
        ({"name": "x"}, RejectReason.INVALID_FIELD),
        ("a/b", RejectReason.INVALID_FIELD),
        ("b\ud800", RejectReason.INVALID_FIELD),  # a lone surrogate is not text
    ],
)
def test_bucket_name(bucket: Any, reason: RejectReason) -> None:
    rejection = reject_one(bucket=bucket)
    assert rejection.reason is reason
    assert rejection.message.startswith("Records[0].s3.bucket.name ")


def test_missing_bucket_message() -> None:
    rejection = reject_one(bucket=ABSENT)
    assert rejection.message.startswith("Records[0].s3.bucket.name is missing: ")


# --------------------------------------------------------------------------- structure


@pytest.mark.parametrize(
    ("path", "value", "reason", "field"),
    [
        (("s3",), ABSENT, RejectReason.MISSING_FIELD, "Records[0].s3 is missing"),
        (("s3",), None, RejectReason.MISSING_FIELD, "Records[0].s3 is missing"),
        (("s3",), [], RejectReason.INVALID_FIELD, "Records[0].s3 must be a JSON object"),
        (("s3",), "x", RejectReason.INVALID_FIELD, "Records[0].s3 must be a JSON object"),
        (("s3", "bucket"), ABSENT, RejectReason.MISSING_FIELD, "Records[0].s3.bucket is missing"),
        (("s3", "bucket"), "b", RejectReason.INVALID_FIELD, "Records[0].s3.bucket must be"),
        (("s3", "object"), ABSENT, RejectReason.MISSING_FIELD, "Records[0].s3.object is missing"),
        (("s3", "object"), 3, RejectReason.INVALID_FIELD, "Records[0].s3.object must be"),
    ],
)
def test_nested_objects(
    path: tuple[str, ...], value: Any, reason: RejectReason, field: str
) -> None:
    result = parse_s3_records(s3_notification(put(make_record(), path, value)), ORIGIN)
    assert result.events == []
    assert len(result.rejections) == 1
    assert result.rejections[0].reason is reason
    assert result.rejections[0].message.startswith(field)


# --------------------------------------------------------------------------- sequencer


def test_position_is_lowercased_verbatim() -> None:
    event = parse_one(sequencer="000055AED6DCD90281E500")
    assert event.position == "000055aed6dcd90281e500"  # zeros kept, case folded


def test_long_sequencer_is_accepted() -> None:
    long = "0055AED6DCD90281E5" * 20
    event = parse_one(sequencer=long)
    assert event.position == long.lower()


@pytest.mark.parametrize(
    ("sequencer", "detail"),
    [
        ("", "is empty"),
        (ABSENT, "is missing"),
        (None, "is missing"),
        ("0x55", "is not hexadecimal"),
        ("55AG", "is not hexadecimal"),
        (" 55", "is not hexadecimal"),
        ("55\n", "is not hexadecimal"),
        ("5_5", "is not hexadecimal"),
        ("\u0665\u0665", "is not hexadecimal"),
        (85, "must be a string"),
        (["55"], "must be a string"),
    ],
)
def test_invalid_sequencer(sequencer: Any, detail: str) -> None:
    rejection = reject_one(sequencer=sequencer)
    assert rejection.reason is RejectReason.INVALID_SEQUENCER
    assert rejection.message.startswith("Records[0].s3.object.sequencer ")
    assert detail in rejection.message


# --------------------------------------------------------------------------- optional fields


@pytest.mark.parametrize("missing", [ABSENT, None], ids=["absent", "null"])
def test_absent_or_null_optional_fields_are_none(missing: Any) -> None:
    event = parse_one(version_id=missing, size=missing, etag=missing, event_time=missing)
    assert (event.version_id, event.size, event.etag, event.event_time) == (None,) * 4


def test_optional_fields_are_kept_verbatim() -> None:
    event = parse_one(version_id="null", size=0, etag='"quoted-etag"', event_time="not even a time")
    assert event.version_id == "null"  # the version id of a suspended-versioning object
    assert event.size == 0
    assert event.etag == '"quoted-etag"'
    assert event.event_time == "not even a time"


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"size": "1024"}, "Records[0].s3.object.size"),
        ({"size": 10.5}, "Records[0].s3.object.size"),
        ({"size": 1024.0}, "Records[0].s3.object.size"),
        ({"size": True}, "Records[0].s3.object.size"),
        ({"size": -1}, "Records[0].s3.object.size"),
        ({"version_id": 5}, "Records[0].s3.object.versionId"),
        ({"etag": ["x"]}, "Records[0].s3.object.eTag"),
        ({"event_time": 1700000000}, "Records[0].eventTime"),
        ({"version_id": "v\udcff"}, "Records[0].s3.object.versionId"),
        ({"etag": "\ud800"}, "Records[0].s3.object.eTag"),
        ({"event_time": "2026\ud800"}, "Records[0].eventTime"),
    ],
)
def test_invalid_optional_fields(fields: dict[str, Any], field: str) -> None:
    rejection = reject_one(**fields)
    assert rejection.reason is RejectReason.INVALID_FIELD
    assert rejection.message.startswith(field)


def test_size_is_at_most_the_largest_avro_long() -> None:
    # JSON has no integer limit, Avro's long has: 2**63 would pass and then fail to encode.
    assert parse_one(size=2**63 - 1).size == 2**63 - 1
    for size in (2**63, 2**64, 2**80):
        rejection = reject_one(size=size)
        assert rejection.reason is RejectReason.INVALID_FIELD
        assert rejection.message.startswith(
            "Records[0].s3.object.size must be a non-negative integer below 2**63"
        )


# --------------------------------------------------------------------------- event ids


def test_event_id_formula() -> None:
    identity = "s3://example-input/incoming/June report+final.csv"
    assert s3_event_id("created", identity, "0055AED6DCD90281E5") == expected_id(
        "created", identity, "0055aed6dcd90281e5"
    )
    assert s3_event_id("created", identity, "F00") == expected_id("created", identity, "f")
    assert s3_event_id("created", identity, "000") == expected_id("created", identity, "0")


def test_event_id_golden_values() -> None:
    # Pinned: a change here changes every downstream idempotency key.
    assert (
        s3_event_id(
            "created", "s3://example-input/incoming/June report+final.csv", "0055AED6DCD90281E5"
        )
        == "s3-82fcd842f65575d85e6e872f8831cf4b"
    )
    assert (
        s3_event_id("version_removed", "s3://b/café €.txt", "F0")
        == "s3-83dfe7e5f25752f007db1f17a25d8c30"
    )


def test_event_id_rejects_non_hex_sequencer() -> None:
    with pytest.raises(ValueError):
        s3_event_id("created", "s3://b/k", "xyz")


def test_event_id_is_stable_across_redeliveries() -> None:
    document = s3_notification(make_record())
    first = parse_s3_records(document, "sqs:queue-a").events[0]
    again = parse_s3_records(copy.deepcopy(document), "file:replay.jsonl:7").events[0]
    assert first.id == again.id
    assert first.id.startswith("s3-")
    assert len(first.id) == 35


def test_event_id_ignores_case_and_trailing_zeros_of_the_sequencer() -> None:
    # Equal under AWS's right-padding rule, hence the same write.
    assert parse_one(sequencer="0055AED6").id == parse_one(sequencer="0055aed600").id


def test_event_id_differs_per_sequencer_kind_and_object() -> None:
    base = parse_one()
    assert parse_one(sequencer="0055AED6DCD90281E6").id != base.id
    assert parse_one(sequencer="000055AED6DCD90281E5").id != base.id  # leading zeros count
    assert parse_one(event_name="ObjectCreated:Copy").id == base.id  # same kind, same write
    assert parse_one(event_name="ObjectRemoved:DeleteMarkerCreated", version_id="m").id != base.id
    assert parse_one(key="other.csv").id != base.id
    assert parse_one(bucket="other-bucket").id != base.id


def test_event_id_does_not_depend_on_informational_fields() -> None:
    base = parse_one()
    assert parse_one(event_time="2030-01-01T00:00:00Z", etag="x", size=1).id == base.id


def test_fallback_event_id_without_sequencer() -> None:
    name = "ObjectTagging:Put"
    base = parse_one(event_name=name, sequencer=ABSENT, version_id="v1")
    # Stable across redeliveries, and independent of the origin.
    again = parse_s3_records(
        s3_notification(make_record(event_name=name, sequencer=ABSENT, version_id="v1")), "sqs:q"
    ).events[0]
    assert again.id == base.id
    # Built from kind, identity, version id, event time and ETag.
    assert parse_one(event_name=name, sequencer=ABSENT, version_id="v2").id != base.id
    assert parse_one(event_name=name, sequencer=ABSENT, version_id="v1", etag="x").id != base.id
    assert (
        parse_one(event_name=name, sequencer=ABSENT, version_id="v1", event_time="t").id != base.id
    )
    assert parse_one(event_name="ObjectAcl:Put", sequencer=ABSENT, version_id="v1").id != base.id
    # Informational fields that are not part of the formula do not change it.
    assert parse_one(event_name=name, sequencer=ABSENT, version_id="v1", size=1).id == base.id


def test_fallback_event_id_formula() -> None:
    material = json.dumps(
        ["tags_changed", "s3://b/k", "fields", "v1", "2026-11-25T10:00:00.000Z", None],
        ensure_ascii=True,
        sort_keys=True,
    )
    expected = "s3-" + hashlib.sha256(material.encode()).hexdigest()[:32]
    assert (
        fallback_event_id(
            "s3-", "tags_changed", "s3://b/k", "v1", "2026-11-25T10:00:00.000Z", None, {}
        )
        == expected
    )


def test_fallback_event_id_hashes_the_record_when_nothing_else_is_there() -> None:
    def bare(request_id: str) -> ObjectEvent:
        record = make_record(
            event_name="ObjectAcl:Put", sequencer=ABSENT, etag=ABSENT, event_time=ABSENT
        )
        record["responseElements"]["x-amz-request-id"] = request_id
        return parse_s3_records(s3_notification(record), ORIGIN).events[0]

    assert bare("A").id == bare("A").id
    assert bare("A").id != bare("B").id  # two different requests
    record: dict[object, str] = {1: "mixed", "a": "keys"}  # JSON cannot sort these: still an id
    assert fallback_event_id("s3-", "acl_changed", "s3://b/k", None, None, None, record)


def test_fallback_ids_never_equal_sequencer_ids() -> None:
    with_sequencer = parse_one(event_name="ObjectTagging:Put")
    without = parse_one(event_name="ObjectTagging:Put", sequencer=ABSENT)
    assert with_sequencer.id != without.id


# --------------------------------------------------------------------------- messages


def test_test_event_is_ignored() -> None:
    document = {
        "Service": "Amazon S3",
        "Event": "s3:TestEvent",
        "Time": "2014-10-13T15:57:02.089Z",
        "Bucket": "amzn-s3-demo-bucket",
        "RequestId": "5582815E1AEA5ADF",
        "HostId": "8cLeGAmw098X5cv4Zkwcmo8vvZa3eH3eKxsPzbB9wrR+YstdA6Knx4Ip8EXAMPLE",
    }
    result = parse_s3_records(document, ORIGIN)
    assert [item.reason for item in result.ignored] == ["s3_test_event"]
    assert len(result) == 1


@pytest.mark.parametrize(
    "document",
    [
        None,
        [],
        [make_record()],
        "Records",
        42,
        True,
        {},
        {"Records": None},
        {"Records": []},
        {"Records": {"0": make_record()}},
        {"Records": "[]"},
        {"Event": "s3:SomethingElse"},
        {"Event": None},
        {"records": [make_record()]},
    ],
)
def test_whole_message_rejections(document: object) -> None:
    result = parse_s3_records(document, ORIGIN)
    assert result.events == []
    assert result.ignored == []
    assert len(result.rejections) == 1
    assert result.rejections[0].reason is RejectReason.NOT_A_NOTIFICATION
    assert result.rejections[0].record_index is None


def test_multi_record_message_keeps_good_records() -> None:
    document = s3_notification(
        make_record(key="first.csv", sequencer="01"),
        make_record(key="second.csv", version="3.0"),
        make_record(key="third.csv", sequencer="03"),
        make_record(key="fourth%zz"),
    )
    result = parse_s3_records(document, ORIGIN)
    assert [event.key for event in result.events] == ["first.csv", "third.csv"]
    assert [(r.record_index, r.reason) for r in result.rejections] == [
        (1, RejectReason.UNSUPPORTED_SCHEMA_VERSION),
        (3, RejectReason.INVALID_KEY_ENCODING),
    ]
    assert result.rejections[0].message.startswith("Records[1].")
    assert result.rejections[1].message.startswith("Records[3].")
    assert result.ignored == []


def test_non_object_record_is_rejected_with_its_index() -> None:
    result = parse_s3_records(s3_notification(make_record(), None, "x"), ORIGIN)  # type: ignore[arg-type]
    assert len(result.events) == 1
    assert [(r.record_index, r.reason) for r in result.rejections] == [
        (1, RejectReason.NOT_A_NOTIFICATION),
        (2, RejectReason.NOT_A_NOTIFICATION),
    ]


def test_records_keep_their_order() -> None:
    records = [make_record(key=f"k{index}", sequencer=f"{index:04x}") for index in range(50)]
    result = parse_s3_records(s3_notification(*records), ORIGIN)
    assert [event.key for event in result.events] == [f"k{index}" for index in range(50)]


def test_long_values_do_not_make_long_messages() -> None:
    rejection = reject_one(version="2." + "x" * 100_000)
    assert len(rejection.message) < 400
    rejection = reject_one(sequencer="z" * 100_000)
    assert len(rejection.message) < 400
    rejection = reject_one(key="%zz" + "a" * 100_000)
    assert len(rejection.message) < 600


def test_messages_are_utf8_encodable() -> None:
    rejection = reject_one(event_name="Object\ud800Created")
    rejection.message.encode("utf-8")
    rejection = reject_one(key="\udcff")
    rejection.message.encode("utf-8")


# --------------------------------------------------------------------------- totality


BATTERY: list[object] = [
    None,
    [],
    "str",
    0,
    1.5,
    False,
    {},
    {"Records": [None]},
    {"Records": [[]]},
    {"Records": [{}]},
    {"Records": [{"s3": []}]},
    {"Records": [{"s3": None}]},
    {"Records": [{"s3": {"bucket": [], "object": []}}]},
    {"Records": [{"s3": {"bucket": {"name": None}, "object": {"key": None}}}]},
    {"Records": [{"eventSource": "aws:s3", "eventVersion": "2.1", "s3": "x"}]},
    {"Records": [{"eventSource": [], "eventVersion": {}, "eventName": 1.5}]},
    {"Records": [{"eventSource": "aws:s3", "eventVersion": "2.1", "eventName": []}]},
    {"Records": [{"eventSource": "aws:s3", "eventVersion": "2.1", "eventName": {"a": 1}}]},
    {"Records": [1, "two", 3.0, True, None, [], {}]},
    {"Records": "not a list"},
    {"Records": {"nested": {"deeper": []}}},
    {"Event": ["s3:TestEvent"]},
    {"Event": {"s3:TestEvent": True}},
    {1: 2},
    {None: None},
    ("tuple", "not", "json"),
    b"bytes",
    {"Records": (make_record(),)},
]


@pytest.mark.parametrize("document", BATTERY, ids=range(len(BATTERY)))
def test_battery_of_malformed_documents(document: object) -> None:
    check_total(document)


def check_total(document: object) -> ParseResult:
    """Parse without raising, and account for the document exactly once."""
    result = parse_s3_records(document, ORIGIN)
    assert isinstance(result, ParseResult)
    records = document.get("Records") if isinstance(document, dict) else None
    if result.ignored:
        assert [item.reason for item in result.ignored] == ["s3_test_event"]
        assert not result.events
        assert not result.rejections
    elif isinstance(records, list) and records:
        # Every record is accounted for exactly once, in order.
        indexes = sorted(r.record_index for r in result.rejections if r.record_index is not None)
        assert len(indexes) == len(result.rejections)
        assert len(set(indexes)) == len(indexes)
        assert len(result.events) + len(indexes) == len(records)
    else:
        assert result.events == []
        assert len(result.rejections) == 1
        assert result.rejections[0].record_index is None
    for rejection in result.rejections:
        assert isinstance(rejection.reason, RejectReason)
        assert rejection.message
        rejection.message.encode("utf-8")
    return result


def random_json(rng: random.Random, depth: int = 0) -> object:
    choice = rng.randrange(10 if depth < 3 else 7)
    if choice == 0:
        return None
    if choice == 1:
        return rng.choice([True, False])
    if choice == 2:
        return rng.choice([0, -1, 1024, 2**70, 1.5, -0.0, float("inf")])
    if choice == 3:
        return rng.choice(["", "2.1", "aws:s3", "ObjectCreated:Put", "%zz", "ff", "a/b"])
    if choice == 4:
        return "".join(rng.choice("aZ%+09fF:/.\u00e9\ud800") for _ in range(rng.randrange(8)))
    if choice == 5:
        return rng.choice(["s3:TestEvent", "0055AED6DCD90281E5", "caf%C3%A9", "%C3%28"])
    if choice == 6:
        return rng.choice([[], {}])
    if choice in (7, 8):
        return {
            rng.choice(["s3", "object", "bucket", "key", "name", "sequencer", "x"]): random_json(
                rng, depth + 1
            )
            for _ in range(rng.randrange(4))
        }
    return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]


def all_paths(node: object, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    paths = [prefix]
    if isinstance(node, dict):
        for name, value in node.items():
            paths.extend(all_paths(value, (*prefix, name)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            paths.extend(all_paths(value, (*prefix, index)))
    return paths


def mutate(document: Any, rng: random.Random) -> Any:
    """Replace, delete or retype one node somewhere in the document."""
    mutated = copy.deepcopy(document)
    path = rng.choice(all_paths(mutated))
    if not path:
        return random_json(rng)
    parent = mutated
    for step in path[:-1]:
        parent = parent[step]
    action = rng.randrange(3)
    if action == 0 and isinstance(parent, dict):
        del parent[path[-1]]
    elif action == 1:
        parent[path[-1]] = random_json(rng)
    else:
        current = parent[path[-1]]
        parent[path[-1]] = [current] if rng.random() < 0.5 else {"wrapped": current}
    return mutated


def test_random_mutations_never_raise() -> None:
    rng = random.Random(20261125)
    seeds = [
        s3_notification(make_record()),
        s3_notification(
            make_record(), make_record(event_name="ObjectRemoved:Delete", version_id="v")
        ),
        {"Event": "s3:TestEvent", "Bucket": "b"},
        s3_notification(make_record(event_name="ObjectRestore:Post", sequencer=ABSENT)),
        s3_notification(
            make_record(
                source="minio:s3", version="2.0", event_name="s3:ObjectCreated:Put", key="a%2Fb"
            )
        ),
    ]
    outcomes: set[str] = set()
    for _ in range(4000):
        document = rng.choice(seeds)
        for _ in range(rng.randint(1, 3)):
            document = mutate(document, rng)
        result = check_total(document)
        outcomes.update(r.reason.value for r in result.rejections)
        if result.events:
            outcomes.add("event")
        if result.ignored:
            outcomes.add("ignored")
    # The mutations reach every branch of the parser.
    assert outcomes >= {
        "event",
        "ignored",
        "not_a_notification",
        "wrong_event_source",
        "unsupported_schema_version",
        "unsupported_event_type",
        "invalid_key_encoding",
        "invalid_sequencer",
        "missing_field",
        "invalid_field",
    }


def test_random_documents_never_raise() -> None:
    rng = random.Random(99)
    for _ in range(3000):
        check_total(random_json(rng))
        check_total({"Records": [random_json(rng) for _ in range(rng.randrange(4))]})


# --------------------------------------------------------------------------- fixtures

FIXTURES = ALL_FIXTURES / "s3"
VERSION_Q3 = "3HL4kqtJlcpXroDTDmJ+rmSpXd3dIbrHY+MTRCxf3vjVBH40Nr8X8gdRQBpUMLUo"

# Each fixture holds one record: (kind, key, position, version_id).
SINGLE_RECORD_FIXTURES: dict[str, tuple[str, str, str | None, str | None]] = {
    "created_put": (
        "created",
        "incoming/June report+final.csv",
        "0055aed6dcd90281e5",
        None,
    ),
    "created_post": ("created", "incoming/June report+final.csv", "0055aed6dcd90281e6", None),
    "created_copy": ("created", "incoming/June report+final.csv", "0055aed6dcd90281e7", None),
    "created_complete_multipart_upload": (
        "created",
        "incoming/June report+final.csv",
        "0055aed6dcd90281e8",
        None,
    ),
    "removed_delete_unversioned": (
        "removed",
        "incoming/June report+final.csv",
        "0055aed6dcd90281f0",
        None,
    ),
    "versioned_created_put": ("created", "reports/q3.pdf", "0062f1a0b3c4d5e600", VERSION_Q3),
    "versioned_delete_version": (
        "version_removed",
        "reports/q3.pdf",
        "0062f1a0b3c4d5e700",
        VERSION_Q3,
    ),
    "versioned_delete_marker_created": (
        "removed",
        "reports/q3.pdf",
        "0062f1a0b3c4d5e800",
        "Zx9mT0dI7w2Qy1.Vb3nKc8LhFp4RsAeJ",
    ),
    "restore_post": ("restore_started", "archive/2019/ledger.csv", None, None),
    "restore_completed": ("restored", "archive/2019/ledger.csv", None, None),
    "restore_delete": ("restore_expired", "archive/2019/ledger.csv", None, None),
    "lifecycle_expiration_delete": ("removed", "tmp/session-41.json", "0063a1b2c3d4e5f601", None),
    "lifecycle_expiration_delete_version": (
        "version_removed",
        "reports/q3.pdf",
        "0063a1b2c3d4e5f602",
        VERSION_Q3,
    ),
    "lifecycle_expiration_delete_marker_created": (
        "removed",
        "reports/q2.pdf",
        "0063a1b2c3d4e5f603",
        "e1Qm2Ck7Jw0Yb5Nz8TpRa3HfLd6Gs9Vx",
    ),
    "lifecycle_transition": ("storage_class_changed", "logs/2026/01/app.log.gz", None, None),
    "intelligent_tiering": ("access_tier_changed", "media/raw/clip-0007.mov", None, None),
    "reduced_redundancy_lost_object": ("object_lost", "thumbs/a1.png", None, None),
    "replication_failed": ("replication_failed", "reports/q3.pdf", None, VERSION_Q3),
    "replication_missed_threshold": (
        "replication_missed_threshold",
        "reports/q3.pdf",
        None,
        VERSION_Q3,
    ),
    "replication_after_threshold": (
        "replication_after_threshold",
        "reports/q3.pdf",
        None,
        VERSION_Q3,
    ),
    "replication_not_tracked": ("replication_not_tracked", "reports/q3.pdf", None, VERSION_Q3),
    "tagging_put": ("tags_changed", "reports/q3.pdf", "0064b2c3d4e5f60701", VERSION_Q3),
    "tagging_delete": ("tags_changed", "reports/q3.pdf", None, VERSION_Q3),
    "acl_put": ("acl_changed", "public/index.html", None, None),
}


def load_fixture(name: str) -> object:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def test_every_fixture_is_covered() -> None:
    names = {path.stem for path in FIXTURES.glob("*.json")}
    covered = {
        *SINGLE_RECORD_FIXTURES,
        "test_event",
        "tricky_keys",
        "tricky_keys_slash_escaped",
        "multi_record",
    }
    assert names == covered


@pytest.mark.parametrize("name", sorted(SINGLE_RECORD_FIXTURES))
def test_single_record_fixtures(name: str) -> None:
    kind, key, position, version_id = SINGLE_RECORD_FIXTURES[name]
    document = load_fixture(name)
    result = parse_s3_records(document, f"file:{name}.json:1")
    assert result.rejections == []
    (event,) = result.events
    assert (event.kind, event.key, event.position, event.version_id) == (
        kind,
        key,
        position,
        version_id,
    )
    assert event.source == "s3"
    assert event.bucket == "amzn-s3-demo-bucket"
    assert isinstance(document, dict)
    assert event.event_name == document["Records"][0]["eventName"]
    if position is not None:
        assert event.id == s3_event_id(kind, f"s3://{event.bucket}/{key}", position)
    else:
        assert event.id.startswith("s3-")
    # A redelivery of the same bytes gets the same id.
    assert parse_s3_records(load_fixture(name), "sqs:other").events[0].id == event.id


def test_fixture_test_event_is_ignored() -> None:
    result = parse_s3_records(load_fixture("test_event"), ORIGIN)
    assert [item.reason for item in result.items if isinstance(item, Ignored)] == ["s3_test_event"]
    assert len(result) == 1


@pytest.mark.parametrize("name", ["tricky_keys", "tricky_keys_slash_escaped"])
def test_fixture_tricky_keys(name: str) -> None:
    assert_tricky_keys(parse_s3_records(load_fixture(name), ORIGIN))


def test_slash_escaping_does_not_change_the_event() -> None:
    # S3 may or may not escape '/': both spellings denote the same object.
    plain = parse_s3_records(load_fixture("tricky_keys"), ORIGIN).events
    escaped = parse_s3_records(load_fixture("tricky_keys_slash_escaped"), ORIGIN).events
    assert plain == escaped


def test_fixture_multi_record() -> None:
    result = parse_s3_records(load_fixture("multi_record"), ORIGIN)
    outcome = [
        item.kind if isinstance(item, ObjectEvent) else getattr(item, "reason", None)
        for item in result.items
    ]
    assert outcome == [
        "created",
        RejectReason.UNSUPPORTED_EVENT_TYPE,  # an 's3:'-prefixed name from aws:s3
        "removed",
        RejectReason.INVALID_KEY_ENCODING,
        RejectReason.INVALID_SEQUENCER,  # a creation always has a sequencer
        "tags_changed",  # no sequencer needed for a tag change
    ]
    assert [r.record_index for r in result.rejections] == [1, 3, 4]
