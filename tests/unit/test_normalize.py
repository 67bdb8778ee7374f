"""Raw bytes -> events (seqgate/connectors/parsers/normalize.py): JSON decoding and dispatch."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from seqgate.connectors.parsers.normalize import ParseResult, normalize, normalize_document
from seqgate.schemas.reasons import RejectReason

ORIGIN = "sqs:incoming-uploads"


def record(**object_fields: Any) -> dict[str, Any]:
    obj = {"key": "incoming%2FJune+report%2Bfinal.csv", "sequencer": "0055AED6DCD90281E5"}
    obj.update(object_fields)
    return {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "eventName": "ObjectCreated:Put",
        "eventTime": "2026-11-25T10:00:00.000Z",
        "s3": {"bucket": {"name": "example-input"}, "object": obj},
    }


def body(document: object) -> bytes:
    return json.dumps(document).encode("utf-8")


VALID = body({"Records": [record(size=5), record(key="b.txt", sequencer="0055AED6DCD90281E6")]})


def whole_rejection(result: ParseResult, reason: RejectReason) -> str:
    assert result.events == []
    assert result.ignored == []
    assert len(result.rejections) == 1
    rejection = result.rejections[0]
    assert rejection.reason is reason, rejection
    assert rejection.record_index is None
    return rejection.message


# --------------------------------------------------------------------------- dispatch


def test_native_s3_message() -> None:
    result = normalize(VALID, ORIGIN)
    assert result.rejections == []
    assert result.ignored == []
    assert [event.key for event in result.events] == ["incoming/June report+final.csv", "b.txt"]
    assert {event.origin for event in result.events} == {ORIGIN}
    assert {event.source for event in result.events} == {"s3"}


def test_test_event_is_ignored() -> None:
    result = normalize(body({"Service": "Amazon S3", "Event": "s3:TestEvent"}), ORIGIN)
    assert [item.reason for item in result.ignored] == ["s3_test_event"]
    assert len(result) == 1


def test_record_level_rejections_pass_through() -> None:
    raw = body({"Records": [record(), record(key="bad%2"), {"eventSource": "aws:dynamodb"}]})
    result = normalize(raw, ORIGIN)
    assert len(result.events) == 1
    assert [(r.record_index, r.reason) for r in result.rejections] == [
        (1, RejectReason.INVALID_KEY_ENCODING),
        (2, RejectReason.WRONG_EVENT_SOURCE),
    ]


@pytest.mark.parametrize(
    ("document", "described"),
    [
        ([], "an array"),
        ([{"Records": []}], "an array"),
        ("Records", "a string"),
        (42, "a number"),
        (4.2, "a number"),
        (True, "a boolean"),
        (None, "null"),
        ({}, "a JSON object with members (none)"),
        # Near misses of the recognizers: each lacks the member that decides.
        ({"Type": "Notification", "Subject": "x"}, 'members "Subject", "Type"'),
        ({"Message": "{}", "TopicArn": "arn"}, 'members "Message", "TopicArn"'),
        ({"detail": {}, "account": "1"}, 'members "account", "detail"'),
        ({"source": "aws.s3", "id": "1"}, 'members "id", "source"'),
        ({"messages": [], "records": []}, 'members "messages", "records"'),
    ],
)
def test_unrecognized_documents(document: object, described: str) -> None:
    message = whole_rejection(normalize(body(document), ORIGIN), RejectReason.NOT_A_NOTIFICATION)
    assert message.startswith("the body is ")
    assert described in message
    for known in [
        "native S3 notification or Lambda event",
        "SNS message",
        "SQS ReceiveMessage response",
        "EventBridge event",
    ]:
        assert known in message


# Each shape goes to its parser: the rejection comes from that parser's own rules.
@pytest.mark.parametrize(
    ("document", "reason", "start"),
    [
        ({"Type": "Notification", "TopicArn": "arn"}, RejectReason.MISSING_FIELD, "Message"),
        ({"Type": "Notification", "Message": 5}, RejectReason.INVALID_FIELD, "Message"),
        ({"Messages": 5}, RejectReason.INVALID_FIELD, "Messages"),
        ({"detail": {}, "source": "aws.s3"}, RejectReason.UNSUPPORTED_SCHEMA_VERSION, "version"),
        ({"detail-type": "Object Created"}, RejectReason.WRONG_EVENT_SOURCE, "source"),
    ],
)
def test_envelope_shapes_go_to_their_parsers(
    document: object, reason: RejectReason, start: str
) -> None:
    message = whole_rejection(normalize(body(document), ORIGIN), reason)
    assert message.startswith(start + " ")


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        # 'Records' wins over every envelope member.
        ({"Records": [record()], "Messages": [], "Type": "Notification", "detail-type": "x"}, 1),
        # An SNS message wins over an SQS response and an EventBridge event.
        (
            {
                "Type": "Notification",
                "Message": body({"Records": [record()]}).decode(),
                "Messages": 1,
            },
            1,
        ),
    ],
)
def test_recognizer_order(document: object, expected: int) -> None:
    result = normalize(body(document), ORIGIN)
    assert result.rejections == []
    assert len(result.events) == expected


def test_normalize_document_takes_a_decoded_document() -> None:
    document = {"Records": [record(), record(key="bad%2")]}
    result = normalize_document(document, ORIGIN, "Messages[3].Body", 1)
    assert [event.key for event in result.events] == ["incoming/June report+final.csv"]
    [rejection] = result.rejections
    assert rejection.message.startswith("Messages[3].Body: Records[1].s3.object.key ")
    assert (
        normalize_document(document, ORIGIN).items[1] == normalize(body(document), ORIGIN).items[1]
    )
    message = whole_rejection(
        normalize_document([], ORIGIN, "Records[0].body", 1), RejectReason.NOT_A_NOTIFICATION
    )
    assert message.startswith("Records[0].body is an array: expected one of: ")


def test_json_error_messages_read_well() -> None:
    message = whole_rejection(normalize(b'{"Records": "abc', ORIGIN), RejectReason.MALFORMED_JSON)
    assert "Unterminated string starting at line 1 column 13 (character 12)" in message


@pytest.mark.parametrize(
    "document", [{"Records": 5}, {"Records": []}, {"Event": "s3:Other"}, {"Records": None}]
)
def test_s3_shaped_documents_go_to_the_s3_parser(document: object) -> None:
    message = whole_rejection(normalize(body(document), ORIGIN), RejectReason.NOT_A_NOTIFICATION)
    assert "Records" in message


def test_description_of_many_members_is_bounded() -> None:
    document = {f"member{index}": index for index in range(1000)}
    message = whole_rejection(normalize(body(document), ORIGIN), RejectReason.NOT_A_NOTIFICATION)
    assert len(message) < 500
    assert message.count("member") < 20


# --------------------------------------------------------------------------- JSON decoding


def test_byte_order_mark_is_tolerated() -> None:
    result = normalize(b"\xef\xbb\xbf" + VALID, ORIGIN)
    assert len(result.events) == 2


def test_surrounding_whitespace_is_fine() -> None:
    assert len(normalize(b"\n  " + VALID + b"\r\n", ORIGIN).events) == 2


@pytest.mark.parametrize(
    ("raw", "position"),
    [
        (b"\xff", "byte offset 0"),
        (b'{"Records": "\xc3\x28"}', "byte offset 13"),
        (b"\xef\xbb\xbf{\xff}", "byte offset 4"),  # offsets count the BOM
        (b'{"a": "\xed\xa0\x80"}', "byte offset 7"),  # an encoded surrogate
    ],
)
def test_invalid_utf8(raw: bytes, position: str) -> None:
    message = whole_rejection(normalize(raw, ORIGIN), RejectReason.MALFORMED_JSON)
    assert "not valid UTF-8" in message
    assert position in message


@pytest.mark.parametrize(
    ("raw", "position"),
    [
        (b"", "line 1 column 1 (character 0)"),
        (b"   ", "line 1 column 4 (character 3)"),
        (b"{", "line 1 column 2 (character 1)"),
        (b'{"Records": [}', "line 1 column 14 (character 13)"),
        (b'{"Records": []}\n{"Records": []}', "line 2 column 1 (character 16)"),
        (b"{'Records': []}", "line 1 column 2 (character 1)"),
        (b'{"Records": [],}', "line 1 column 16 (character 15)"),
        (VALID[:-1], f"character {len(VALID) - 1}"),
    ],
)
def test_invalid_json_names_the_position(raw: bytes, position: str) -> None:
    message = whole_rejection(normalize(raw, ORIGIN), RejectReason.MALFORMED_JSON)
    assert message.startswith("the body is not valid JSON: ")
    assert position in message


@pytest.mark.parametrize("constant", [b"NaN", b"Infinity", b"-Infinity"])
def test_non_standard_constants_are_refused(constant: bytes) -> None:
    raw = b'{"Records": [{"s3": {"object": {"size": ' + constant + b"}}}]}"
    message = whole_rejection(normalize(raw, ORIGIN), RejectReason.MALFORMED_JSON)
    assert "NaN or Infinity" in message


@pytest.mark.parametrize(
    "raw",
    [
        b'{"Records": [], "Records": []}',
        b'{"Records": [{"s3": {"object": {"key": "a", "key": "b"}}}]}',
    ],
)
def test_duplicate_member_names_are_refused(raw: bytes) -> None:
    message = whole_rejection(normalize(raw, ORIGIN), RejectReason.MALFORMED_JSON)
    assert "appears twice" in message


def test_deep_nesting_is_refused() -> None:
    raw = b'{"Records": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    message = whole_rejection(normalize(raw, ORIGIN), RejectReason.NESTING_TOO_DEEP)
    assert message.startswith("the body nests arrays and objects more than 64 levels deep")


def test_enormous_integer_is_refused() -> None:
    raw = b'{"Records": [{"s3": {"object": {"size": ' + b"9" * 10_000 + b"}}}]}"
    message = whole_rejection(normalize(raw, ORIGIN), RejectReason.MALFORMED_JSON)
    assert "not acceptable JSON" in message


def test_json_escapes_in_keys_are_json_decoded_before_form_decoding() -> None:
    # JSON's own escapes are not form encoding: "\u0025" is a literal '%'.
    raw = body({"Records": [record(key="caf\u00e9%2B")]})
    assert normalize(raw, ORIGIN).events[0].key == "café+"
    raw = b'{"Records": [' + body(record())[:-1] + b"}]}"
    raw = raw.replace(b"incoming%2FJune", b"incoming\\u00252FJune")
    assert normalize(raw, ORIGIN).events[0].key == "incoming/June report+final.csv"


def test_lone_surrogate_escape_in_key_is_a_key_encoding_rejection() -> None:
    raw = body({"Records": [record(key="\ud800")]})
    result = normalize(raw, ORIGIN)
    assert [r.reason for r in result.rejections] == [RejectReason.INVALID_KEY_ENCODING]
    result.rejections[0].message.encode("utf-8")


# --------------------------------------------------------------------------- totality


def check_total(raw: bytes) -> None:
    result = normalize(raw, ORIGIN)
    assert isinstance(result, ParseResult)
    assert result.events or result.rejections or result.ignored
    for rejection in result.rejections:
        assert isinstance(rejection.reason, RejectReason)
        rejection.message.encode("utf-8")


def test_random_byte_damage_never_raises() -> None:
    rng = random.Random(4242)
    samples = [VALID, body({"Event": "s3:TestEvent"}), body({"Records": [record(), None]})]
    for _ in range(3000):
        raw = bytearray(rng.choice(samples))
        for _ in range(rng.randint(1, 4)):
            action = rng.randrange(4)
            where = rng.randrange(len(raw) + 1)
            if action == 0 and raw:
                del raw[min(where, len(raw) - 1)]
            elif action == 1:
                raw.insert(where, rng.randrange(256))
            elif action == 2 and where < len(raw):
                raw[where] = rng.choice(b'{}[]",:0a%\\\xff\xc3 ')
            else:
                raw = raw[:where]
        check_total(bytes(raw))


def test_every_truncation_never_raises() -> None:
    for end in range(len(VALID) + 1):
        check_total(VALID[:end])


@pytest.mark.parametrize(
    "raw",
    [
        b"null",
        b"[]",
        b'"str"',
        b'{"Records": [null]}',
        b'{"Records": [{"s3": []}]}',
        b'{"Records": [{"eventSource": "aws:s3", "eventVersion": "2.1", "s3": {"bucket": 1}}]}',
        b'{"Records": [{"eventSource": "aws:s3", "eventVersion": "2.1", '
        b'"eventName": "ObjectCreated:Put", "s3": {"bucket": {"name": "b"}, "object": []}}]}',
        b'{"Records": [{}, [], 1, "x", true]}',
        b'{"Event": [], "Records": {}}',
        b"\x00",
        b"\xfe\xff\x00{",
    ],
)
def test_battery_never_raises(raw: bytes) -> None:
    check_total(raw)
