"""MinIO bucket notifications (seqgate/connectors/parsers/s3/minio.py, read by
seqgate/connectors/parsers/s3/native.py)."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from seqgate_devtools.samples import form_encode_key, s3_notification, s3_record

from seqgate.connectors.parsers.s3.event_ids import s3_event_id
from seqgate.connectors.parsers.s3.minio import (
    MINIO_EVENT_NAMES,
    MINIO_EVENT_SOURCE,
    MINIO_SCHEME,
    MINIO_UNMAPPED_NAMES,
    accepts_schema_version,
    minio_event_id,
    minio_event_name_info,
    minio_kind_for,
)
from seqgate.connectors.parsers.s3.native import parse_s3_records
from seqgate.connectors.parsers.s3.object_keys import decode_form_key
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import MINIO_SOURCE
from tests.support.builders import (
    ABSENT,
    TRICKY_KEYS,
    assert_tricky_keys,
    go_query_escape,
    only_event,
    only_rejection,
    sequencer_id,
)
from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "minio"
ORIGIN = "http:/minio/webhook"


# --------------------------------------------------------------------------- encoders


ALPHABET = (
    "abcXYZ019 +%/~-_.*!'()&=?#;:,@$[]\"\\\t\x00\x7f"
    "éüßñ€£¥写真猫ё\u0301\u200b\ufeff\U0001f600\U0001f9ea\U00010348"
)


def generated_keys(count: int, seed: int) -> list[str]:
    """Arbitrary non-empty keys: awkward ASCII, multi-byte text, astral characters."""
    rng = random.Random(seed)
    keys: list[str] = []
    for _ in range(count):
        length = rng.randint(1, 60)
        chars: list[str] = []
        for _ in range(length):
            if rng.random() < 0.15:
                code = rng.randrange(0x20, 0x110000)
                while 0xD800 <= code <= 0xDFFF:  # lone surrogates are not text
                    code = rng.randrange(0x20, 0x110000)
                chars.append(chr(code))
            else:
                chars.append(rng.choice(ALPHABET))
        keys.append("".join(chars))
    return keys


KEYS = generated_keys(400, seed=3)


@pytest.mark.parametrize(
    ("key", "escaped"),
    [
        ("a b+c/d~e", "a+b%2Bc%2Fd~e"),
        ("2026/summer trip/beach+sunset.jpg", "2026%2Fsummer+trip%2Fbeach%2Bsunset.jpg"),
        ("100%.txt", "100%25.txt"),
        ("100%25.txt", "100%2525.txt"),
        ("café", "caf%C3%A9"),
        ("*!'()", "%2A%21%27%28%29"),
        ("a&b=c?d#e;f,g:h@i$j", "a%26b%3Dc%3Fd%23e%3Bf%2Cg%3Ah%40i%24j"),
        ("-_.~", "-_.~"),
        ("\U0001f600", "%F0%9F%98%80"),
    ],
)
def test_go_query_escape(key: str, escaped: str) -> None:
    assert go_query_escape(key) == escaped
    assert decode_form_key(escaped) == key


@pytest.mark.parametrize(
    ("key", "safe", "encoded"),
    [
        ("incoming/June report+final.csv", "", "incoming%2FJune+report%2Bfinal.csv"),
        ("incoming/June report+final.csv", "/", "incoming/June+report%2Bfinal.csv"),
        ("red flower.jpg", "/", "red+flower.jpg"),
        ("a%2Fb", "/", "a%252Fb"),
        ("café €.txt", "/", "caf%C3%A9+%E2%82%AC.txt"),
    ],
)
def test_form_encode_key(key: str, safe: str, encoded: str) -> None:
    assert form_encode_key(key, safe=safe) == encoded


def test_generated_keys_are_varied() -> None:
    assert len(set(KEYS)) == len(KEYS)
    joined = "".join(KEYS)
    for needle in (" ", "+", "%", "/", "~", "é", "\U0001f600"):
        assert needle in joined
    assert any(ord(char) > 0xFFFF for char in joined)


@pytest.mark.parametrize(
    "encode", [go_query_escape, lambda k: form_encode_key(k, safe="/"), form_encode_key]
)
def test_decode_inverts_encode(encode: Any) -> None:
    for key in KEYS:
        assert decode_form_key(encode(key)) == key, key


def test_parsed_keys_survive_the_round_trip() -> None:
    minio = parse_s3_records(
        {"Records": [minio_record(key=go_query_escape(key)) for key in KEYS]}, ORIGIN
    )
    assert [event.key for event in minio.events] == KEYS
    s3 = parse_s3_records(
        s3_notification(*[photos_s3_record(form_encode_key(key, safe="/")) for key in KEYS]), ORIGIN
    )
    assert [event.key for event in s3.events] == KEYS


# --------------------------------------------------------------------------- records


def minio_record(
    *,
    event_name: Any = "s3:ObjectCreated:Put",
    version: Any = "2.0",
    source: Any = "minio:s3",
    bucket: Any = "photos",
    key: Any = "2026%2Fsummer+trip%2Fbeach%2Bsunset.jpg",
    sequencer: Any = "17A6B2C3D4E5F607",
    version_id: Any = ABSENT,
    size: Any = 2457600,
    etag: Any = "a1b2c3d4e5f60718293a4b5c6d7e8f90",
    event_time: Any = "2026-11-25T10:00:00.123Z",
) -> dict[str, Any]:
    """A MinIO record as its webhook and Kafka targets send it."""
    obj: dict[str, Any] = {
        "key": key,
        "size": size,
        "eTag": etag,
        "contentType": "image/jpeg",
        "userMetadata": {"content-type": "image/jpeg"},
        "versionId": version_id,
        "sequencer": sequencer,
    }
    record: dict[str, Any] = {
        "eventVersion": version,
        "eventSource": source,
        "awsRegion": "",
        "eventTime": event_time,
        "eventName": event_name,
        "userIdentity": {"principalId": "minioadmin"},
        "requestParameters": {"principalId": "minioadmin", "region": "", "sourceIPAddress": "::1"},
        "responseElements": {
            "x-amz-request-id": "17A6B2C3D4E5F607",
            "x-minio-deployment-id": "8d0c5b4e-4b0f-4c55-9f4f-6a7f7f4b2d10",
            "x-minio-origin-endpoint": "http://172.18.0.2:9000",
        },
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "Config",
            "bucket": {"name": bucket, "ownerIdentity": {"principalId": "minioadmin"}},
            "object": {name: value for name, value in obj.items() if value is not ABSENT},
        },
        "source": {"host": "::1", "port": "", "userAgent": "MinIO (linux; amd64) minio-go/v7"},
    }
    return {name: value for name, value in record.items() if value is not ABSENT}


def photos_s3_record(key: str) -> dict[str, Any]:
    """An Amazon S3 record of the bucket the MinIO records use; ``key`` form-encoded."""
    return s3_record(bucket="photos", key=key, sequencer="0055AED6DCD90281E5")


def webhook(record: dict[str, Any], key: str | None = None) -> dict[str, Any]:
    """MinIO's webhook / Kafka-target body: ``{"EventName", "Key", "Records"}``."""
    if key is None:
        key = f"{record['s3']['bucket']['name']}/{decode_form_key(record['s3']['object']['key'])}"
    return {"EventName": record.get("eventName"), "Key": key, "Records": [record]}


