"""SQS and SNS envelopes (seqgate/connectors/parsers/s3/envelopes.py) through the dispatcher.

The central property: the same change delivered through any envelope yields
the same identity, kind and position. The fixtures in tests/fixtures/aws/
carry one set of changes (tricky keys included) in every envelope; the
builders below wrap single changes programmatically.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from seqgate_devtools import samples
from seqgate_devtools.samples import lambda_sqs_record, s3_notification

from seqgate.connectors.parsers.normalize import MAX_ENVELOPE_DEPTH, normalize, normalize_document
from seqgate.connectors.parsers.results import Ignored, ParseResult
from seqgate.connectors.parsers.s3.envelopes import (
    parse_lambda_sns_record,
    parse_lambda_sqs_record,
    parse_sns_message,
    parse_sqs_receive_response,
)
from seqgate.connectors.parsers.s3.native import (
    DEFAULT_S3_PARSE_OPTIONS,
    S3ParseOptions,
    parse_s3_records,
)
from seqgate.schemas.identity import object_identity
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.builders import only_rejection
from tests.support.paths import FIXTURES as ALL_FIXTURES

FIXTURES = ALL_FIXTURES / "aws"
ORIGIN = "sqs:s3-object-events"
TOPIC = "arn:aws:sns:us-west-2:111122223333:s3-object-events"  # of the fixtures


# --------------------------------------------------------------------------- builders


def text(document: object) -> str:
    return samples.to_text(document, ensure_ascii=False)


def raw(document: object) -> bytes:
    return text(document).encode("utf-8")


def s3_record(
    key: str = "incoming/June report+final.csv",
    *,
    event_name: str = "ObjectCreated:Put",
    bucket: str = "example-input",
    sequencer: str = "0055AED6DCD90281E5",
    version_id: str | None = None,
) -> dict[str, Any]:
    """A native S3 record for the real name ``key`` (form-encoded here, as S3 does)."""
    return samples.s3_record(
        bucket=bucket,
        key=samples.form_encode_key(key),
        sequencer=sequencer,
        event_name=event_name,
        version_id=version_id,
        size=5,
        etag="b1946ac92492d2347c6235b4d2611184",
        event_time="2026-11-25T10:00:00.000Z",
    )


def s3_document(*records: dict[str, Any]) -> dict[str, Any]:
    return s3_notification(*records) if records else s3_notification(s3_record())


def receive(*bodies: object) -> dict[str, Any]:
    """An SQS ReceiveMessage response as boto3 returns it (with ResponseMetadata)."""
    return samples.sqs_receive_response(*bodies) | {"ResponseMetadata": {"HTTPStatusCode": 200}}


lambda_sqs = samples.lambda_sqs_event
lambda_sns = samples.lambda_sns_event


def sns(message: object, kind: object = "Notification") -> dict[str, Any]:
    """An SNS message of type ``kind`` in its HTTP form (also an SQS body without raw delivery)."""
    return samples.sns_notification(message) | {"Type": kind}


def lambda_sns_record(message: object, kind: object = "Notification") -> dict[str, Any]:
    """A Lambda SNS record whose SNS message is of type ``kind``."""
    record = samples.lambda_sns_record(message)
    record["Sns"]["Type"] = kind
    return record


# Every way an S3 document (given as JSON text) reaches seqgate.
ENVELOPES: dict[str, Any] = {
    "SQS body as delivered": lambda body: body,
    "SQS ReceiveMessage": lambda body: text(receive(body)),
    "Lambda SQS batch": lambda body: text(lambda_sqs(body)),
    "SNS HTTP notification": lambda body: text(sns(body)),
    "Lambda SNS event": lambda body: text(lambda_sns(body)),
    "SNS to SQS, raw delivery": lambda body: text(receive(body)),
    "SNS to SQS, not raw": lambda body: text(receive(text(sns(body)))),
    "SNS to Lambda SQS, not raw": lambda body: text(lambda_sqs(text(sns(body)))),
    "nested: Lambda SNS > ReceiveMessage > SNS": lambda body: text(
        lambda_sns(text(receive(text(sns(body)))))
    ),
}


def change(event: ObjectEvent) -> tuple[str, str, str | None]:
    """What must not depend on the envelope: identity, kind, position."""
    return object_identity("s3", event.bucket, event.key), event.kind, event.position


# --------------------------------------------------------------------------- the same change


TRICKY_KEYS = [
    "incoming/June report+final.csv",  # space and literal '+'
    "100% done/a%2Fb c.txt",  # '%' in the real name, and a literal "%2F"
    "a+b%20c",  # looks encoded, is not
    "/leading//a///b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/",  # '/'-heavy, ends with '/'
    "données/été/日本語/файл 🚀.txt",  # non-ASCII, 4-byte UTF-8
    "k/" + "ñ" * 511,  # exactly 1024 bytes of UTF-8
]

# (native event name, version id) -> the EventBridge detail-type and deletion-type
KINDS = [
    ("ObjectCreated:Put", None, "Object Created", None, "created"),
    ("ObjectCreated:CompleteMultipartUpload", "v2", "Object Created", None, "created"),
    (
        "ObjectRemoved:DeleteMarkerCreated",
        "m1",
        "Object Deleted",
        "Delete Marker Created",
        "removed",
    ),
    ("ObjectRemoved:Delete", "v1", "Object Deleted", "Permanently Deleted", "version_removed"),
    ("ObjectRemoved:Delete", None, "Object Deleted", "Permanently Deleted", "removed"),
]


def test_the_long_key_is_1024_bytes() -> None:
    assert len(TRICKY_KEYS[-1].encode("utf-8")) == 1024


@pytest.mark.parametrize("key", TRICKY_KEYS)
@pytest.mark.parametrize(("event_name", "version_id", "detail_type", "deletion", "kind"), KINDS)
def test_the_same_change_through_every_envelope(
    key: str,
    event_name: str,
    version_id: str | None,
    detail_type: str,
    deletion: str | None,
    kind: str,
) -> None:
    document = s3_document(
        s3_record(key, event_name=event_name, sequencer="0062F1A3B4C5D6E7F8", version_id=version_id)
    )
    [direct] = normalize(raw(document), ORIGIN).events
    assert (direct.key, direct.kind, direct.position) == (key, kind, "0062f1a3b4c5d6e7f8")
    for name, wrap in ENVELOPES.items():
        wrapped = normalize(wrap(text(document)).encode("utf-8"), ORIGIN)
        assert wrapped.items == (direct,), name  # everything equal, the id included

    event = samples.eventbridge_event(
        key=key,
        detail_type=detail_type,
        deletion_type=deletion,
        sequencer="0062f1a3b4c5d6e7f8",
        version_id=version_id,
    )
    for name, wrap in {"EventBridge": lambda body: body, **ENVELOPES}.items():
        [via_eventbridge] = normalize(wrap(text(event)).encode("utf-8"), ORIGIN).events
        assert change(via_eventbridge) == change(direct), name
        assert via_eventbridge.version_id == direct.version_id


CHANGE_SET = [
    "s3_native.json",
    "sqs_receive_message.json",
    "lambda_sqs_event.json",
    "sns_http_notification.json",
    "lambda_sns_event.json",
    "sns_to_sqs_raw.json",
    "sns_to_sqs_not_raw.json",
    "sns_to_lambda_sqs_not_raw.json",
]


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


@pytest.mark.parametrize("name", CHANGE_SET)
def test_fixtures_carry_the_same_changes(name: str) -> None:
    native = normalize(fixture("s3_native.json"), ORIGIN)
    result = normalize(fixture(name), ORIGIN)
    assert result.items == native.items  # events only, all fields equal


def test_fixture_changes_are_the_tricky_ones() -> None:
    events = normalize(fixture("s3_native.json"), ORIGIN).events
    assert [(event.key, event.kind) for event in events] == [
        ("incoming/June report+final.csv", "created"),
        ("100% done/a%2Fb c.txt", "created"),
        ("/leading//a///b/c/d/e/f/g/h/i/j/k/l/m/n/o/p/", "created"),
        ("données/été/日本語のファイル/файл 🚀.txt", "created"),
        (events[4].key, "created"),
        ("incoming/June report+final.csv", "removed"),
        ("a+b%20c", "version_removed"),
        ("a+b%20c", "removed"),
    ]
    assert len(events[4].key.encode("utf-8")) == 1024
    assert [event.bucket for event in events][-2:] == ["example-input", "example-scratch"]


def test_eventbridge_through_sqs_carries_the_same_changes() -> None:
    native = normalize(fixture("s3_native.json"), ORIGIN).events
    via_eventbridge = normalize(fixture("eventbridge_via_sqs.json"), ORIGIN)
    assert via_eventbridge.rejections == []
    assert [change(event) for event in via_eventbridge.events] == [change(e) for e in native]
    assert [event.version_id for event in via_eventbridge.events] == [
        event.version_id for event in native
    ]
    # EventBridge has its own event ids (docs/design.md §4.1): one per event, all distinct.
    ids = [event.id for event in via_eventbridge.events]
    assert len(set(ids)) == len(ids) and ids[0] == "17793124-05d4-4198-8fde-7ededc63b103"


def test_redelivery_gets_the_same_ids() -> None:
    for name in [*CHANGE_SET, "eventbridge_via_sqs.json"]:
        first = normalize(fixture(name), "sqs:a").events
        again = normalize(fixture(name), "sqs:b").events
        assert [event.id for event in first] == [event.id for event in again]


# --------------------------------------------------------------------------- batches


def test_one_bad_sqs_message_among_good_ones() -> None:
    result = normalize(fixture("sqs_one_bad_message.json"), ORIGIN)
    assert [type(item).__name__ for item in result.items] == [
        "ObjectEvent",
        "ObjectEvent",
        "Rejection",
        "ObjectEvent",
    ]
    [rejection] = result.rejections
    assert rejection.reason is RejectReason.MALFORMED_JSON
    assert rejection.record_index == 2  # flattened over the records of all messages
    assert rejection.message.startswith("Messages[1].Body is not valid JSON: ")
    assert [event.key for event in result.events] == [
        "incoming/June report+final.csv",
        "100% done/a%2Fb c.txt",
        "données/été/日本語のファイル/файл 🚀.txt",
    ]


@pytest.mark.parametrize("wrap", [receive, lambda_sqs], ids=["ReceiveMessage", "Lambda SQS"])
def test_bad_messages_are_numbered_across_the_batch(wrap: Any) -> None:
    good = text(s3_document(s3_record("a"), s3_record("b", sequencer="0A")))
    bad_record = text(s3_document(s3_record("c"), {"eventSource": "aws:s3"}))
    body = "Body" if wrap is receive else "body"
    container = "Messages" if wrap is receive else "Records"
    result = normalize(raw(wrap(good, "{not json", bad_record, 42, good)), ORIGIN)
    assert [(item.record_index, item.reason) for item in result.rejections] == [
        (2, RejectReason.MALFORMED_JSON),
        (4, RejectReason.UNSUPPORTED_SCHEMA_VERSION),
        (5, RejectReason.INVALID_FIELD),
    ]
    messages = [item.message for item in result.rejections]
    assert messages[0].startswith(f"{container}[1].{body} is not valid JSON")
    assert messages[1].startswith(f"{container}[2].{body}: Records[1].eventVersion ")
    assert messages[2].startswith(f"{container}[3].{body} must be a string")
    assert [event.key for event in result.events] == ["a", "b", "c", "a", "b"]
    assert len(result) == 8


def test_a_single_message_keeps_the_numbering_of_its_body() -> None:
    document = s3_document(s3_record("a"), s3_record("b", sequencer="zz"))
    for name, wrap in ENVELOPES.items():
        result = normalize(wrap(text(document)).encode("utf-8"), ORIGIN)
        [rejection] = result.rejections
        assert rejection.record_index == 1, name
        assert rejection.reason is RejectReason.INVALID_SEQUENCER


def test_nested_s3_rejections_name_their_envelope_path() -> None:
    document = s3_document(s3_record("a"), s3_record("b", sequencer=""))
    result = normalize(raw(lambda_sns(text(receive(text(sns(text(document))))))), ORIGIN)
    [rejection] = result.rejections
    assert rejection.message.startswith(
        "Records[0].Sns.Message.Messages[0].Body.Message: Records[1].s3.object.sequencer is empty"
    )


# --------------------------------------------------------------------------- Lambda batches


def test_lambda_sqs_records_do_not_reach_the_s3_parser() -> None:
    result = normalize(raw(lambda_sqs(text(s3_document()))), ORIGIN)
    assert [event.key for event in result.events] == ["incoming/June report+final.csv"]


def test_mixed_records_are_each_parsed_by_their_own_source() -> None:
    document = {
        "Records": [
            s3_record("direct"),
            lambda_sqs_record(text(s3_document(s3_record("via sqs 1"), s3_record("via sqs 2")))),
            {"eventSource": "aws:dynamodb"},
            lambda_sns_record(text(s3_document(s3_record("via sns")))),
            s3_record("bad%", sequencer="xyz"),
            None,
        ]
    }
    result = normalize(raw(document), ORIGIN)
    assert [type(item).__name__ for item in result.items] == [
        "ObjectEvent",
        "ObjectEvent",
        "ObjectEvent",
        "Rejection",
        "ObjectEvent",
        "Rejection",
        "Rejection",
    ]
    assert [event.key for event in result.events] == ["direct", "via sqs 1", "via sqs 2", "via sns"]
    assert [(r.record_index, r.reason) for r in result.rejections] == [
        (3, RejectReason.WRONG_EVENT_SOURCE),
        (5, RejectReason.INVALID_SEQUENCER),
        (6, RejectReason.NOT_A_NOTIFICATION),
    ]
    # S3 records keep their real index in the Records array in messages.
    assert [r.message.split(" ", 1)[0] for r in result.rejections] == [
        "Records[2].eventSource",
        "Records[4].s3.object.sequencer",
        "Records[5]",
    ]


def test_mixed_records_survive_an_s3_parser_that_breaks_its_contract(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import seqgate.connectors.parsers.records_document as module

    real = parse_s3_records

    def one_item_short(
        document: object, origin: str, options: S3ParseOptions = DEFAULT_S3_PARSE_OPTIONS
    ) -> ParseResult:
        result = real(document, origin, options)
        records = document.get("Records") if isinstance(document, dict) else None
        return ParseResult(result.items[:-1]) if len(records or []) > 1 else result

    monkeypatch.setattr(module, "parse_s3_records", one_item_short)
    document = {
        "Records": [lambda_sqs_record(text(s3_document())), s3_record("alone", sequencer="")]
    }
    result = normalize(raw(document), ORIGIN)
    [rejection] = result.rejections
    assert rejection.record_index == 1
    assert rejection.message.startswith("Records[1]: Records[0].s3.object.sequencer is empty")


def test_lambda_sqs_body_problems() -> None:
    missing = lambda_sqs_record("x")
    del missing["body"]
    result = normalize(raw({"Records": [missing]}), ORIGIN)
    rejection = only_rejection(result)
    assert rejection.reason is RejectReason.MISSING_FIELD
    assert rejection.message.startswith("Records[0].body is missing")
    for value in [{"Records": []}, ["x"], 7, True]:
        rejection = only_rejection(normalize(raw(lambda_sqs(value)), ORIGIN))
        assert rejection.reason is RejectReason.INVALID_FIELD
        assert rejection.message.startswith("Records[0].body must be a string")


# --------------------------------------------------------------------------- SQS ReceiveMessage


@pytest.mark.parametrize(
    ("document", "reason", "start"),
    [
        ({"Messages": None}, RejectReason.MISSING_FIELD, "Messages is missing"),
        ({"Messages": {"Body": "{}"}}, RejectReason.INVALID_FIELD, "Messages must be an array"),
        (
            {"Messages": "[]"},
            RejectReason.INVALID_FIELD,
            'Messages must be an array of SQS messages, got "[]"',
        ),
        ({"Messages": []}, RejectReason.NOT_A_NOTIFICATION, "Messages is empty"),
        (
            {"Messages": [None]},
            RejectReason.NOT_A_NOTIFICATION,
            "Messages[0] must be a JSON object",
        ),
        (
            {"Messages": [{"MessageId": "1"}]},
            RejectReason.MISSING_FIELD,
            "Messages[0].Body is missing",
        ),
        ({"Messages": [{"Body": None}]}, RejectReason.MISSING_FIELD, "Messages[0].Body is missing"),
        (
            {"Messages": [{"Body": {"Records": []}}]},
            RejectReason.INVALID_FIELD,
            "Messages[0].Body must be a string holding the message body as JSON text, got object",
        ),
        (
            {"Messages": [{"Body": ""}]},
            RejectReason.MALFORMED_JSON,
            "Messages[0].Body is not valid JSON: Expecting value at line 1 column 1",
        ),
        (
            {"Messages": [{"Body": "[]"}]},
            RejectReason.NOT_A_NOTIFICATION,
            "Messages[0].Body is an array: expected one of: native S3",
        ),
        (
            {"Messages": [{"Body": '"{}"'}]},
            RejectReason.NOT_A_NOTIFICATION,
            "Messages[0].Body is a string",
        ),
        (
            {"Messages": [{"Body": '{"a": 1, "a": 2}'}]},
            RejectReason.MALFORMED_JSON,
            'Messages[0].Body: member name "a" appears twice',
        ),
        (
            {"Messages": [{"Body": '{"Records": [NaN]}'}]},
            RejectReason.MALFORMED_JSON,
            "Messages[0].Body: NaN is not valid JSON",
        ),
        (
            {"Messages": [{"Body": '{"Records": ' + "[" * 100_000 + "]" * 100_000 + "}"}]},
            RejectReason.NESTING_TOO_DEEP,
            "Messages[0].Body nests arrays and objects more than 64 levels deep",
        ),
    ],
)
def test_receive_message_problems(document: object, reason: RejectReason, start: str) -> None:
    rejection = only_rejection(normalize(raw(document), ORIGIN))
    assert rejection.reason is reason
    assert rejection.message.startswith(start), rejection.message
    assert rejection.record_index is None


def test_inner_body_may_start_with_a_byte_order_mark() -> None:
    [event] = normalize(raw(receive("\ufeff" + text(s3_document()))), ORIGIN).events
    assert event.key == "incoming/June report+final.csv"


def test_inner_body_key_with_lone_surrogate_is_a_typed_rejection() -> None:
    body = text(s3_document(s3_record())).replace("incoming%2FJune", "\\ud800")
    rejection = only_rejection(normalize(raw(receive(body)), ORIGIN))
    assert rejection.reason is RejectReason.INVALID_KEY_ENCODING
    rejection.message.encode("utf-8")


# --------------------------------------------------------------------------- SNS


def test_lambda_sns_spellings() -> None:
    record = lambda_sns_record(text(s3_document()))
    assert "SigningCertUrl" in record["Sns"] and "SigningCertURL" not in record["Sns"]
    [event] = normalize(raw({"Records": [record]}), ORIGIN).events
    assert event.key == "incoming/June report+final.csv"


@pytest.mark.parametrize(
    ("document", "reason", "start"),
    [
        (sns(None), RejectReason.MISSING_FIELD, "Message is missing"),
        (
            sns({"Records": []}),
            RejectReason.INVALID_FIELD,
            "Message must be a string holding the notification as JSON text",
        ),
        (sns(["x"]), RejectReason.INVALID_FIELD, "Message must be a string"),
        (sns("{"), RejectReason.MALFORMED_JSON, "Message is not valid JSON"),
        (
            sns("{}"),
            RejectReason.NOT_A_NOTIFICATION,
            "Message is a JSON object with members (none)",
        ),
        (
            sns("x", kind="Notice"),
            RejectReason.NOT_A_NOTIFICATION,
            "Type is \"Notice\": expected 'Notification'",
        ),
        (sns("x", kind=None), RejectReason.MISSING_FIELD, "Type is missing"),
        (
            sns("x", kind=1),
            RejectReason.INVALID_FIELD,
            "Type must be a string such as 'Notification', got number 1",
        ),
        (
            {"Records": [lambda_sns_record(None)]},
            RejectReason.MISSING_FIELD,
            "Records[0].Sns.Message is missing",
        ),
        (
            {"Records": [lambda_sns_record(7)]},
            RejectReason.INVALID_FIELD,
            "Records[0].Sns.Message must be a string",
        ),
        (
            {"Records": [lambda_sns_record("x", kind="Other")]},
            RejectReason.NOT_A_NOTIFICATION,
            'Records[0].Sns.Type is "Other"',
        ),
        (
            {"Records": [{"EventSource": "aws:sns"}]},
            RejectReason.MISSING_FIELD,
            "Records[0].Sns is missing",
        ),
        (
            {"Records": [{"EventSource": "aws:sns", "Sns": "{}"}]},
            RejectReason.INVALID_FIELD,
            'Records[0].Sns must be a JSON object (the SNS message), got "{}"',
        ),
    ],
)
def test_sns_problems(document: object, reason: RejectReason, start: str) -> None:
    rejection = only_rejection(normalize(raw(document), ORIGIN))
    assert rejection.reason is reason
    assert rejection.message.startswith(start), rejection.message


@pytest.mark.parametrize(
    ("name", "reason", "words"),
    [
        ("sns_subscription_confirmation.json", "sns_subscription_confirmation", "confirm"),
        ("sns_unsubscribe_confirmation.json", "sns_unsubscribe_confirmation", "subscribe again"),
    ],
)
def test_sns_handshakes_are_ignored(name: str, reason: str, words: str) -> None:
    result = normalize(fixture(name), ORIGIN)
    [ignored] = result.items
    assert isinstance(ignored, Ignored)
    assert ignored.reason == reason
    assert TOPIC in ignored.message and words in ignored.message
    assert "Token=" not in ignored.message  # the confirmation secret is not echoed


def test_handshakes_delivered_to_sqs_are_ignored_in_their_place() -> None:
    confirmation = (FIXTURES / "sns_subscription_confirmation.json").read_text("utf-8")
    result = normalize(raw(receive(text(s3_document()), confirmation)), ORIGIN)
    assert [type(item).__name__ for item in result.items] == ["ObjectEvent", "Ignored"]
    assert result.ignored[0].record_index == 1
    lambda_result = normalize(
        raw({"Records": [lambda_sns_record("x", kind="SubscriptionConfirmation")]}), ORIGIN
    )
    assert [item.reason for item in lambda_result.ignored] == ["sns_subscription_confirmation"]


def test_s3_test_event_through_sns_is_ignored() -> None:
    [ignored] = normalize(fixture("sns_s3_test_event.json"), ORIGIN).items
    assert isinstance(ignored, Ignored) and ignored.reason == "s3_test_event"


# --------------------------------------------------------------------------- depth


def wrapped_in_sns(layers: int) -> bytes:
    body = text(s3_document())
    for _ in range(layers):
        body = text(sns(body))
    return body.encode("utf-8")


def test_envelopes_nest_up_to_the_limit() -> None:
    assert MAX_ENVELOPE_DEPTH == 4
    [event] = normalize(wrapped_in_sns(MAX_ENVELOPE_DEPTH), ORIGIN).events
    assert event.key == "incoming/June report+final.csv"


@pytest.mark.parametrize("layers", [MAX_ENVELOPE_DEPTH + 1, MAX_ENVELOPE_DEPTH + 6])
def test_deeper_nesting_is_refused(layers: int) -> None:
    rejection = only_rejection(normalize(wrapped_in_sns(layers), ORIGIN))
    assert rejection.reason is RejectReason.NOT_A_NOTIFICATION
    path = ".".join(["Message"] * (MAX_ENVELOPE_DEPTH + 1))
    assert rejection.message.startswith(
        f"{path} is nested 5 envelopes deep: seqgate unwraps at most 4"
    )


def test_depth_is_counted_across_envelope_kinds() -> None:
    body = text(s3_document())
    wraps: list[Any] = [receive, sns, lambda_sqs, lambda_sns]
    for wrap in wraps:
        body = text(wrap(body))
    assert len(normalize(body.encode("utf-8"), ORIGIN).events) == 1
    rejection = only_rejection(normalize(raw(receive(body)), ORIGIN))
    path = "Messages[0].Body.Records[0].Sns.Message.Records[0].body.Message.Messages[0].Body"
    assert rejection.message.startswith(f"{path} is nested 5")


def test_normalize_document_refuses_a_depth_beyond_the_limit() -> None:
    result = normalize_document(s3_document(), ORIGIN, "Outer.Body", MAX_ENVELOPE_DEPTH + 1)
    assert only_rejection(result).message.startswith("Outer.Body is nested 5 envelopes deep")
    assert (
        len(normalize_document(s3_document(), ORIGIN, "Outer.Body", MAX_ENVELOPE_DEPTH).events) == 1
    )


# --------------------------------------------------------------------------- module API


def test_envelope_functions_call_the_inner_parser_one_level_deeper() -> None:
    calls: list[tuple[str, str, str, int]] = []

    def inner(body: str, origin: str, path: str, depth: int) -> ParseResult:
        calls.append((body, origin, path, depth))
        return ParseResult.of(Ignored("seen", body))

    parse_sqs_receive_response(receive("a", "b"), "o", "", 0, inner)
    parse_lambda_sqs_record(lambda_sqs_record("c"), "o", "Records[3]", 1, inner)
    parse_sns_message(sns("d"), "o", "X", 2, inner)
    parse_lambda_sns_record(lambda_sns_record("e"), "o", "Records[0]", 0, inner)
    assert calls == [
        ("a", "o", "Messages[0].Body", 1),
        ("b", "o", "Messages[1].Body", 1),
        ("c", "o", "Records[3].body", 2),
        ("d", "o", "X.Message", 3),
        ("e", "o", "Records[0].Sns.Message", 1),
    ]


def test_envelope_functions_refuse_non_objects_without_raising() -> None:
    def inner(body: str, origin: str, path: str, depth: int) -> ParseResult:
        raise AssertionError("not reached")

    values: list[object] = [None, [], "x", 3]
    for value in values:
        for function in [
            parse_sqs_receive_response,
            parse_lambda_sqs_record,
            parse_sns_message,
            parse_lambda_sns_record,
        ]:
            result = function(value, "o", "", 0, inner)
            assert len(result.rejections) == 1


# --------------------------------------------------------------------------- totality


def test_random_damage_to_envelopes_never_raises() -> None:
    rng = random.Random(20261125)
    samples = [fixture(name) for name in sorted(p.name for p in FIXTURES.glob("*.json"))]
    small = [sample for sample in samples if len(sample) < 20_000]
    for _ in range(1500):
        data = bytearray(rng.choice(small))
        for _ in range(rng.randint(1, 3)):
            where = rng.randrange(len(data))
            action = rng.randrange(3)
            if action == 0:
                del data[where]
            elif action == 1:
                data.insert(where, rng.choice(b'{}[]",:\\0a%'))
            else:
                data[where] = rng.choice(b'{}[]",:\\0a% ')
        result = normalize(bytes(data), ORIGIN)
        assert result.items
        for item in result.items:
            assert isinstance(item, ObjectEvent | Rejection | Ignored)
            if not isinstance(item, ObjectEvent):
                item.message.encode("utf-8")


def test_every_fixture_parses_without_rejections_except_the_bad_one() -> None:
    for path in sorted(FIXTURES.glob("*.json")):
        result = normalize(path.read_bytes(), f"file:{path.name}")
        expected = 1 if path.name == "sqs_one_bad_message.json" else 0
        assert len(result.rejections) == expected, (path.name, result.rejections)
