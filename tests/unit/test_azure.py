"""Azure Blob Storage events from Event Grid (seqgate/connectors/parsers/azure.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.connectors.auth.azure import verify_azure_secret
from seqgate.connectors.errors import WebhookAuthError
from seqgate.connectors.parsers.azure import (
    AZURE_KINDS,
    AZURE_UNMAPPED_TYPES,
    COMMITTED_WRITE_APIS,
    UNCOMMITTED_WRITE_APIS,
    cloudevents_handshake_headers,
    looks_like_azure,
    parse_azure,
    validation_response,
)
from seqgate.connectors.parsers.results import Ignored, ParseResult
from seqgate.schemas.identity import parse_identity
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support import azure_samples as az
from tests.support.builders import ABSENT, TRICKY_KEYS, only_event, only_rejection
from tests.support.paths import FIXTURES as ALL_FIXTURES
from tests.support.strategies import json_documents

FIXTURES = ALL_FIXTURES / "azure"
ORIGIN = "http:/azure/events"
BUCKET = "contosomedia.uploads"
EVENT_HUB = "/subscriptions/x/resourceGroups/y/providers/Microsoft.EventHub/namespaces/z"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


def parse_one(**fields: Any) -> ObjectEvent:
    return only_event(parse_azure([az.event_grid_event(**fields)], ORIGIN))


def reject_one(**fields: Any) -> Rejection:
    rejection = only_rejection(parse_azure([az.event_grid_event(**fields)], ORIGIN))
    assert rejection.record_index == 0
    return rejection


def ignore_one(document: Any) -> Ignored:
    result = parse_azure(document, ORIGIN)
    assert result.events == [] and result.rejections == [], result
    [ignored] = result.ignored
    return ignored


def identity(event: ObjectEvent) -> str:
    return f"{event.source}://{event.bucket}/{event.key}"


# --------------------------------------------------------------------------- happy path


def test_full_event_from_put_blob() -> None:
    event = parse_one(data=az.blob_data(version_id="2026-11-25T10:00:00.9584103Z"))
    assert event == ObjectEvent(
        id=az.EVENT_ID,
        source="azure",
        bucket=BUCKET,
        key="2026/summer trip/beach+sunset 100%.jpg",
        kind="created",
        event_name="Microsoft.Storage.BlobCreated",
        position=az.SEQUENCER,
        version_id="2026-11-25T10:00:00.9584103Z",
        size=2457600,
        etag=az.ETAG,
        event_time=az.EVENT_TIME,
        origin=ORIGIN,
    )
    assert parse_identity(identity(event)) == ("azure", BUCKET, event.key)


def test_cloudevents_and_event_grid_schema_give_the_same_event() -> None:
    from_event_grid = parse_azure([az.event_grid_event()], ORIGIN).events
    single = parse_azure(az.cloud_event(), ORIGIN)
    batch = parse_azure([az.cloud_event(), az.cloud_event()], ORIGIN)
    assert single.events == from_event_grid
    assert batch.events == from_event_grid * 2


def test_key_comes_from_the_subject_not_the_url() -> None:
    # data.url percent-encodes the name; a disagreeing URL changes nothing.
    data = az.blob_data(url="https://contosomedia.blob.core.windows.net/other/x%20y")
    assert parse_one(data=data).key == az.BLOB
    assert "%25" in az.blob_url() and "100%.jpg" in az.blob_subject()


@pytest.mark.parametrize("key", TRICKY_KEYS)
def test_tricky_names_are_kept_verbatim(key: str) -> None:
    event = parse_one(subject=az.blob_subject(az.CONTAINER, key))
    assert event.key == key
    assert parse_identity(identity(event)) == ("azure", BUCKET, key)


@pytest.mark.parametrize(
    ("account", "container", "bucket"),
    [
        ("contosomedia", "uploads", "contosomedia.uploads"),
        ("ContosoMedia", "uploads", "contosomedia.uploads"),  # ARM ids are case-insensitive
        ("abc", "$root", "abc.$root"),
        ("a1b2c3d4e5f6a7b8c9d0e1f2", "logs-2026", "a1b2c3d4e5f6a7b8c9d0e1f2.logs-2026"),
    ],
)
def test_bucket_is_account_dot_container(account: str, container: str, bucket: str) -> None:
    event = parse_one(
        topic=az.account_resource(account), subject=az.blob_subject(container, "a/b.txt")
    )
    assert (event.bucket, event.key) == (bucket, "a/b.txt")


def test_same_blob_in_two_accounts_has_two_identities() -> None:
    first = parse_one(topic=az.account_resource("alpha"))
    second = parse_one(topic=az.account_resource("beta"))
    assert identity(first) != identity(second)


def test_resource_id_casing_does_not_matter() -> None:
    topic = az.account_resource().replace(
        "Microsoft.Storage/storageAccounts", "microsoft.storage/STORAGEACCOUNTS"
    )
    assert parse_one(topic=topic).bucket == BUCKET


def test_uppercase_sequencer_is_lowercased() -> None:
    event = parse_one(
        data=az.blob_data(sequencer="0000000000000000000000000000B1F3000000000000FFAA")
    )
    assert event.position == "0000000000000000000000000000b1f3000000000000ffaa"


def test_optional_fields_may_be_absent() -> None:
    data = az.blob_data(etag=ABSENT, content_length=ABSENT)
    event = parse_one(data=data, event_time=ABSENT)
    assert (event.etag, event.size, event.version_id, event.event_time) == (None, None, None, None)


# --------------------------------------------------------------------------- types and kinds


@pytest.mark.parametrize("api", sorted(COMMITTED_WRITE_APIS))
def test_committed_writes_are_created(api: str) -> None:
    assert parse_one(data=az.blob_data(api=api)).kind == "created"


@pytest.mark.parametrize("api", sorted(UNCOMMITTED_WRITE_APIS))
def test_uncommitted_writes_are_ignored(api: str) -> None:
    ignored = ignore_one([az.event_grid_event(data=az.blob_data(api=api))])
    assert ignored.reason == "azure_uncommitted_write"
    assert ignored.record_index == 0
    assert api in ignored.message


@pytest.mark.parametrize("api", ["PutPage", "putblob", "", "AppendBlock"])
def test_unknown_write_api_is_unsupported(api: str) -> None:
    rejection = reject_one(data=az.blob_data(api=api))
    assert rejection.reason is RejectReason.UNSUPPORTED_EVENT_TYPE
    assert rejection.message.startswith("[0].data.api ")
    assert "FlushWithClose" in rejection.message


@pytest.mark.parametrize(("api", "reason"), [(ABSENT, "missing_field"), (7, "invalid_field")])
def test_missing_or_mistyped_api(api: Any, reason: str) -> None:
    assert reject_one(data=az.blob_data(api=api)).reason == reason


@pytest.mark.parametrize(
    ("event_type", "kind"),
    [
        ("Microsoft.Storage.BlobDeleted", "removed"),
        ("Microsoft.Storage.BlobRenamed", "created"),
        ("Microsoft.Storage.BlobTierChanged", "storage_class_changed"),
        ("Microsoft.Storage.AsyncOperationInitiated", "restore_started"),
    ],
)
def test_other_mapped_types(event_type: str, kind: str) -> None:
    # The API of a non-create event is not checked.
    event = parse_one(event_type=event_type, data=az.blob_data(api="SomethingElse"))
    assert (event.kind, event.event_name) == (kind, event_type)
    assert AZURE_KINDS[event_type] == kind


@pytest.mark.parametrize("event_type", sorted(AZURE_UNMAPPED_TYPES))
def test_documented_unmapped_types(event_type: str) -> None:
    rejection = reject_one(event_type=event_type)
    assert rejection.reason is RejectReason.UNSUPPORTED_EVENT_TYPE
    assert AZURE_UNMAPPED_TYPES[event_type] in rejection.message
    assert "docs/kinds.md" in rejection.message


@pytest.mark.parametrize(
    ("event_type", "reason"),
    [
        ("Microsoft.Storage.BlobWhatever", RejectReason.UNSUPPORTED_EVENT_TYPE),
        ("Microsoft.Resources.ResourceWriteSuccess", RejectReason.WRONG_EVENT_SOURCE),
        ("microsoft.storage.blobcreated", RejectReason.WRONG_EVENT_SOURCE),
        ("Contoso.Items.ItemSent", RejectReason.WRONG_EVENT_SOURCE),
        (ABSENT, RejectReason.MISSING_FIELD),
        (None, RejectReason.MISSING_FIELD),
        (["Microsoft.Storage.BlobCreated"], RejectReason.INVALID_FIELD),
    ],
)
def test_unsupported_types(event_type: Any, reason: RejectReason) -> None:
    assert reject_one(event_type=event_type).reason is reason


def test_sequencer_is_optional_for_kinds_that_keep_the_content() -> None:
    data = az.blob_data(sequencer=ABSENT)
    event = parse_one(event_type="Microsoft.Storage.BlobTierChanged", data=data)
    assert event.position is None


# --------------------------------------------------------------------------- handshakes


def test_validation_event_is_ignored_and_answered() -> None:
    document = load("subscription_validation.json")
    ignored = ignore_one(document)
    assert (ignored.reason, ignored.record_index) == ("azure_subscription_validation", 0)
    assert validation_response(document) == {
        "validationResponse": "512d38b6-c7b8-40c8-89fe-f46f9e9622b6"
    }
    assert validation_response(document[0]) == validation_response(document)


@pytest.mark.parametrize(
    "document",
    [
        [az.event_grid_event()],
        az.cloud_event(),
        [az.validation_event(code="")],
        [az.validation_event(code=None)],
        [az.validation_event(code=12)],
        [],
        None,
        "validationCode",
        [1, [2], {"eventType": "Microsoft.EventGrid.SubscriptionValidationEvent", "data": 3}],
    ],
)
def test_no_validation_response(document: Any) -> None:
    assert validation_response(document) is None


def test_subscription_deleted_is_ignored() -> None:
    document = [az.event_grid_event(event_type="Microsoft.EventGrid.SubscriptionDeletedEvent")]
    assert ignore_one(document).reason == "azure_subscription_deleted"


def test_cloudevents_handshake_echoes_the_origin() -> None:
    assert cloudevents_handshake_headers("eventgrid.azure.net") == {
        "WebHook-Allowed-Origin": "eventgrid.azure.net",
        "WebHook-Allowed-Rate": "*",
    }


@pytest.mark.parametrize("origin", ["", " ", "a\r\nSet-Cookie: x", "tab\tend\t", "é.example"])
def test_cloudevents_handshake_refuses_bad_origins(origin: str) -> None:
    with pytest.raises(ValueError, match="WebHook-Request-Origin"):
        cloudevents_handshake_headers(origin)


# --------------------------------------------------------------------------- rejections


@pytest.mark.parametrize(
    ("fields", "reason", "field"),
    [
        ({"event_id": ABSENT}, "missing_field", "[0].id"),
        ({"event_id": ""}, "missing_field", "[0].id"),
        ({"event_id": 5}, "invalid_field", "[0].id"),
        ({"topic": ABSENT}, "missing_field", "[0].topic"),
        ({"topic": EVENT_HUB}, "wrong_event_source", "[0].topic"),
        ({"topic": az.account_resource("no")}, "invalid_field", "[0].topic"),
        ({"topic": az.account_resource("under_score")}, "invalid_field", "[0].topic"),
        ({"subject": ABSENT}, "missing_field", "[0].subject"),
        ({"subject": "/blobServices/default/containers/uploads"}, "invalid_field", "[0].subject"),
        (
            {"subject": "/blobServices/default/containers/uploads/blobs/"},
            "invalid_field",
            "[0].subject",
        ),
        ({"subject": az.blob_subject("Uploads")}, "invalid_field", "[0].subject"),
        ({"subject": az.blob_subject("up.loads")}, "invalid_field", "[0].subject"),
        ({"subject": az.blob_subject(blob="bad\ud800name")}, "invalid_key_encoding", "[0].subject"),
        ({"data": ABSENT}, "missing_field", "[0].data"),
        ({"data": [1]}, "invalid_field", "[0].data"),
        ({"data": az.blob_data(sequencer=ABSENT)}, "invalid_sequencer", "[0].data.sequencer"),
        ({"data": az.blob_data(sequencer="xyz")}, "invalid_sequencer", "[0].data.sequencer"),
        ({"data": az.blob_data(sequencer=42)}, "invalid_sequencer", "[0].data.sequencer"),
        ({"data": az.blob_data(content_length=-1)}, "invalid_field", "[0].data.contentLength"),
        ({"data": az.blob_data(content_length="5")}, "invalid_field", "[0].data.contentLength"),
        ({"data": az.blob_data(etag=7)}, "invalid_field", "[0].data.eTag"),
        ({"event_time": 1}, "invalid_field", "[0].eventTime"),
        ({"metadata_version": "2"}, "unsupported_schema_version", "[0].metadataVersion"),
    ],
)
def test_rejections(fields: dict[str, Any], reason: str, field: str) -> None:
    rejection = reject_one(**fields)
    assert rejection.reason == reason
    assert rejection.message.startswith(field + " "), rejection.message


def test_deleted_event_requires_a_sequencer() -> None:
    rejection = reject_one(
        event_type="Microsoft.Storage.BlobDeleted", data=az.deleted_data(sequencer=ABSENT)
    )
    assert rejection.reason is RejectReason.INVALID_SEQUENCER


@pytest.mark.parametrize("version", ["0.3", "1", 1.0, None])
def test_cloudevents_spec_version(version: Any) -> None:
    rejection = only_rejection(parse_azure(az.cloud_event(specversion=version), ORIGIN))
    assert rejection.reason is RejectReason.UNSUPPORTED_SCHEMA_VERSION
    assert rejection.record_index is None
    assert rejection.message.startswith("specversion ")


@pytest.mark.parametrize("document", [[], {}, None, "[]", 3, True])
def test_not_a_notification(document: Any) -> None:
    rejection = only_rejection(parse_azure(document, ORIGIN))
    assert rejection.reason in {RejectReason.NOT_A_NOTIFICATION, RejectReason.MISSING_FIELD}


def test_batch_items_are_independent() -> None:
    result = parse_azure([az.event_grid_event(), "event", az.validation_event()], ORIGIN)
    assert [type(item) for item in result.items] == [ObjectEvent, Rejection, Ignored]
    assert result.rejections[0].reason is RejectReason.NOT_A_NOTIFICATION
    assert result.rejections[0].record_index == 1
    assert result.ignored[0].record_index == 2


# --------------------------------------------------------------------------- recognition


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        ([az.event_grid_event()], True),
        (az.event_grid_event(), True),
        (az.cloud_event(), True),
        ([az.cloud_event()], True),
        (["junk", az.validation_event()], True),
        ({"specversion": "1.0", "type": "google.cloud.storage.object.v1.finalized"}, False),
        ({"Records": []}, False),
        ({"detail-type": "Object Created", "source": "aws.s3", "detail": {}}, False),
        ({"type": "INSERT", "table": "objects", "schema": "storage", "record": {}}, False),
        ([], False),
        ([1, 2], False),
        (None, False),
    ],
)
def test_looks_like_azure(document: Any, expected: bool) -> None:
    assert looks_like_azure(document) is expected


# --------------------------------------------------------------------------- fixtures


def test_fixture_created_put_blob() -> None:
    event = only_event(parse_azure(load("created_put_blob.json"), ORIGIN))
    assert (identity(event), event.kind) == (f"azure://{BUCKET}/{az.BLOB}", "created")


def test_fixture_adls_create_then_flush() -> None:
    ignored = ignore_one(load("ignored_create_file.json"))
    assert ignored.reason == "azure_uncommitted_write"
    event = only_event(parse_azure(load("created_flush_with_close.json"), ORIGIN))
    assert (event.bucket, event.key) == ("contosomedia.lake", "raw/2026/11/25/part-00000.parquet")
    assert (event.kind, event.size) == ("created", 1048576)
    assert event.position == "0000000000000000000000000000b1f30000000000001a2b"


def test_fixture_renamed_reports_the_destination() -> None:
    event = only_event(parse_azure(load("renamed.json"), ORIGIN))
    assert (event.key, event.kind, event.size) == (
        "raw/2026/11/25/part-00000.parquet",
        "created",
        None,
    )


def test_fixture_deleted_and_tier_changed() -> None:
    deleted = only_event(parse_azure(load("deleted.json"), ORIGIN))
    assert (deleted.kind, deleted.position, deleted.etag) == (
        "removed",
        "0000000000000442000000000002a1f0",
        None,
    )
    assert only_event(parse_azure(load("tier_changed.json"), ORIGIN)).kind == (
        "storage_class_changed"
    )


def test_fixture_cloudevents() -> None:
    single = parse_azure(load("cloudevents_single.json"), ORIGIN)
    batch = parse_azure(load("cloudevents_batch.json"), ORIGIN)
    assert [event.kind for event in batch.events] == ["created", "removed"]
    assert batch.events[0] == only_event(single)


def test_fixture_batch_with_one_bad_event() -> None:
    result = parse_azure(load("batch_with_bad_event.json"), ORIGIN)
    assert [event.kind for event in result.events] == ["created", "removed"]
    [rejection] = result.rejections
    assert (rejection.reason, rejection.record_index) == (RejectReason.INVALID_SEQUENCER, 1)
    assert rejection.message.startswith("[1].data.sequencer ")


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda path: path.name)
def test_every_fixture_is_recognized(path: Path) -> None:
    assert looks_like_azure(json.loads(path.read_text(encoding="utf-8")))


# --------------------------------------------------------------------------- secret


@pytest.mark.parametrize(
    ("query", "header"), [("s3cret", None), (None, "s3cret"), ("s3cret", "s3cret"), ("", "s3cret")]
)
def test_secret_accepted(query: str | None, header: str | None) -> None:
    verify_azure_secret(query, header, "s3cret")


@pytest.mark.parametrize(("query", "header"), [(None, None), ("", ""), ("", None)])
def test_secret_missing(query: str | None, header: str | None) -> None:
    with pytest.raises(WebhookAuthError) as raised:
        verify_azure_secret(query, header, "s3cret")
    assert raised.value.status == 401


@pytest.mark.parametrize(
    ("query", "header"),
    [("wrong", None), (None, "S3CRET"), ("s3cret", "wrong"), ("wrong", "s3cret"), ("s3cre", None)],
)
def test_secret_wrong(query: str | None, header: str | None) -> None:
    with pytest.raises(WebhookAuthError) as raised:
        verify_azure_secret(query, header, "s3cret")
    assert raised.value.status == 403


def test_secret_must_be_configured() -> None:
    with pytest.raises(ValueError, match="no shared secret"):
        verify_azure_secret("x", None, "")


# --------------------------------------------------------------------------- properties

json_values = json_documents(
    [
        "id",
        "topic",
        "source",
        "subject",
        "eventType",
        "type",
        "specversion",
        "metadataVersion",
        "data",
        "api",
        "sequencer",
        "contentLength",
        "eTag",
        "validationCode",
    ],
    [
        "Microsoft.Storage.BlobCreated",
        "Microsoft.Storage.BlobDeleted",
        "Microsoft.EventGrid.SubscriptionValidationEvent",
        "PutBlob",
        "CreateFile",
        "1.0",
        az.account_resource(),
        az.blob_subject(),
        az.SEQUENCER,
    ],
)


def check_typed(result: ParseResult) -> None:
    assert isinstance(result, ParseResult)
    assert len(result) >= 1
    for item in result.items:
        assert isinstance(item, ObjectEvent | Rejection | Ignored)
        if isinstance(item, Rejection):
            assert isinstance(item.reason, RejectReason)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_arbitrary_json_gives_typed_results(document: Any) -> None:
    check_typed(parse_azure(document, ORIGIN))
    looks_like_azure(document)
    response = validation_response(document)
    assert response is None or set(response) == {"validationResponse"}


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["id", "subject", "data", "eventTime", "x"]), json_values),
    st.dictionaries(st.sampled_from(["api", "sequencer", "eTag", "contentLength"]), json_values),
)
def test_damaged_events_give_typed_results(event: dict[str, Any], data: dict[str, Any]) -> None:
    document = az.event_grid_event()
    document.update(event)
    if isinstance(document.get("data"), dict):
        document["data"].update(data)
    check_typed(parse_azure([document, az.cloud_event() | event], ORIGIN))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=200))
def test_any_blob_name_is_the_key(name: str) -> None:
    event = parse_one(subject=az.blob_subject(az.CONTAINER, name))
    assert event.key == name
    assert parse_identity(identity(event)) == ("azure", BUCKET, name)