def parse_one(**fields: Any) -> ObjectEvent:
    return only_event(parse_s3_records(webhook(minio_record(**fields)), ORIGIN))


def reject_one(**fields: Any) -> Rejection:
    rejection = only_rejection(parse_s3_records(s3_notification(minio_record(**fields)), ORIGIN))
    assert rejection.record_index == 0
    return rejection


def identity(event: ObjectEvent) -> str:
    return f"{event.source}://{event.bucket}/{event.key}"


def expected_id(kind: str, ident: str, canonical: str) -> str:
    return sequencer_id("minio-", kind, ident, canonical)


# --------------------------------------------------------------------------- happy path


def test_full_event() -> None:
    event = parse_one(version_id="7a3e6d1c-2b4f-4e8a-9c0d-1f2e3d4c5b6a")
    ident = "minio://photos/2026/summer trip/beach+sunset.jpg"
    assert event == ObjectEvent(
        id=expected_id("created", ident, "17a6b2c3d4e5f607"),
        source="minio",
        bucket="photos",
        key="2026/summer trip/beach+sunset.jpg",
        kind="created",
        event_name="s3:ObjectCreated:Put",
        position="17a6b2c3d4e5f607",
        version_id="7a3e6d1c-2b4f-4e8a-9c0d-1f2e3d4c5b6a",
        size=2457600,
        etag="a1b2c3d4e5f60718293a4b5c6d7e8f90",
        event_time="2026-11-25T10:00:00.123Z",
        origin=ORIGIN,
    )
    assert identity(event) == ident
    assert (MINIO_SOURCE, MINIO_SCHEME, MINIO_EVENT_SOURCE) == ("minio", "minio", "minio:s3")


