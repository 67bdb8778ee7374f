"""A user's first tests (issue 20, part 7): SAM's sample S3 event and a pretty-printed
document with a syntax error, through the parser and a real `seqgate parse` process.

The S3 schema floor: 2.1 by default (the guide's rule), 2.0 with `--s3-schema-floor
2.0` (the operator's choice); 1.x and 3.x stay refused either way, and MinIO's rule
(every 2.x) does not move.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from seqgate_devtools.samples import s3_notification, s3_record

from seqgate.connectors.parsers.s3.native import S3ParseOptions, parse_s3_records
from seqgate.connectors.sources.files import split_messages
from seqgate.schemas.reasons import RejectReason
from tests.support.builders import only_event, only_rejection
from tests.support.environment import clean_env
from tests.support.paths import FIXTURES, REPO

SAMPLES = FIXTURES / "samples"
SAM_PUT = SAMPLES / "sam_s3_put.json"
TRAILING_COMMA = SAMPLES / "s3_pretty_trailing_comma.json"
LOWERED = S3ParseOptions(schema_floor="2.0")


def with_version(version: str) -> dict[str, Any]:
    record = s3_record(sequencer="0055AED6DCD90281E5")
    record["eventVersion"] = version
    return s3_notification(record)


def test_2_0_is_below_the_default_floor_with_the_way_out_named() -> None:
    rejection = only_rejection(parse_s3_records(with_version("2.0"), "test"))
    assert rejection.reason is RejectReason.UNSUPPORTED_SCHEMA_VERSION
    assert rejection.message == (
        'Records[0].eventVersion "2.0" is not supported: seqgate accepts S3 event schema'
        " 2.x with x >= 1 (the guide's floor); the sample events of the AWS SDKs, SAM and"
        " Lambda test tools carry 2.0: to accept them, run with --s3-schema-floor 2.0"
    )


@pytest.mark.parametrize("version", ["2.0", "2.00", "2.1", "2.2"])
def test_the_lowered_floor_accepts_every_2_x(version: str) -> None:
    event = only_event(parse_s3_records(with_version(version), "test", LOWERED))
    assert event.position == "0055aed6dcd90281e5"


@pytest.mark.parametrize("version", ["1.0", "1.9", "3.0", "2", "2.x", ""])
def test_the_lowered_floor_still_refuses_other_majors(version: str) -> None:
    rejection = only_rejection(parse_s3_records(with_version(version), "test", LOWERED))
    assert rejection.reason is RejectReason.UNSUPPORTED_SCHEMA_VERSION
    assert "--s3-schema-floor 2.0" in rejection.message


def test_other_majors_get_no_hint_by_default() -> None:
    rejection = only_rejection(parse_s3_records(with_version("1.0"), "test"))
    assert "--s3-schema-floor" not in rejection.message


@pytest.mark.parametrize("options", [S3ParseOptions(), LOWERED], ids=["default", "lowered"])
def test_minio_keeps_its_own_rule(options: S3ParseOptions) -> None:
    record = s3_record(sequencer="17A6B2C3D4E5F607")
    record.update(eventSource="minio:s3", eventName="s3:ObjectCreated:Put", eventVersion="2.0")
    assert only_event(parse_s3_records(s3_notification(record), "test", options)).source == "minio"
    record["eventVersion"] = "1.0"
    rejection = only_rejection(parse_s3_records(s3_notification(record), "test", options))
    assert rejection.reason is RejectReason.UNSUPPORTED_SCHEMA_VERSION
    assert "--s3-schema-floor" not in rejection.message


def test_an_unknown_floor_is_refused() -> None:
    with pytest.raises(ValueError, match="schema_floor"):
        S3ParseOptions(schema_floor="1.0")


# ---- files -------------------------------------------------------------------------------------


def test_a_pretty_printed_document_with_a_trailing_comma_is_one_message() -> None:
    data = TRAILING_COMMA.read_bytes()
    [message] = split_messages(data, "doc.json")
    assert message.origin == "file:doc.json:1"
    assert message.raw == data.strip()


def test_a_pretty_printed_document_with_a_compact_record_line_is_one_message() -> None:
    data = b'{\n  "Records": [\n    {"eventVersion": "2.1", "eventSource": "aws:s3"}\n  ],\n}\n'
    assert len(list(split_messages(data, "doc.json"))) == 1


def test_json_lines_with_a_broken_first_line_stay_lines() -> None:
    data = b'{"Records": [\n{"a": 1}\n{"b": 2}\n'  # a cut first line, then two documents
    assert [m.origin for m in split_messages(data, "x.jsonl")] == [
        "file:x.jsonl:1",
        "file:x.jsonl:2",
        "file:x.jsonl:3",
    ]


def test_a_cut_pretty_printed_document_is_one_message() -> None:
    data = b'{\n  "Records": [\n    {\n      "eventVersion": "2.1",\n'
    assert len(list(split_messages(data, "cut.json"))) == 1


# ---- seqgate parse, a real process ---------------------------------------------------------


def seqgate_parse(*args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "seqgate.cli", "parse", *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_sam_s3_put_through_parse_needs_the_lowered_floor() -> None:
    [refused] = seqgate_parse(str(SAM_PUT))
    assert (refused["status"], refused["reason"]) == ("rejected", "unsupported_schema_version")
    assert "--s3-schema-floor 2.0" in refused["message"]
    [event] = seqgate_parse("--s3-schema-floor", "2.0", str(SAM_PUT))
    assert event["status"] == "event"
    assert (event["bucket"], event["key"], event["kind"]) == (
        "example-bucket",
        "test/key",
        "created",
    )
    assert event["position"] == "0a1b2c3d4e5f678901"


def test_the_trailing_comma_document_through_parse_is_one_rejection() -> None:
    [refused] = seqgate_parse(str(TRAILING_COMMA))
    assert (refused["status"], refused["reason"]) == ("rejected", "malformed_json")
    assert "line 21 column 9" in refused["message"], refused["message"]
    assert refused["origin"] == f"file:{TRAILING_COMMA}:1"
