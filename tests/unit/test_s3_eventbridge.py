"""S3 events from EventBridge (seqgate/connectors/parsers/s3/eventbridge.py)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from seqgate_devtools import samples
from seqgate_devtools.samples import form_encode_key, s3_notification, s3_record

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.parsers.s3 import event_names as s3_event_names
from seqgate.connectors.parsers.s3.eventbridge import (
    EVENTBRIDGE_KINDS,
    OBJECT_CREATED,
    OBJECT_DELETED,
    SUPPORTED_DETAIL_TYPES,
    parse_eventbridge_event,
)
from seqgate.schemas.kinds import KIND_DESCRIPTIONS, SEQUENCED_KINDS
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.builders import ABSENT, only_event, only_rejection, with_members
from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "aws"
ORIGIN = "sqs:eventbridge-target"

# eventbridge_event's keywords and the members they set.
EVENT_MEMBERS: dict[str, tuple[str, ...]] = {
    "key": ("detail", "object", "key"),
    "bucket": ("detail", "bucket", "name"),
    "detail_type": ("detail-type",),
    "deletion_type": ("detail", "deletion-type"),
    "sequencer": ("detail", "object", "sequencer"),
    "version_id": ("detail", "object", "version-id"),
    "event_id": ("id",),
    "source": ("source",),
    "size": ("detail", "object", "size"),
    "etag": ("detail", "object", "etag"),
}


def eventbridge_event(**members: Any) -> dict[str, Any]:
    """An S3 event as EventBridge delivers it:
    :func:`seqgate_devtools.samples.eventbridge_event`.

    Each keyword of EVENT_MEMBERS writes its member as given (``key`` is the
    real name: EventBridge does not encode it); ABSENT leaves it out, and so
    does None for the optional ``version_id`` and ``deletion_type``.
    """
    for optional in ("version_id", "deletion_type"):
        if members.get(optional, ABSENT) is None:
            members[optional] = ABSENT
    return with_members(samples.eventbridge_event(), EVENT_MEMBERS, members)


def parse(document: object) -> ParseResult:
    return normalize(json.dumps(document).encode("utf-8"), ORIGIN)


def whole_rejection(result: ParseResult) -> Rejection:
    """The one rejection of ``result``, of the whole document."""
    rejection = only_rejection(result)
    assert rejection.record_index is None
    return rejection


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


# --------------------------------------------------------------------------- fixtures


def test_object_created_fixture() -> None:
    event = only_event(normalize(fixture("eventbridge_object_created.json"), ORIGIN))
    assert event == ObjectEvent(
        id="17793124-05d4-4198-8fde-7ededc63b103",
        source="s3",
        bucket="example-input",
        key="incoming/June report+final.csv",
        kind="created",
        event_name="Object Created",
        position="0055aed6dcd90281e5",
        version_id="3HL4kqtJlcpXroDTDmJ.rmSpXd3dIbrHY",
        size=1024,
        etag="d41d8cd98f00b204e9800998ecf8427e",
        event_time="2026-11-25T10:00:00Z",
        origin=ORIGIN,
    )


@pytest.mark.parametrize(
    ("name", "bucket", "key", "kind", "version_id", "position"),
    [
        (
            "eventbridge_object_deleted_delete_marker.json",
            "example-input",
            "incoming/June report+final.csv",
            "removed",
            "pX9.delete.marker.version.id.0001",
            "0055aed6dcd9028200",
        ),
        (
            "eventbridge_object_deleted_version.json",
            "example-input",
            "a+b%20c",
            "version_removed",
            "older.version.of.a.plus.b.000000001",
            "0071a2b3c4d5e6f708",
        ),
        (
            "eventbridge_object_deleted_unversioned.json",
            "example-scratch",
            "a+b%20c",
            "removed",
            None,
            "0071a2b3c4d5e6f710",
        ),
    ],
)
def test_object_deleted_fixtures(
    name: str, bucket: str, key: str, kind: str, version_id: str | None, position: str
) -> None:
    event = only_event(normalize(fixture(name), ORIGIN))
    assert (event.bucket, event.key, event.kind) == (bucket, key, kind)
    assert (event.version_id, event.position, event.event_name) == (
        version_id,
        position,
        "Object Deleted",
    )
    assert event.size is None and event.etag is None


def test_restore_fixture_has_no_position() -> None:
    event = only_event(normalize(fixture("eventbridge_object_restore_completed.json"), ORIGIN))
    assert (event.key, event.kind, event.position) == (
        "archive/2019 ledger+notes.csv",
        "restored",
        None,
    )
    assert event.id == "6924de0d-13e2-4bbf-9a4c-7c2d1f8b0e51"
    assert event.event_name == "Object Restore Completed"


# --------------------------------------------------------------------------- keys


@pytest.mark.parametrize(
    "key",
    [
        "a+b%20c",
        "100%",
        "%zz%",
        "a%2Fb",
        "June report+final.csv",
        "/leading//a///b/",
        "données/日本語/файл 🚀.txt",
        "k/" + "ñ" * 511,
        " ",
    ],
)
def test_keys_are_verbatim_never_decoded(key: str) -> None:
    assert only_event(parse(eventbridge_event(key=key))).key == key


@pytest.mark.parametrize(
    "key", ["a+b c", "100% done/a%2Fb", "données/été 🚀", "/x//y/", "k/" + "ñ" * 511]
)
def test_identity_and_position_equal_the_native_parser(key: str) -> None:
    native = s3_notification(s3_record(key=form_encode_key(key), sequencer="617F08299329D189"))
    expected = only_event(parse(native))
    event = only_event(parse(eventbridge_event(key=key, sequencer="617f08299329d189")))
    assert (event.bucket, event.key, event.kind, event.position) == (
        expected.bucket,
        expected.key,
        expected.kind,
        expected.position,
    )


def test_lone_surrogate_key_is_a_key_encoding_rejection() -> None:
    rejection = whole_rejection(parse(eventbridge_event(key="a\ud800b")))
    assert rejection.reason is RejectReason.INVALID_KEY_ENCODING
    assert rejection.message.startswith("detail.object.key ")
    rejection.message.encode("utf-8")


# --------------------------------------------------------------------------- kinds


@pytest.mark.parametrize(
    ("detail_type", "kind"),
    [
        ("Object Created", "created"),
        ("Object Restore Initiated", "restore_started"),
        ("Object Restore Completed", "restored"),
        ("Object Restore Expired", "restore_expired"),
        ("Object Tags Added", "tags_changed"),
        ("Object Tags Deleted", "tags_changed"),
        ("Object ACL Updated", "acl_changed"),
        ("Object Storage Class Changed", "storage_class_changed"),
        ("Object Access Tier Changed", "access_tier_changed"),
    ],
)
def test_detail_types_and_kinds(detail_type: str, kind: str) -> None:
    event = only_event(parse(eventbridge_event(detail_type=detail_type)))
    assert (event.kind, event.event_name, event.position) == (kind, detail_type, "617f08299329d189")


@pytest.mark.parametrize(
    ("deletion_type", "version_id", "kind"),
    [
        ("Delete Marker Created", "m1", "removed"),
        ("Delete Marker Created", None, "removed"),
        ("Permanently Deleted", "v1", "version_removed"),
        ("Permanently Deleted", None, "removed"),
        ("Permanently Deleted", "", "removed"),  # an empty version-id is none
    ],
)
def test_object_deleted_kinds(deletion_type: str, version_id: str | None, kind: str) -> None:
    document = eventbridge_event(
        detail_type=OBJECT_DELETED, deletion_type=deletion_type, version_id=version_id
    )
    assert only_event(parse(document)).kind == kind


@pytest.mark.parametrize(
    ("deletion_type", "reason", "start"),
    [
        (None, RejectReason.MISSING_FIELD, "detail.deletion-type is missing"),
        (1, RejectReason.INVALID_FIELD, "detail.deletion-type must be"),
        (
            "Soft Deleted",
            RejectReason.UNSUPPORTED_EVENT_TYPE,
            'detail.deletion-type "Soft Deleted"',
        ),
        ("permanently deleted", RejectReason.UNSUPPORTED_EVENT_TYPE, "detail.deletion-type"),
    ],
)
def test_object_deleted_needs_a_known_deletion_type(
    deletion_type: Any, reason: RejectReason, start: str
) -> None:
    document = eventbridge_event(detail_type=OBJECT_DELETED, deletion_type=deletion_type)
    rejection = whole_rejection(parse(document))
    assert rejection.reason is reason
    assert rejection.message.startswith(start), rejection.message


@pytest.mark.parametrize(
    ("detail_type", "reason"),
    [
        ("Object Lost", RejectReason.UNSUPPORTED_EVENT_TYPE),
        ("object created", RejectReason.UNSUPPORTED_EVENT_TYPE),
        ("ObjectCreated:Put", RejectReason.UNSUPPORTED_EVENT_TYPE),
        ("", RejectReason.UNSUPPORTED_EVENT_TYPE),
        (ABSENT, RejectReason.MISSING_FIELD),
        (["Object Created"], RejectReason.INVALID_FIELD),
    ],
)
def test_unsupported_detail_types(detail_type: Any, reason: RejectReason) -> None:
    rejection = whole_rejection(parse(eventbridge_event(detail_type=detail_type)))
    assert rejection.reason is reason
    assert rejection.message.startswith("detail-type ")
    if reason is RejectReason.UNSUPPORTED_EVENT_TYPE:
        assert "Object Created, Object Deleted, Object Restore Initiated" in rejection.message


def test_kinds_are_those_of_the_native_event_names() -> None:
    # The native name of the same meaning, per AWS's EventBridge and SQS/SNS/Lambda lists.
    same_meaning = {
        "Object Created": "ObjectCreated:Put",
        "Object Restore Initiated": "ObjectRestore:Post",
        "Object Restore Completed": "ObjectRestore:Completed",
        "Object Restore Expired": "ObjectRestore:Delete",
        "Object Tags Added": "ObjectTagging:Put",
        "Object Tags Deleted": "ObjectTagging:Delete",
        "Object ACL Updated": "ObjectAcl:Put",
        "Object Storage Class Changed": "LifecycleTransition",
        "Object Access Tier Changed": "IntelligentTiering",
    }
    assert set(same_meaning) == set(EVENTBRIDGE_KINDS)
    for detail_type, native in same_meaning.items():
        assert EVENTBRIDGE_KINDS[detail_type] == s3_event_names.kind_for(native, None), detail_type
    for deletion, version, native in [
        ("Delete Marker Created", "m", "ObjectRemoved:DeleteMarkerCreated"),
        ("Permanently Deleted", "v", "ObjectRemoved:Delete"),
        ("Permanently Deleted", None, "ObjectRemoved:Delete"),
    ]:
        document = eventbridge_event(
            detail_type=OBJECT_DELETED, deletion_type=deletion, version_id=version
        )
        assert only_event(parse(document)).kind == s3_event_names.kind_for(native, version)
    assert set(SUPPORTED_DETAIL_TYPES) == {*EVENTBRIDGE_KINDS, OBJECT_DELETED}
    assert set(EVENTBRIDGE_KINDS.values()) <= set(KIND_DESCRIPTIONS)


# --------------------------------------------------------------------------- sequencer


@pytest.mark.parametrize("detail_type", [OBJECT_CREATED, OBJECT_DELETED])
@pytest.mark.parametrize(
    ("sequencer", "detail"),
    [
        (ABSENT, "is missing"),
        (None, "is missing"),
        ("", "is empty"),
        ("61 7f", "is not hexadecimal"),
        ("0x617f", "is not hexadecimal"),
        ("\uff16\uff11", "is not hexadecimal"),  # fullwidth digits are not ASCII hex
        (617, "must be a string, got number 617"),
    ],
)
def test_sequencer_is_required_for_created_and_deleted(
    detail_type: str, sequencer: Any, detail: str
) -> None:
    document = eventbridge_event(
        detail_type=detail_type, deletion_type="Permanently Deleted", sequencer=sequencer
    )
    if detail_type == OBJECT_CREATED:
        del document["detail"]["deletion-type"]
    rejection = whole_rejection(parse(document))
    assert rejection.reason is RejectReason.INVALID_SEQUENCER
    assert rejection.message.startswith("detail.object.sequencer ")
    assert detail in rejection.message


@pytest.mark.parametrize("detail_type", sorted(set(EVENTBRIDGE_KINDS) - {OBJECT_CREATED}))
def test_sequencer_is_optional_for_the_other_types(detail_type: str) -> None:
    for absent in [ABSENT, None]:
        event = only_event(parse(eventbridge_event(detail_type=detail_type, sequencer=absent)))
        assert event.position is None
    assert (
        only_event(parse(eventbridge_event(detail_type=detail_type, sequencer="0AbC"))).position
        == "0abc"
    )
    rejection = whole_rejection(parse(eventbridge_event(detail_type=detail_type, sequencer="xyz")))
    assert rejection.reason is RejectReason.INVALID_SEQUENCER


def test_sequencer_requirement_matches_the_sequenced_kinds() -> None:
    for detail_type in SUPPORTED_DETAIL_TYPES:
        document = eventbridge_event(
            detail_type=detail_type, deletion_type="Permanently Deleted", sequencer=ABSENT
        )
        result = parse(document)
        kind = EVENTBRIDGE_KINDS.get(detail_type, "removed")
        required = kind in SEQUENCED_KINDS
        assert bool(result.rejections) == required, detail_type


def test_position_is_the_lowercased_sequencer() -> None:
    event = only_event(parse(eventbridge_event(sequencer="00617F08299329D18900")))
    assert event.position == "00617f08299329d18900"


# --------------------------------------------------------------------------- envelope


@pytest.mark.parametrize(
    ("source", "start"),
    [
        ("aws.ec2", "source is \"aws.ec2\": expected 'aws.s3'"),
        ("aws:s3", 'source is "aws:s3"'),
        ("AWS.S3", 'source is "AWS.S3"'),
        (None, "source is null"),
        (ABSENT, "source is missing"),
    ],
)
def test_wrong_event_source(source: Any, start: str) -> None:
    rejection = whole_rejection(parse(eventbridge_event(source=source)))
    assert rejection.reason is RejectReason.WRONG_EVENT_SOURCE
    assert rejection.message.startswith(start.replace("is null", "is missing"))


def test_other_services_events_are_wrong_source_not_unknown_shapes() -> None:
    ec2 = {
        "version": "0",
        "id": "7bf73129-1428-4cd3-a780-95db273d1602",
        "detail-type": "EC2 Instance State-change Notification",
        "source": "aws.ec2",
        "detail": {"instance-id": "i-abcd1111", "state": "pending"},
    }
    assert whole_rejection(parse(ec2)).reason is RejectReason.WRONG_EVENT_SOURCE


@pytest.mark.parametrize(
    ("edit", "reason", "start"),
    [
        (
            lambda e: e.update(version="1"),
            RejectReason.UNSUPPORTED_SCHEMA_VERSION,
            'version is "1"',
        ),
        (
            lambda e: e.update(version=0),
            RejectReason.UNSUPPORTED_SCHEMA_VERSION,
            "version is number 0",
        ),
        (lambda e: e.pop("version"), RejectReason.UNSUPPORTED_SCHEMA_VERSION, "version is missing"),
        (
            lambda e: e["detail"].update({"event-version": "2.0"}),
            RejectReason.UNSUPPORTED_SCHEMA_VERSION,
            'detail.event-version "2.0" is not supported',
        ),
        (
            lambda e: e["detail"].update({"event-version": 1}),
            RejectReason.UNSUPPORTED_SCHEMA_VERSION,
            "detail.event-version number 1",
        ),
        (lambda e: e.pop("id"), RejectReason.MISSING_FIELD, "id is missing"),
        (lambda e: e.update(id=""), RejectReason.MISSING_FIELD, "id is missing"),
        (
            lambda e: e.update(id=42),
            RejectReason.INVALID_FIELD,
            "id must be a non-empty string, got number 42",
        ),
        (lambda e: e.pop("detail"), RejectReason.MISSING_FIELD, "detail is missing"),
        (
            lambda e: e.update(detail="{}"),
            RejectReason.INVALID_FIELD,
            "detail must be a JSON object",
        ),
        (
            lambda e: e["detail"].pop("bucket"),
            RejectReason.MISSING_FIELD,
            "detail.bucket is missing",
        ),
        (
            lambda e: e["detail"].update(bucket=[]),
            RejectReason.INVALID_FIELD,
            "detail.bucket must be a JSON object, got array",
        ),
        (
            lambda e: e["detail"]["bucket"].update(name=""),
            RejectReason.MISSING_FIELD,
            "detail.bucket.name is missing",
        ),
        (
            lambda e: e["detail"]["bucket"].update(name=7),
            RejectReason.INVALID_FIELD,
            "detail.bucket.name must be",
        ),
        (
            lambda e: e["detail"]["bucket"].update(name="a/b"),
            RejectReason.INVALID_FIELD,
            "detail.bucket.name \"a/b\" contains '/'",
        ),
        (
            lambda e: e["detail"].pop("object"),
            RejectReason.MISSING_FIELD,
            "detail.object is missing",
        ),
        (
            lambda e: e["detail"].update(object=None),
            RejectReason.MISSING_FIELD,
            "detail.object is missing",
        ),
        (
            lambda e: e["detail"]["object"].pop("key"),
            RejectReason.MISSING_FIELD,
            "detail.object.key is missing",
        ),
        (
            lambda e: e["detail"]["object"].update(key=""),
            RejectReason.MISSING_FIELD,
            "detail.object.key is missing",
        ),
        (
            lambda e: e["detail"]["object"].update(key=["a"]),
            RejectReason.INVALID_FIELD,
            "detail.object.key must be a non-empty string, got array",
        ),
        (
            lambda e: e["detail"]["object"].update(size=-1),
            RejectReason.INVALID_FIELD,
            "detail.object.size must be a non-negative integer",
        ),
        (
            lambda e: e["detail"]["object"].update(size="5"),
            RejectReason.INVALID_FIELD,
            "detail.object.size",
        ),
        (
            lambda e: e["detail"]["object"].update(size=True),
            RejectReason.INVALID_FIELD,
            "detail.object.size",
        ),
        (
            lambda e: e["detail"]["object"].update(size=5.0),
            RejectReason.INVALID_FIELD,
            "detail.object.size",
        ),
        (
            lambda e: e["detail"]["object"].update(etag=1),
            RejectReason.INVALID_FIELD,
            "detail.object.etag must be a string",
        ),
        (
            lambda e: e["detail"]["object"].update({"version-id": {}}),
            RejectReason.INVALID_FIELD,
            "detail.object.version-id must be a string",
        ),
        (lambda e: e.update(time=1), RejectReason.INVALID_FIELD, "time must be a string"),
    ],
)
def test_field_rules(edit: Any, reason: RejectReason, start: str) -> None:
    document = eventbridge_event()
    edit(document)
    rejection = whole_rejection(parse(document))
    assert rejection.reason is reason
    assert rejection.message.startswith(start), rejection.message


def test_optional_fields() -> None:
    document = eventbridge_event(size=ABSENT, etag=ABSENT)
    document["detail"]["event-version"] = "1.7"
    del document["time"]
    event = only_event(parse(document))
    assert (event.size, event.etag, event.version_id, event.event_time) == (None, None, None, None)
    document = eventbridge_event(size=None, etag="")
    event = only_event(parse(document))
    assert (event.size, event.etag) == (None, None)
    assert only_event(parse(eventbridge_event(size=0))).size == 0


def test_extra_members_are_ignored() -> None:
    document = eventbridge_event()
    document["detail"]["future-field"] = {"x": [1, 2]}
    document["detail"]["object"]["checksum"] = "abc"
    document["replay-name"] = "replay-1"
    assert only_event(parse(document)).key == "incoming/June report+final.csv"


def test_event_id_is_eventbridges_and_stable() -> None:
    document = eventbridge_event(event_id="5a8e2c1d-3b4f-4a6e-9d7c-0e1f2a3b4c5d")
    first = only_event(parse(document))
    again = only_event(parse(copy.deepcopy(document)))
    assert first.id == again.id == "5a8e2c1d-3b4f-4a6e-9d7c-0e1f2a3b4c5d"


def test_through_sqs_messages_name_the_path() -> None:
    bad = eventbridge_event(sequencer="")
    body = json.dumps(bad)
    document = {
        "Messages": [{"MessageId": "1", "Body": json.dumps(eventbridge_event())}, {"Body": body}]
    }
    result = parse(document)
    assert len(result.events) == 1
    [rejection] = result.rejections
    assert rejection.record_index == 1
    assert rejection.message.startswith("Messages[1].Body.detail.object.sequencer is empty")


def test_recognized_by_detail_type_or_by_source_and_detail() -> None:
    document = eventbridge_event()
    del document["detail-type"]
    assert whole_rejection(parse(document)).reason is RejectReason.MISSING_FIELD
    only_detail_type = {"detail-type": "Object Created"}
    assert whole_rejection(parse(only_detail_type)).reason is RejectReason.WRONG_EVENT_SOURCE


def test_direct_call_without_a_dict_does_not_raise() -> None:
    values: list[object] = [None, [], "x", 1]
    for value in values:
        rejection = whole_rejection(parse_eventbridge_event(value, ORIGIN))
        assert rejection.reason is RejectReason.NOT_A_NOTIFICATION
        assert rejection.message.startswith("the body must be a JSON object")
    rejection = whole_rejection(parse_eventbridge_event([], ORIGIN, "Messages[0].Body"))
    assert rejection.message.startswith("Messages[0].Body must be a JSON object")