def test_envelope_and_plain_records_give_the_same_event() -> None:
    record = minio_record(version_id="v1")
    from_envelope = parse_s3_records(webhook(copy.deepcopy(record)), "kafka:minio-events").events
    from_records = parse_s3_records({"Records": [record]}, "kafka:minio-events").events
    assert from_envelope == from_records
    assert len(from_envelope) == 1


@pytest.mark.parametrize(
    "key",
    [
        "photos/something/else.jpg",  # another object
        "photos/2026%2Fsummer+trip%2Fbeach%2Bsunset.jpg",  # the escaped spelling
        "",
        None,
        42,
    ],
)
def test_envelope_key_is_informational(key: Any) -> None:
    document = webhook(minio_record(), key="placeholder")
    document["Key"] = key
    document["EventName"] = "s3:ObjectRemoved:Delete"  # informational too
    (event,) = parse_s3_records(document, ORIGIN).events
    assert event.key == "2026/summer trip/beach+sunset.jpg"  # the record wins
    assert event.kind == "created"


def test_unused_fields_are_ignored() -> None:
    record = minio_record()
    record["source"] = {"anything": [1, 2]}
    record["s3"]["object"]["userMetadata"] = {"X-Amz-Meta-Color": "blue", "nested": {"a": None}}
    record["responseElements"] = None
    assert len(parse_s3_records({"Records": [record]}, ORIGIN).events) == 1


def test_mixed_sources_in_one_document_each_follow_their_rules() -> None:
    document = {
        "Records": [
            minio_record(key="a%2Fb"),
            photos_s3_record("a%2Fb"),
            minio_record(event_name="ObjectCreated:Put"),
            photos_s3_record("a%2Fb") | {"eventVersion": "2.0"},
        ]
    }
    result = parse_s3_records(document, ORIGIN)
    assert [identity(event) for event in result.events] == ["minio://photos/a/b", "s3://photos/a/b"]
    assert [(r.record_index, r.reason) for r in result.rejections] == [
        (2, RejectReason.UNSUPPORTED_EVENT_TYPE),
        (3, RejectReason.UNSUPPORTED_SCHEMA_VERSION),  # 2.0 is MinIO's, not S3's
    ]


# --------------------------------------------------------------------------- names and kinds

