"""Google Cloud Storage notifications through Pub/Sub (seqgate/connectors/parsers/gcs.py)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.connectors.parsers.gcs import (
    GCS_EVENT_TYPES,
    OVERWRITTEN_GENERATION,
    gcs_event_id,
    gcs_position,
    looks_like_gcs,
    parse_gcs,
)
from seqgate.connectors.parsers.results import Ignored, ParseResult
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.ordering import AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.builders import only_event, only_rejection, sequencer_id
from tests.support.gcs_samples import (
    ABSENT,
    BUCKET,
    GENERATION,
    NAME,
    encode_data,
    notification,
    notification_attributes,
    object_resource,
    pubsub_message,
    pull_response,
    push_envelope,
)
from tests.support.paths import FIXTURES as ALL_FIXTURES
from tests.support.strategies import json_documents

FIXTURES = ALL_FIXTURES / "gcs"
ORIGIN = "http:/gcs/push"
IDENTITY = f"gs://{BUCKET}/{NAME}"


def parse(document: Any) -> ParseResult:
    return parse_gcs(document, ORIGIN)


def only_ignored(result: ParseResult) -> Ignored:
    assert result.events == [] and result.rejections == [], result
    [ignored] = result.ignored
    return ignored


def reject(document: Any) -> Rejection:
    return only_rejection(parse(document))


# --------------------------------------------------------------------------- fixtures


def fixture(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def test_finalize_of_an_overwrite_is_created() -> None:
    event = only_event(parse(fixture("push_finalize_overwrite.json")))
    assert event == ObjectEvent(
        id=sequencer_id("gcs-", "created", IDENTITY, "1764068400654321"),
        source="gcs",
        bucket=BUCKET,
        key=NAME,
        kind="created",
        event_name="OBJECT_FINALIZE",
        position="00001764068400654321",
        version_id="1764068400654321",
        size=3145728,
        etag="CLHS2ZL0jIoDEAE=",
        event_time="2026-11-25T11:00:00.654321Z",
        origin=ORIGIN,
    )


@pytest.mark.parametrize("name", ["push_delete_overwritten.json", "push_archive_overwritten.json"])
def test_archive_or_delete_caused_by_an_overwrite_is_ignored(name: str) -> None:
    ignored = only_ignored(parse(fixture(name)))
    assert ignored.reason == OVERWRITTEN_GENERATION == "gcs_overwritten_generation"
    assert ignored.record_index is None
    assert "1764068400654321" in ignored.message and IDENTITY in ignored.message


def test_archive_is_removed() -> None:
    event = only_event(parse(fixture("push_archive.json")))
    assert (event.kind, event.event_name) == ("removed", "OBJECT_ARCHIVE")
    assert event.version_id == "1764068400654321"
    assert event.id == sequencer_id("gcs-", "removed", IDENTITY, "1764068400654321")


def test_purged_noncurrent_generation_is_version_removed() -> None:
    event = only_event(parse(fixture("pulled_delete_noncurrent.json")))
    assert (event.kind, event.event_name) == ("version_removed", "OBJECT_DELETE")
    assert event.position == "00001764064800123456"
    assert event.event_time == "2026-12-25T03:12:44.918230Z"


def test_metadata_update_is_metadata_changed() -> None:
    event = only_event(parse(fixture("push_metadata_update.json")))
    assert (event.kind, event.event_name) == ("metadata_changed", "OBJECT_METADATA_UPDATE")
    assert event.id == sequencer_id("gcs-", "metadata_changed", IDENTITY, "1764068400654321.2")
    assert event.etag == "CLHS2ZL0jIoDEAI="


def test_payload_none_is_built_from_the_attributes() -> None:
    event = only_event(parse(fixture("push_payload_none.json")))
    assert event.key == "reports/q4 2026/summary%2Fdraft.pdf"  # names are not URL-encoded
    assert (event.kind, event.version_id, event.size, event.etag) == (
        "created",
        "1764070000000001",
        None,
        None,
    )
    assert event.event_time == "2026-11-25T11:26:40.000001Z"


def test_pull_response_parses_each_message_on_its_own() -> None:
    result = parse(fixture("pull_response_one_bad.json"))
    assert len(result) == 2
    assert [event.key for event in result.events] == ["inbox/a.txt"]
    [rejection] = result.rejections
    assert rejection.reason is RejectReason.INVALID_FIELD
    assert rejection.record_index == 1
    assert "receivedMessages[1].message.data" in rejection.message
    assert "base64" in rejection.message


def test_message_without_gcs_attributes_is_not_a_notification() -> None:
    document = fixture("push_not_a_notification.json")
    assert not looks_like_gcs(document)
    rejection = reject(document)
    assert rejection.reason is RejectReason.NOT_A_NOTIFICATION
    assert rejection.record_index is None
    assert "message.attributes" in rejection.message


def test_fixture_events_survive_the_avro_codec() -> None:
    events = [
        event for path in FIXTURES.glob("*.json") for event in parse(fixture(path.name)).events
    ]
    assert len(events) >= 6
    for event in events:
        assert OBJECT_EVENT.decode(OBJECT_EVENT.encode(event)) == event


def test_every_fixture_but_the_foreign_message_looks_like_gcs() -> None:
    names = sorted(path.name for path in FIXTURES.glob("*.json"))
    assert len(names) >= 8
    for name in names:
        assert looks_like_gcs(fixture(name)) is (name != "push_not_a_notification.json"), name


# --------------------------------------------------------------------------- shapes


def test_push_pulled_and_pull_response_give_the_same_event() -> None:
    message = notification()
    pushed = only_event(parse(push_envelope(message)))
    pulled = only_event(parse(message))
    [from_response] = parse(pull_response(message)).events
    assert pushed == pulled == from_response


def test_copies_with_other_message_ids_get_the_same_event_id() -> None:
    first = pubsub_message(object_resource(), notification_attributes(), message_id="1")
    second = pubsub_message(object_resource(), notification_attributes(), message_id="2")
    assert only_event(parse(first)).id == only_event(parse(second)).id


def test_payload_formats_agree_for_content_changes() -> None:
    json_event = only_event(parse(notification("OBJECT_FINALIZE")))
    none_event = only_event(parse(notification("OBJECT_FINALIZE", payload=False)))
    assert json_event.id == none_event.id
    assert json_event.position == none_event.position == gcs_position(GENERATION)


def test_distinct_metadata_updates_of_one_generation_get_distinct_ids() -> None:
    ids = {
        only_event(parse(notification("OBJECT_METADATA_UPDATE", resource=resource))).id
        for resource in (object_resource(metageneration="2"), object_resource(metageneration="3"))
    }
    ids |= {
        only_event(parse(notification("OBJECT_METADATA_UPDATE", payload=False, event_time=t))).id
        for t in ("2026-11-25T12:00:00Z", "2026-11-25T12:00:01Z")
    }
    assert len(ids) == 4


@pytest.mark.parametrize(
    ("resource", "payload", "kind"),
    [
        (object_resource(), True, "removed"),  # a live generation deleted for good
        (object_resource(time_deleted="2026-11-25T11:00:00Z"), True, "version_removed"),
        (None, False, "version_removed"),  # NONE: nothing tells, the weaker claim
    ],
)
def test_delete_kinds(resource: Any, payload: bool, kind: str) -> None:
    event = only_event(parse(notification("OBJECT_DELETE", payload=payload, resource=resource)))
    assert event.kind == kind


def test_overwrote_generation_on_finalize_is_still_created() -> None:
    message = notification("OBJECT_FINALIZE", overwrote_generation="1")
    assert only_event(parse(message)).kind == "created"


def test_every_mapped_event_type_parses() -> None:
    kinds = {only_event(parse(notification(name))).kind for name in GCS_EVENT_TYPES}
    assert kinds == {"created", "metadata_changed", "removed"}


# --------------------------------------------------------------------------- positions


@pytest.mark.parametrize(
    ("smaller", "larger"),
    [("9", "10"), ("1764064800123456", "1764068400654321"), ("99999", "100000000000000000")],
)
def test_padded_generations_compare_like_integers_under_both_orders(
    smaller: str, larger: str
) -> None:
    for order in (AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER):
        assert order.compare(gcs_position(smaller), gcs_position(larger)) < 0, order.name
        assert order.compare(gcs_position(larger), gcs_position(larger)) == 0


def test_generation_is_canonicalized() -> None:
    message = notification(generation="0001764064800123456", payload=False)
    event = only_event(parse(message))
    assert event.version_id == GENERATION
    assert event.position == "0000" + GENERATION
    assert len(event.position) == 20


def test_event_id_helper_matches_the_design_formula() -> None:
    assert gcs_event_id("created", IDENTITY, GENERATION) == sequencer_id(
        "gcs-", "created", IDENTITY, GENERATION
    )


def test_tricky_names_are_kept_verbatim() -> None:
    names = ["a b+c/d", "100%25.txt", "//x//", "写真/猫.jpg", "\U0001f600", "a%2Fb?x=1#y"]
    for name in names:
        message = pubsub_message(object_resource(name=name), notification_attributes(name=name))
        assert only_event(parse(message)).key == name


# --------------------------------------------------------------------------- rejections


def with_data(data: str) -> dict[str, Any]:
    message = notification()
    message["data"] = data
    return message


@pytest.mark.parametrize(
    ("message", "reason", "needle"),
    [
        (with_data("not base64!"), RejectReason.INVALID_FIELD, "base64"),
        (with_data(encode_data(b"\xff\xfe")), RejectReason.MALFORMED_JSON, "JSON"),
        (with_data(encode_data("{truncated")), RejectReason.MALFORMED_JSON, "JSON"),
        (with_data(encode_data([1, 2])), RejectReason.NOT_A_NOTIFICATION, "array"),
        (
            with_data(encode_data(object_resource(kind="storage#bucket"))),
            RejectReason.NOT_A_NOTIFICATION,
            "storage#bucket",
        ),
        (with_data(""), RejectReason.MISSING_FIELD, "data is missing"),
        (
            notification(event_type="OBJECT_RESTORE"),
            RejectReason.UNSUPPORTED_EVENT_TYPE,
            "OBJECT_RESTORE",
        ),
        (notification(event_type=ABSENT), RejectReason.UNSUPPORTED_EVENT_TYPE, "missing"),
        (
            notification(payload_format="PROTOBUF"),
            RejectReason.UNSUPPORTED_SCHEMA_VERSION,
            "PROTOBUF",
        ),
        (notification(payload=False, bucket=ABSENT), RejectReason.MISSING_FIELD, "bucketId"),
        (notification(payload=False, name=ABSENT), RejectReason.MISSING_FIELD, "objectId"),
        (notification(payload=False, generation=ABSENT), RejectReason.MISSING_FIELD, "Generation"),
        (notification(payload=False, generation="12a"), RejectReason.INVALID_FIELD, "decimal"),
        (notification(payload=False, generation="0"), RejectReason.INVALID_FIELD, "positive"),
        (
            notification(payload=False, generation="9" * 20),
            RejectReason.INVALID_FIELD,
            "2**63-1",
        ),
        (notification(payload=False, bucket="a/b"), RejectReason.INVALID_FIELD, "'/'"),
        (notification(payload=False, name=7), RejectReason.INVALID_FIELD, "objectId"),
        (notification(generation="5"), RejectReason.INVALID_FIELD, "disagree"),
        (notification(name="other.txt"), RejectReason.INVALID_FIELD, "disagree"),
        (
            notification(resource=object_resource(size="-1")),
            RejectReason.INVALID_FIELD,
            "size",
        ),
        (
            notification(resource=object_resource(size="9" * 400)),
            RejectReason.INVALID_FIELD,
            "size",
        ),
        (notification(payload=False, name="\ud800"), RejectReason.INVALID_FIELD, "surrogate"),
    ],
)
def test_invalid_messages_are_rejected(message: Any, reason: RejectReason, needle: str) -> None:
    rejection = reject(push_envelope(message))
    assert rejection.reason is reason, rejection
    assert needle in rejection.message, rejection.message


def test_resource_alone_supplies_missing_attributes() -> None:
    attributes = notification_attributes(bucket=ABSENT, name=ABSENT, generation=ABSENT)
    event = only_event(parse(pubsub_message(object_resource(), attributes)))
    assert (event.bucket, event.key, event.version_id) == (BUCKET, NAME, GENERATION)


def test_urlsafe_and_unpadded_base64_are_accepted() -> None:
    resource = object_resource(name="??>>~~.bin")
    data = base64.urlsafe_b64encode(json.dumps(resource).encode()).decode().rstrip("=")
    message = pubsub_message(None, notification_attributes(name="??>>~~.bin"))
    message["data"] = data
    assert only_event(parse(message)).key == "??>>~~.bin"


@pytest.mark.parametrize(
    "document",
    [None, [], "text", 3, {}, {"subscription": "s"}, {"receivedMessages": []}],
)
def test_documents_that_are_no_delivery_are_rejected_whole(document: Any) -> None:
    rejection = reject(document)
    assert (rejection.reason, rejection.record_index) == (RejectReason.NOT_A_NOTIFICATION, None)


def test_pull_response_entries_are_numbered() -> None:
    response = pull_response(notification(), "junk", notification("OBJECT_RESTORE"))
    response["receivedMessages"].append({"ackId": "x"})
    response["receivedMessages"].append({"ackId": "y", "message": notification("OBJECT_DELETE")})
    result = parse(response)
    assert [type(item) for item in result.items] == [ObjectEvent, *[Rejection] * 3, ObjectEvent]
    assert [(item.reason, item.record_index) for item in result.rejections] == [
        (RejectReason.NOT_A_NOTIFICATION, 1),
        (RejectReason.UNSUPPORTED_EVENT_TYPE, 2),
        (RejectReason.NOT_A_NOTIFICATION, 3),
    ]


def test_ignored_message_in_a_pull_response_carries_its_index() -> None:
    overwritten = notification("OBJECT_ARCHIVE", overwritten_by_generation="2")
    result = parse(pull_response(notification(), overwritten))
    assert [item.record_index for item in result.ignored] == [1]


# --------------------------------------------------------------------------- totality

json_values = json_documents(
    [
        "message",
        "receivedMessages",
        "attributes",
        "data",
        "eventType",
        "payloadFormat",
        "bucketId",
        "objectId",
        "objectGeneration",
        "overwrittenByGeneration",
        "kind",
        "bucket",
        "name",
        "generation",
        "metageneration",
        "size",
        "etag",
        "timeDeleted",
    ],
    [*GCS_EVENT_TYPES, "JSON_API_V1", "NONE", GENERATION, "0", "storage#object"],
)


def assert_typed(result: ParseResult) -> None:
    assert result.items, "every input yields at least one item"
    for item in result.items:
        assert isinstance(item, ObjectEvent | Rejection | Ignored)
        if isinstance(item, Rejection):
            assert isinstance(item.reason, RejectReason)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_arbitrary_json_yields_only_typed_results(document: Any) -> None:
    looks_like_gcs(document)
    assert_typed(parse(document))


@settings(max_examples=300, deadline=None)
@given(json_values, json_values, st.booleans())
def test_arbitrary_attributes_and_data_yield_only_typed_results(
    attributes: Any, data: Any, encode: bool
) -> None:
    message = {"attributes": attributes, "data": encode_data(data) if encode else data}
    for document in (message, push_envelope(message), pull_response(message, message)):
        assert looks_like_gcs(document) in (True, False)
        assert_typed(parse(document))
