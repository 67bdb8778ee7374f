"""`seqgate tail`'s decoding (issue 18 §2), without a broker: every record type in
single-object encoding, a Confluent-framed body read with the type given, and the records
that cannot be decoded (a tombstone, foreign bytes, truncated frames), each a line with
its raw value and a reason; the JSON line's shape; the command's usage errors."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from click.testing import CliRunner

from seqgate.cli import cli
from seqgate.runtime.topics import topic_roles
from seqgate.schemas.confluent import confluent_frame
from seqgate.schemas.records import (
    DecisionRecord,
    OutboxRecord,
    RejectedRecord,
    SeenEvent,
    Watermark,
)
from seqgate.streams.tools.replay import InputRecord
from seqgate.streams.tools.tail import RECORD_TYPES, decode_value, default_type, record_line
from tests.support.events import event

EVENT = event("incoming/June report+final.csv", "0055AED6DCD90281E5")
RECORDS: dict[str, Any] = {
    "event": EVENT,
    "outbox": OutboxRecord(EVENT, "0055AED6DCD90281E4", 2, 41),
    "rejected": RejectedRecord(b"\xff{not json", "file:x", "r", "m", 3),
    "audit": DecisionRecord(2, 41, "s3://bucket/k", "e1", "0A", "created", "queued", None, None),
    "watermark": Watermark("0A", "e1", 2, 41),
    "seen": SeenEvent("e1", "minio://b/k", 1_780_000_000_000, 2, 41),
}
OUTBOX_RECORD = RECORD_TYPES["outbox"]


def expected_fields(record: Any) -> dict[str, Any]:
    fields: dict[str, Any] = record.to_dict()
    if isinstance(record, RejectedRecord):
        fields["raw"] = base64.b64encode(record.raw).decode("ascii")
    return fields


def test_every_record_type_has_a_name() -> None:
    assert sorted(RECORD_TYPES) == sorted(RECORDS)


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_single_object_names_its_type_by_fingerprint(name: str) -> None:
    codec, record = RECORD_TYPES[name], RECORDS[name]
    for given in (None, "event", "rejected"):  # --type does not override the fingerprint
        decoded = decode_value(codec.encode(record), given)
        assert decoded == {
            "encoding": "single-object",
            "type": name,
            "value": expected_fields(record),
        }


def test_bytes_fields_are_base64() -> None:
    value = decode_value(RECORD_TYPES["rejected"].encode(RECORDS["rejected"]))["value"]
    assert base64.b64decode(value["raw"]) == b"\xff{not json"


@pytest.mark.parametrize("name", sorted(RECORDS))
def test_a_confluent_body_is_read_with_the_type_given(name: str) -> None:
    codec, record = RECORD_TYPES[name], RECORDS[name]
    decoded = decode_value(confluent_frame(7, codec.encode_body(record)), name)
    assert decoded == {
        "encoding": "confluent",
        "schema_id": 7,
        "type": name,
        "value": expected_fields(record),
    }


def test_a_confluent_body_without_a_type_is_raw_with_its_schema_id() -> None:
    data = confluent_frame(12, RECORD_TYPES["event"].encode_body(EVENT))
    decoded = decode_value(data)
    assert decoded["encoding"] == "confluent" and decoded["schema_id"] == 12
    assert decoded["type"] is None and "value" not in decoded
    assert base64.b64decode(decoded["raw"]) == data
    assert "--type" in decoded["reason"] and "schema id 12" in decoded["reason"]


def test_a_confluent_body_of_another_type_says_so() -> None:
    data = confluent_frame(3, RECORD_TYPES["watermark"].encode_body(RECORDS["watermark"]))
    decoded = decode_value(data, "event")
    assert decoded["schema_id"] == 3 and "value" not in decoded
    assert decoded["reason"].startswith("read as event: truncated io.seqgate.ObjectEvent")


def test_a_tombstone_is_a_line_with_a_reason() -> None:
    assert decode_value(None) == {
        "encoding": "raw",
        "type": None,
        "raw": None,
        "reason": "tombstone (no value)",
    }


@pytest.mark.parametrize("data", [b"", b'{"Records": []}', b"\xff\xfe"])
def test_foreign_bytes_are_raw(data: bytes) -> None:
    decoded = decode_value(data, "outbox")
    assert decoded["encoding"] == "raw" and decoded["type"] is None
    assert base64.b64decode(decoded["raw"]) == data
    assert decoded["reason"].startswith("foreign bytes")


@pytest.mark.parametrize("cut", [2, 5, 9])
def test_a_truncated_single_object_header(cut: int) -> None:
    data = OUTBOX_RECORD.encode(RECORDS["outbox"])[:cut]
    decoded = decode_value(data)
    assert decoded["encoding"] == "single-object" and "value" not in decoded
    assert decoded["reason"] == f"truncated single-object header: {cut} of 10 bytes"


def test_a_truncated_single_object_body_keeps_its_type() -> None:
    data = OUTBOX_RECORD.encode(RECORDS["outbox"])[:-3]
    decoded = decode_value(data)
    assert decoded["type"] == "outbox" and "value" not in decoded
    assert base64.b64decode(decoded["raw"]) == data
    assert decoded["reason"].startswith("truncated io.seqgate.OutboxRecord")


def test_an_unknown_fingerprint_is_named() -> None:
    data = b"\xc3\x01" + bytes(range(8)) + b"\x00"
    decoded = decode_value(data)
    assert decoded["type"] is None
    assert decoded["reason"].startswith("unknown schema fingerprint 0001020304050607")


@pytest.mark.parametrize("cut", [1, 4])
def test_a_truncated_confluent_frame(cut: int) -> None:
    decoded = decode_value(confluent_frame(7, b"body")[:cut], "event")
    assert decoded["encoding"] == "confluent" and "value" not in decoded
    assert decoded["reason"].startswith("truncated Confluent frame")


def test_the_line_shape() -> None:
    value = OUTBOX_RECORD.encode(RECORDS["outbox"])
    record = InputRecord(2, 41, b"s3://bucket/k", value, 1_780_000_000_123)
    line = record_line("object-events.outbox", record, None)
    assert list(line) == [
        "topic",
        "partition",
        "offset",
        "timestamp",
        "key",
        "encoding",
        "type",
        "value",
    ]
    assert line["timestamp"] == "2026-05-28T20:26:40.123+00:00"
    assert line["key"] == "s3://bucket/k" and line["value"]["input_offset"] == 41
    assert json.loads(json.dumps(line)) == line


def test_a_key_that_is_not_utf8_is_base64_and_no_timestamp_is_null() -> None:
    line = record_line("t", InputRecord(0, 0, b"\xff\x00", None, -1), None)
    assert line["key"] == "/wA=" and line["key_base64"] is True
    assert line["timestamp"] is None
    assert record_line("t", InputRecord(0, 0, None, None, 0), None)["key"] is None


def test_the_default_type_comes_from_the_topic_family() -> None:
    roles = topic_roles(
        input_topic="in",
        outbox_topic="out",
        rejected_topic="dead",
        application_id="app",
        audit_topic="decisions",
    )
    found = {name: default_type(name, roles) for name in ("in", "out", "dead", "decisions")}
    assert found == {"in": "event", "out": "outbox", "dead": "rejected", "decisions": "audit"}
    assert default_type("app-watermarks-changelog", roles) is None  # two types there
    assert default_type("elsewhere", roles) is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--offset", "3"], "--offset needs exactly one --partition"),
        (["--offset", "3", "--partition", "0", "--partition", "1"], "exactly one --partition"),
        (["--offset", "3", "--partition", "0", "--from-beginning"], "give one of them"),
    ],
)
def test_usage_errors_are_one_line_and_code_2(args: list[str], message: str) -> None:
    result = CliRunner().invoke(
        cli, ["tail", "--bootstrap-servers", "127.0.0.1:1", *args, "some-topic"]
    )
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ") and message in result.stderr
    assert len(result.stderr.splitlines()) == 1