EXPECTED_MINIO: dict[str, tuple[str, str]] = {
    "s3:ObjectCreated:Put": ("created", "created"),
    "s3:ObjectCreated:Post": ("created", "created"),
    "s3:ObjectCreated:Copy": ("created", "created"),
    "s3:ObjectCreated:CompleteMultipartUpload": ("created", "created"),
    "s3:ObjectCreated:PutRetention": ("retention_changed", "retention_changed"),
    "s3:ObjectCreated:PutLegalHold": ("retention_changed", "retention_changed"),
    "s3:ObjectCreated:PutTagging": ("tags_changed", "tags_changed"),
    "s3:ObjectCreated:DeleteTagging": ("tags_changed", "tags_changed"),
    "s3:ObjectRemoved:Delete": ("removed", "version_removed"),
    "s3:ObjectRemoved:DeleteMarkerCreated": ("removed", "removed"),
    "s3:ObjectAccessed:Get": ("accessed", "accessed"),
    "s3:ObjectAccessed:Head": ("accessed", "accessed"),
    "s3:ObjectAccessed:GetRetention": ("accessed", "accessed"),
    "s3:ObjectAccessed:GetLegalHold": ("accessed", "accessed"),
    "s3:ObjectAccessed:Attributes": ("accessed", "accessed"),
    "s3:ObjectRestore:Post": ("restore_started", "restore_started"),
    "s3:ObjectRestore:Completed": ("restored", "restored"),
    "s3:ObjectTransition:Complete": ("storage_class_changed", "storage_class_changed"),
    "s3:ObjectTransition:Failed": ("transition_failed", "transition_failed"),
}


def test_table_is_exactly_the_expected_names() -> None:
    assert set(MINIO_EVENT_NAMES) == set(EXPECTED_MINIO)
    assert not set(MINIO_EVENT_NAMES) & set(MINIO_UNMAPPED_NAMES)


@pytest.mark.parametrize("name", sorted(EXPECTED_MINIO))
def test_kinds(name: str) -> None:
    without, with_version = EXPECTED_MINIO[name]
    assert minio_kind_for(name, None) == without
    assert minio_kind_for(name, "v1") == with_version
    info = minio_event_name_info(name)
    assert info is not None
    assert info.sequencer_required is (without in {"created", "removed", "version_removed"})
    assert parse_one(event_name=name).kind == without
    event = parse_one(event_name=name, version_id="v1")
    assert (event.kind, event.event_name, event.version_id) == (with_version, name, "v1")


@pytest.mark.parametrize(
    "name",
    [
        "s3:ObjectCreated:PutRetention",
        "s3:ObjectCreated:PutLegalHold",
        "s3:ObjectCreated:PutTagging",
    ],
)
def test_metadata_operations_are_not_created(name: str) -> None:
    # Filed under ObjectCreated by MinIO, but no content is written.
    assert minio_kind_for(name, None) != "created"


@pytest.mark.parametrize("name", sorted(MINIO_UNMAPPED_NAMES))
def test_unmapped_documented_names(name: str) -> None:
    assert minio_kind_for(name, None) is None
    rejection = reject_one(event_name=name)
    assert rejection.reason is RejectReason.UNSUPPORTED_EVENT_TYPE
    assert "a documented MinIO event that seqgate does not map" in rejection.message
    assert MINIO_UNMAPPED_NAMES[name] in rejection.message


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("ObjectCreated:Put", "MinIO names events with the 's3:' prefix"),
        ("ObjectAccessed:Get", "MinIO names events with the 's3:' prefix"),
        ("Scanner:ManyVersions", "MinIO names events with the 's3:' prefix"),
        ("s3:ObjectCreated:*", ""),
        ("s3:objectcreated:put", ""),
        ("s3:ObjectRemoved:Expire", ""),
        ("s3:TestEvent", ""),
        ("LifecycleExpiration:Delete", ""),  # Amazon S3's, not MinIO's
        ("", ""),
    ],
)
def test_unsupported_names(name: str, hint: str) -> None:
    rejection = reject_one(event_name=name)
    assert rejection.reason is RejectReason.UNSUPPORTED_EVENT_TYPE
    assert rejection.message.startswith("Records[0].eventName ")
    assert "s3:ObjectCreated:*" in rejection.message
    assert "docs/kinds.md" in rejection.message
    assert hint in rejection.message
    assert len(rejection.message) < 500


@pytest.mark.parametrize("name", [ABSENT, None, 7, ["s3:ObjectCreated:Put"]])
def test_missing_or_mistyped_names(name: Any) -> None:
    assert reject_one(event_name=name).reason is RejectReason.UNSUPPORTED_EVENT_TYPE


# --------------------------------------------------------------------------- schema version


@pytest.mark.parametrize("version", ["2.0", "2.1", "2.00", "2.10", "2." + "9" * 1000])
def test_supported_versions(version: str) -> None:
    assert accepts_schema_version(version)
    parse_one(version=version)


@pytest.mark.parametrize(
    "version", ["1.0", "3.0", "2", "2.", "2.x", " 2.0", "2.0 ", "2.0.1", "v2.0", "", "2.\u0660"]
)
def test_unsupported_versions(version: str) -> None:
    assert not accepts_schema_version(version)
    rejection = reject_one(version=version)
    assert rejection.reason is RejectReason.UNSUPPORTED_SCHEMA_VERSION
    assert "MinIO event schema 2.x" in rejection.message


@pytest.mark.parametrize("version", [ABSENT, None, 2.0, 2, ["2.0"]])
def test_missing_or_non_string_version(version: Any) -> None:
    assert reject_one(version=version).reason is RejectReason.UNSUPPORTED_SCHEMA_VERSION


# --------------------------------------------------------------------------- sequencer


@pytest.mark.parametrize(
    "name",
    [
        "s3:ObjectCreated:Put",
        "s3:ObjectCreated:CompleteMultipartUpload",
        "s3:ObjectRemoved:Delete",
        "s3:ObjectRemoved:DeleteMarkerCreated",
    ],
)
@pytest.mark.parametrize(("sequencer", "detail"), [(ABSENT, "is missing"), (None, "is missing")])
def test_sequencer_required_for_content_changes(name: str, sequencer: Any, detail: str) -> None:
    rejection = reject_one(event_name=name, sequencer=sequencer, version_id="v1")
    assert rejection.reason is RejectReason.INVALID_SEQUENCER
    assert detail in rejection.message
    assert "MinIO sends one" in rejection.message


@pytest.mark.parametrize(
    "name",
    ["s3:ObjectAccessed:Get", "s3:ObjectCreated:PutTagging", "s3:ObjectTransition:Failed"],
)
def test_sequencer_optional_for_other_kinds(name: str) -> None:
    event = parse_one(event_name=name, sequencer=ABSENT)
    assert event.position is None
    assert event.id.startswith("minio-")
    again = parse_one(event_name=name, sequencer=ABSENT)
    assert again.id == event.id


@pytest.mark.parametrize("name", ["s3:ObjectCreated:Put", "s3:ObjectAccessed:Head"])
@pytest.mark.parametrize(
    ("sequencer", "detail"),
    [
        ("", "is empty"),
        ("0x17A6", "is not hexadecimal"),
        ("17A6B2C3D4E5F6G7", "is not hexadecimal"),
        ("1.7e18", "is not hexadecimal"),
        (1700000000000000000, "must be a string"),
    ],
)
def test_invalid_sequencer(name: str, sequencer: Any, detail: str) -> None:
    rejection = reject_one(event_name=name, sequencer=sequencer)
    assert rejection.reason is RejectReason.INVALID_SEQUENCER
    assert rejection.message.startswith("Records[0].s3.object.sequencer ")
    assert detail in rejection.message


def test_position_is_the_lowercased_sequencer() -> None:
    assert parse_one(sequencer="17A6B2C3D4E5F607").position == "17a6b2c3d4e5f607"
    assert parse_one(sequencer="0017A6B2C3D4E5F607").position == "0017a6b2c3d4e5f607"


# --------------------------------------------------------------------------- event ids


def test_event_id_formula() -> None:
    ident = "minio://photos/a b+c.jpg"
    assert minio_event_id("created", ident, "17A6B2C3D4E5F607") == expected_id(
        "created", ident, "17a6b2c3d4e5f607"
    )
    # MinIO positions compare numerically: leading zeros are insignificant.
    assert minio_event_id("created", ident, "0017A6") == expected_id("created", ident, "17a6")
    assert minio_event_id("created", ident, "000") == expected_id("created", ident, "0")
    with pytest.raises(ValueError):
        minio_event_id("created", ident, "xyz")


def test_event_id_golden_values() -> None:
    # Pinned: a change here changes every downstream idempotency key for MinIO.
    assert (
        minio_event_id(
            "created", "minio://photos/2026/summer trip/beach+sunset.jpg", "17A6B2C3D4E5F607"
        )
        == "minio-b8aea8a555f5501e191d8d80f99d6185"
    )
    assert (
        minio_event_id("version_removed", "minio://b/café €.txt", "00F0")
        == "minio-37bea143c1b34c3b7387d015344a628b"
    )


def test_event_id_is_stable_and_never_an_s3_id() -> None:
    first = parse_one()
    assert parse_one().id == first.id
    assert parse_one(sequencer="0017a6b2c3d4e5f607").id == first.id  # same value
    assert parse_one(sequencer="17A6B2C3D4E5F608").id != first.id
    assert parse_one(event_name="s3:ObjectCreated:Copy").id == first.id  # same kind, same write
    assert parse_one(event_name="s3:ObjectRemoved:Delete").id != first.id
    assert parse_one(key="other.jpg").id != first.id
    assert parse_one(bucket="other").id != first.id
    s3_id = s3_event_id("created", f"s3://photos/{first.key}", "17A6B2C3D4E5F607")
    assert first.id != s3_id
    assert first.id.startswith("minio-")
    assert len(first.id) == len("minio-") + 32


def test_event_id_does_not_depend_on_informational_fields() -> None:
    base = parse_one()
    assert parse_one(event_time="2030-01-01T00:00:00Z", etag="x", size=1).id == base.id


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize(
    ("raw", "decoded"),
    [
        ("2026%2Fsummer+trip%2Fbeach%2Bsunset.jpg", "2026/summer trip/beach+sunset.jpg"),
        ("100%2525.txt", "100%25.txt"),  # decoded once, never twice
        ("caf%C3%A9", "café"),
        ("a%2Fb%2F%2Fc", "a/b//c"),
    ],
)
def test_key_decoding(raw: str, decoded: str) -> None:
    assert parse_one(key=raw).key == decoded


@pytest.mark.parametrize(
    ("key", "reason"),
    [
        ("bad%zz", RejectReason.INVALID_KEY_ENCODING),
        ("%FF", RejectReason.INVALID_KEY_ENCODING),
        ("", RejectReason.MISSING_FIELD),
        (ABSENT, RejectReason.MISSING_FIELD),
        (7, RejectReason.INVALID_FIELD),
    ],
)
def test_bad_keys(key: Any, reason: RejectReason) -> None:
    assert reject_one(key=key).reason is reason


# --------------------------------------------------------------------------- fixtures

VID = "7a3e6d1c-2b4f-4e8a-9c0d-1f2e3d4c5b6a"
MKEY = "2026/summer trip/beach+sunset.jpg"

# name -> (kind, key, position, version_id) for one event, or the rejection reason.
FIXTURE_OUTCOMES: dict[str, tuple[str, str, str, str | None] | RejectReason] = {
    "webhook_created_put": ("created", MKEY, "17a6b2c3d4e5f607", VID),
    "records_created_put": ("created", MKEY, "17a6b2c3d4e5f607", VID),
    "created_post": ("created", MKEY, "17a6b2c3d4e5f608", None),
    "created_copy": ("created", "2026/copies/beach.jpg", "17a6b2c3d4e5f609", None),
    "created_complete_multipart_upload": ("created", "videos/trip.mp4", "17a6b2c3d4e5f60a", None),
    "put_retention": ("retention_changed", MKEY, "17a6b2c3d4e5f60b", VID),
    "put_legal_hold": ("retention_changed", MKEY, "17a6b2c3d4e5f60c", VID),
    "put_tagging": ("tags_changed", MKEY, "17a6b2c3d4e5f60d", VID),
    "delete_tagging": ("tags_changed", MKEY, "17a6b2c3d4e5f60e", VID),
    "removed_delete_unversioned": ("removed", "scratch/tmp file.txt", "17a6b2c3d4e5f60f", None),
    "removed_delete_version": ("version_removed", MKEY, "17a6b2c3d4e5f610", VID),
    "removed_delete_marker_created": (
        "removed",
        MKEY,
        "17a6b2c3d4e5f611",
        "0b9d7c64-3f52-4e1a-8d2c-5a6b7c8d9e0f",
    ),
    "accessed_get": ("accessed", MKEY, "17a6b2c3d4e5f612", VID),
    "accessed_head": ("accessed", MKEY, "17a6b2c3d4e5f613", VID),
    "restore_post": ("restore_started", "archive/2019.tar", "17a6b2c3d4e5f614", None),
    "restore_completed": ("restored", "archive/2019.tar", "17a6b2c3d4e5f615", None),
    "transition_complete": ("storage_class_changed", "archive/2019.tar", "17a6b2c3d4e5f616", None),
    "transition_failed": ("transition_failed", "archive/2020.tar", "17a6b2c3d4e5f617", None),
    "scanner_many_versions": RejectReason.UNSUPPORTED_EVENT_TYPE,
    "replication_complete": RejectReason.UNSUPPORTED_EVENT_TYPE,
}


def load(name: str) -> Any:
    return json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))


def test_every_fixture_is_covered() -> None:
    assert {path.stem for path in FIXTURES.glob("*.json")} == {*FIXTURE_OUTCOMES, "tricky_keys"}


@pytest.mark.parametrize("name", sorted(FIXTURE_OUTCOMES))
def test_fixtures(name: str) -> None:
    document = load(name)
    result = parse_s3_records(document, f"file:{name}.json:1")
    expected = FIXTURE_OUTCOMES[name]
    if isinstance(expected, RejectReason):
        assert [(r.reason, r.record_index) for r in result.rejections] == [(expected, 0)]
        assert result.events == []
        return
    kind, key, position, version_id = expected
    assert result.rejections == []
    (event,) = result.events
    assert (event.kind, event.key, event.position, event.version_id) == (
        kind,
        key,
        position,
        version_id,
    )
    assert (event.source, event.bucket) == ("minio", "photos")
    assert event.event_name == document["Records"][0]["eventName"]
    assert event.id == minio_event_id(kind, identity(event), position)
    if "Key" in document:  # the webhook envelope agrees with the record here
        assert document["Key"] == f"{event.bucket}/{event.key}"
        assert document["EventName"] == event.event_name


def test_fixture_envelope_equals_plain_records() -> None:
    envelope = parse_s3_records(load("webhook_created_put"), "http:/minio").events
    plain = parse_s3_records(load("records_created_put"), "http:/minio").events
    assert envelope == plain
    (event,) = envelope
    assert (identity(event), event.kind, event.position) == (
        f"minio://photos/{MKEY}",
        "created",
        "17a6b2c3d4e5f607",
    )


def test_fixture_tricky_keys() -> None:
    document = load("tricky_keys")
    raw = [record["s3"]["object"]["key"] for record in document["Records"]]
    assert raw == [go_query_escape(key) for key in TRICKY_KEYS]  # written as MinIO escapes
    assert_tricky_keys(parse_s3_records(document, ORIGIN))
