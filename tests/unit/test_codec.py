"""Tests of seqgate.schemas.codec: round trips, wire format, errors, determinism, interop."""

from __future__ import annotations

import io
import json
import os
import random
import re
import subprocess
import sys
from dataclasses import fields
from pathlib import Path
from typing import Any

import avro.io
import avro.name
import avro.schema
import pytest
from fastavro import schemaless_writer
from fastavro.schema import parse_schema

import seqgate.schemas
from seqgate.schemas import codec
from seqgate.schemas.avro_codec import AvroCodec
from seqgate.schemas.avro_schemas import SCHEMA_FILES, crc64_avro, load_schema_text
from seqgate.schemas.codec import (
    DECISION_RECORD,
    OBJECT_EVENT,
    OUTBOX_RECORD,
    REJECTED_RECORD,
    SEEN_EVENT,
    WATERMARK,
)
from seqgate.schemas.confluent import confluent_frame, confluent_unframe
from seqgate.schemas.errors import CodecError
from seqgate.schemas.records import (
    DecisionRecord,
    ObjectEvent,
    OutboxRecord,
    RejectedRecord,
    SeenEvent,
    Watermark,
)
from tests.support.paths import REPO

SCHEMA_DIR = Path(seqgate.schemas.__file__).parent


EVENT = ObjectEvent(
    id="s3:0055AED6DCD90281E5:created:s3://my-bucket/photos/2024/cat.jpg",
    source="s3",
    bucket="my-bucket",
    key="photos/2024/cat.jpg",
    kind="created",
    event_name="ObjectCreated:Put",
    position="0055AED6DCD90281E5",
    version_id="096fKKXTRTtl3on89fVO.nfljtsv6qko",
    size=1024,
    etag="d41d8cd98f00b204e9800998ecf8427e",
    event_time="2024-05-01T12:00:00.000Z",
    origin="sqs:my-queue",
)
EVENT_NULLS = ObjectEvent(
    id="b2:evt-1",
    source="b2",
    bucket="b",
    key="k",
    kind="removed",
    event_name="b2:ObjectDeleted",
    position=None,
    version_id=None,
    size=None,
    etag=None,
    event_time=None,
    origin="http:/hooks/b2",
)
EVENT_UNICODE = ObjectEvent(
    id="gs:ü-1",
    source="gs",
    bucket="données",
    key="photos/日本語/ファイル name+with%20 spaces 🐈‍⬛.jpg",
    kind="version_removed",
    event_name="OBJECT_DELETE",
    position="1714564800000000",
    version_id="1714564800000000",
    size=0,
    etag="",
    event_time="2024-05-01T12:00:00Z",
    origin="file:/tmp/événements.jsonl:3",
)
LONG = "x" * 1_000_000 + "é" * 100_000
EVENT_LONG = ObjectEvent(
    id=LONG,
    source="s3",
    bucket="b",
    key=LONG,
    kind="created",
    event_name="ObjectCreated:Put",
    position="F" * 10_000,
    version_id=None,
    size=2**63 - 1,
    etag=None,
    event_time=None,
    origin="o",
)
OUTBOX = OutboxRecord(
    event=EVENT, previous_position="0055AED6DCD90281E4", input_partition=7, input_offset=123456
)
OUTBOX_FIRST = OutboxRecord(
    event=EVENT_UNICODE, previous_position=None, input_partition=0, input_offset=0
)
OUTBOX_MAX = OutboxRecord(
    event=EVENT_NULLS, previous_position="", input_partition=2**31 - 1, input_offset=2**63 - 1
)
REJECTED = RejectedRecord(
    raw=b'{"Records": [\xff\xfe\x00\x80 not utf-8',
    origin="sqs:q",
    reason="malformed_json",
    message="Expecting value: line 1 column 14 (char 13)",
    record_index=None,
)
REJECTED_INDEXED = RejectedRecord(
    raw=bytes(range(256)) * 4000,
    origin="http:/hooks/s3",
    reason="invalid_key_encoding",
    message="key 'a%zz' is not valid percent-encoding — ünïcödé",
    record_index=3,
)
REJECTED_EMPTY = RejectedRecord(raw=b"", origin="", reason="", message="", record_index=0)
MARK = Watermark(position="0055AED6DCD90281E5", event_id="id-1", input_partition=3, input_offset=9)
MARK_BIG = Watermark(
    position="z" * 5000, event_id="ключ", input_partition=-(2**31), input_offset=-(2**63)
)

SEEN = SeenEvent("evt-1", "minio://b/k", 1_780_000_000_000, 2, 77)

CASES: list[tuple[AvroCodec[Any], Any]] = [
    (OBJECT_EVENT, EVENT),
    (OBJECT_EVENT, EVENT_NULLS),
    (OBJECT_EVENT, EVENT_UNICODE),
    (OBJECT_EVENT, EVENT_LONG),
    (OUTBOX_RECORD, OUTBOX),
    (OUTBOX_RECORD, OUTBOX_FIRST),
    (OUTBOX_RECORD, OUTBOX_MAX),
    (REJECTED_RECORD, REJECTED),
    (REJECTED_RECORD, REJECTED_INDEXED),
    (REJECTED_RECORD, REJECTED_EMPTY),
    (WATERMARK, MARK),
    (WATERMARK, MARK_BIG),
    (SEEN_EVENT, SEEN),
]
CASE_IDS = [f"{c.schema_name.rsplit('.', 1)[1]}-{i}" for i, (c, _) in enumerate(CASES)]
CODECS: dict[str, AvroCodec[Any]] = {
    "object_event.avsc": OBJECT_EVENT,
    "outbox_record.avsc": OUTBOX_RECORD,
    "rejected_record.avsc": REJECTED_RECORD,
    "watermark.avsc": WATERMARK,
    "seen_event.avsc": SEEN_EVENT,
    "decision_record.avsc": DECISION_RECORD,
}
SAMPLES: dict[str, Any] = {
    "object_event.avsc": EVENT,
    "outbox_record.avsc": OUTBOX,
    "rejected_record.avsc": REJECTED_INDEXED,
    "watermark.avsc": MARK,
    "seen_event.avsc": SEEN,
    "decision_record.avsc": DecisionRecord(
        2,
        41,
        "s3://my-bucket/photos/2024/cat.jpg",
        EVENT.id,
        "0055AED6DCD90281E5",
        "created",
        "duplicate",
        None,
        "0055AED6DCD90281E5",
    ),
}


# -- round trips ------------------------------------------------------------------


@pytest.mark.parametrize(("codec_", "record"), CASES, ids=CASE_IDS)
def test_round_trip(codec_: AvroCodec[Any], record: Any) -> None:
    data = codec_.encode(record)
    decoded = codec_.decode(data)
    assert decoded == record
    assert type(decoded) is type(record)
    assert codec_.decode_body(codec_.encode_body(record)) == record


def test_rejected_raw_bytes_are_kept_exactly() -> None:
    decoded = REJECTED_RECORD.decode(REJECTED_RECORD.encode(REJECTED))
    assert isinstance(decoded.raw, bytes)
    assert decoded.raw == b'{"Records": [\xff\xfe\x00\x80 not utf-8'


def test_nested_event_is_an_object_event() -> None:
    decoded = OUTBOX_RECORD.decode(OUTBOX_RECORD.encode(OUTBOX_FIRST))
    assert type(decoded.event) is ObjectEvent
    assert decoded.event.key == "photos/日本語/ファイル name+with%20 spaces 🐈‍⬛.jpg"


# -- wire format ----------------------------------------------------------------


@pytest.mark.parametrize(("codec_", "record"), CASES, ids=CASE_IDS)
def test_single_object_header(codec_: AvroCodec[Any], record: Any) -> None:
    data = codec_.encode(record)
    assert data[:2] == b"\xc3\x01"
    assert data[2:10] == codec_.fingerprint
    assert data[10:] == codec_.encode_body(record)


def test_body_bytes_follow_the_avro_spec() -> None:
    # Hand-derived from the spec: strings are a zig-zag varint length + UTF-8,
    # ints/longs are zig-zag varints (3 -> 06, 64 -> 80 01).
    body = WATERMARK.encode_body(
        Watermark(position="0A", event_id="e1", input_partition=3, input_offset=64)
    )
    assert body == b"\x040A\x04e1\x06\x80\x01"
    # Unions: the branch index as a varint (null = 0 -> 00, string = 1 -> 02).
    event = ObjectEvent("i", "s", "b", "k", "created", "n", "p", None, 5, None, None, "o")
    assert OBJECT_EVENT.encode_body(event) == (
        b"\x02i\x02s\x02b\x02k\x0ecreated\x02n"
        b"\x02\x02p"  # position: branch 1, "p"
        b"\x00"  # version_id: null
        b"\x02\x0a"  # size: branch 1, long 5
        b"\x00\x00"  # etag, event_time: null
        b"\x02o"
    )


def test_schema_names() -> None:
    assert OBJECT_EVENT.schema_name == "io.seqgate.ObjectEvent"
    assert OUTBOX_RECORD.schema_name == "io.seqgate.OutboxRecord"
    assert REJECTED_RECORD.schema_name == "io.seqgate.RejectedRecord"
    assert WATERMARK.schema_name == "io.seqgate.Watermark"
    fingerprints = {c.fingerprint for c in CODECS.values()}
    assert len(fingerprints) == len(SCHEMA_FILES)
    assert all(len(f) == 8 for f in fingerprints)


# -- fingerprints -------------------------------------------------------------------

_EMPTY64 = 0xC15D213AA4D7A795


def _rabin_from_spec(data: bytes) -> int:
    """CRC-64-AVRO exactly as the Avro specification writes it ("Schema Fingerprints")."""
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (_EMPTY64 & -(fp & 1))
        table.append(fp)
    fp = _EMPTY64
    for byte in data:
        fp = (fp >> 8) ^ table[(fp ^ byte) & 0xFF]
    return fp


@pytest.mark.parametrize(
    ("canonical", "java_long"),
    [
        # Apache Avro share/test/data/schema-tests.txt (Java's signed longs).
        ('"null"', 7195948357588979594),
        ('"boolean"', -6970731678124411036),
        ('"int"', 8247732601305521295),
        (
            '{"name":"foo","type":"record","fields":[{"name":"f1","type":"boolean"}]}',
            7843277075252814651,
        ),
    ],
)
def test_crc64_avro_matches_published_vectors(canonical: str, java_long: int) -> None:
    assert _rabin_from_spec(canonical.encode()) == java_long % 2**64
    # single-object encoding carries the 64-bit value little-endian
    assert crc64_avro(canonical) == (java_long % 2**64).to_bytes(8, "little")


def _avro_parse_all(directory: Path) -> dict[str, Any]:
    names = avro.name.Names()
    return {
        f: avro.schema.make_avsc_object(json.loads((directory / f).read_text()), names)
        for f in SCHEMA_FILES
    }


@pytest.mark.parametrize("filename", SCHEMA_FILES)
def test_fingerprint_matches_avro_package_and_spec(filename: str) -> None:
    parsed = _avro_parse_all(SCHEMA_DIR)[filename]
    codec_ = CODECS[filename]
    assert codec_.fingerprint == parsed.fingerprint("CRC-64-AVRO")
    canonical: str = parsed.canonical_form
    expected = _rabin_from_spec(canonical.encode()).to_bytes(8, "little")
    assert codec_.fingerprint == expected


def test_outbox_fingerprint_covers_the_nested_event() -> None:
    # The canonical form inlines io.seqgate.ObjectEvent, so a change to the event
    # changes the outbox fingerprint too.
    canonical: str = _avro_parse_all(SCHEMA_DIR)["outbox_record.avsc"].canonical_form
    assert '"name":"io.seqgate.ObjectEvent","type":"record"' in canonical
    assert OUTBOX_RECORD.fingerprint == crc64_avro(canonical)


def test_docs_do_not_change_the_fingerprint() -> None:
    schema = json.loads(load_schema_text("object_event.avsc"))
    for field in schema["fields"]:
        field["doc"] = "rewritten"
    schema["doc"] = "rewritten"
    codec_ = AvroCodec(
        parse_schema(schema, {}),
        ObjectEvent,
        codec._event_to_avro,
        codec._event_from_avro,
        ObjectEvent.from_dict,
    )
    assert codec_.fingerprint == OBJECT_EVENT.fingerprint


# -- errors ---------------------------------------------------------------------------


def test_wrong_magic() -> None:
    data = OBJECT_EVENT.encode(EVENT)
    with pytest.raises(CodecError, match=r"bad magic .*expected c3 01 .*found c3 02"):
        OBJECT_EVENT.decode(b"\xc3\x02" + data[2:])
    confluent = confluent_frame(42, OBJECT_EVENT.encode_body(EVENT))
    with pytest.raises(CodecError, match=r"found 00 00 \(looks like the Confluent wire format"):
        OBJECT_EVENT.decode(confluent)
    with pytest.raises(CodecError, match=r"bad magic"):
        OBJECT_EVENT.decode(b'{"id": "not avro at all"}')


def test_wrong_fingerprint() -> None:
    data = OBJECT_EVENT.encode(EVENT)
    bogus = data[:2] + bytes(8) + data[10:]
    with pytest.raises(
        CodecError,
        match=rf"unknown schema fingerprint for io\.seqgate\.ObjectEvent: expected "
        rf"{OBJECT_EVENT.fingerprint.hex()}, found 0000000000000000 \(unknown\)",
    ):
        OBJECT_EVENT.decode(bogus)


def test_record_of_another_type_is_named() -> None:
    with pytest.raises(CodecError, match=r"found .* \(the fingerprint of io\.seqgate\.Watermark\)"):
        OBJECT_EVENT.decode(WATERMARK.encode(MARK))


@pytest.mark.parametrize("size", [0, 1, 2, 9])
def test_truncated_header(size: int) -> None:
    data = OBJECT_EVENT.encode(EVENT)[:size]
    with pytest.raises(CodecError, match=rf"truncated .*at least 10 bytes .*found {size}"):
        OBJECT_EVENT.decode(data)


@pytest.mark.parametrize("cut", [1, 5, 40])
def test_truncated_body(cut: int) -> None:
    data = OBJECT_EVENT.encode(EVENT)
    with pytest.raises(CodecError, match=r"truncated io\.seqgate\.ObjectEvent: the Avro body"):
        OBJECT_EVENT.decode(data[:-cut])


def test_header_only() -> None:
    with pytest.raises(CodecError, match="truncated"):
        OBJECT_EVENT.decode(OBJECT_EVENT.encode(EVENT)[:10])


def test_trailing_bytes() -> None:
    with pytest.raises(CodecError, match=r"\(3 trailing bytes after the record\)"):
        WATERMARK.decode(WATERMARK.encode(MARK) + b"abc")
    with pytest.raises(CodecError, match="trailing"):
        WATERMARK.decode_body(WATERMARK.encode_body(MARK) + b"\x00")


def test_invalid_utf8_in_a_string() -> None:
    body = bytearray(WATERMARK.encode_body(MARK))
    body[1] = 0xFF
    with pytest.raises(
        CodecError, match=r"invalid io\.seqgate\.Watermark body: UnicodeDecodeError"
    ):
        WATERMARK.decode_body(bytes(body))


def test_corrupted_bytes_raise_only_codec_error() -> None:
    data = OUTBOX_RECORD.encode(OUTBOX)
    rnd = random.Random(20241125)
    outcomes = {"decoded": 0, "error": 0}
    for _ in range(3000):
        mutated = bytearray(data)
        for _ in range(rnd.randint(1, 3)):
            position = rnd.randrange(10, len(mutated))
            mutated[position] = rnd.randrange(256)
        if rnd.random() < 0.3:
            mutated = mutated[: rnd.randrange(len(mutated) + 1)]
        try:
            OUTBOX_RECORD.decode(bytes(mutated))
            outcomes["decoded"] += 1
        except CodecError:
            outcomes["error"] += 1
    assert outcomes["error"] > 0


def test_encode_rejects_wrong_type() -> None:
    with pytest.raises(CodecError, match=r"expected a ObjectEvent, found Watermark"):
        OBJECT_EVENT.encode(MARK)  # type: ignore[arg-type]
    bad = OutboxRecord(event=MARK, previous_position=None, input_partition=0, input_offset=0)  # type: ignore[arg-type]
    with pytest.raises(CodecError, match=r"field event must be an ObjectEvent"):
        OUTBOX_RECORD.encode(bad)


@pytest.mark.parametrize(
    ("codec_", "record", "pattern"),
    [
        (OBJECT_EVENT, ObjectEvent(**{**EVENT.to_dict(), "id": None}), "field id"),
        (OBJECT_EVENT, ObjectEvent(**{**EVENT.to_dict(), "size": "12"}), "field size"),
        (OBJECT_EVENT, ObjectEvent(**{**EVENT.to_dict(), "size": True}), "field size"),
        (OBJECT_EVENT, ObjectEvent(**{**EVENT.to_dict(), "key": "\udcff"}), "surrogates"),
        (WATERMARK, Watermark("p", "e", 2**31, 0), "does not fit the Avro int"),
        (WATERMARK, Watermark("p", "e", 0, 2**63), "too large"),
        (REJECTED_RECORD, RejectedRecord("text", "o", "r", "m", None), "bytes-like"),  # type: ignore[arg-type]
        (REJECTED_RECORD, RejectedRecord(b"", "o", "r", "m", -(2**31) - 1), "does not fit"),
    ],
)
def test_encode_rejects_invalid_values(codec_: AvroCodec[Any], record: Any, pattern: str) -> None:
    with pytest.raises(CodecError, match=rf"cannot encode io\.seqgate\.\w+: .*{pattern}"):
        codec_.encode(record)


# -- determinism ------------------------------------------------------------------------


def _rebuilt(record: Any) -> Any:
    """An equal record built from scratch, as a replay would (via JSON text)."""

    def encode(value: Any) -> Any:
        if isinstance(value, bytes):
            return {"$bytes": value.hex()}
        if isinstance(value, dict):
            return {k: encode(v) for k, v in value.items()}
        return value

    def decode(value: Any) -> Any:
        if isinstance(value, dict):
            if set(value) == {"$bytes"}:
                return bytes.fromhex(value["$bytes"])
            return {k: decode(v) for k, v in value.items()}
        return value

    rebuilt = type(record).from_dict(decode(json.loads(json.dumps(encode(record.to_dict())))))
    assert rebuilt == record
    return rebuilt


@pytest.mark.parametrize(("codec_", "record"), CASES, ids=CASE_IDS)
def test_encoding_is_deterministic(codec_: AvroCodec[Any], record: Any) -> None:
    first = codec_.encode(record)
    assert codec_.encode(record) == first
    assert codec_.encode(_rebuilt(record)) == first
    # decoding then re-encoding reproduces the bytes (outbox replay is byte-identical)
    assert codec_.encode(codec_.decode(first)) == first


def _all_encodings() -> str:
    return b"".join(c.encode(r) for c, r in CASES if r is not EVENT_LONG).hex()


def test_encoding_is_identical_across_processes() -> None:
    # Different hash seeds change set/dict iteration in a fresh interpreter; the
    # bytes must not depend on it (nor on anything else about the process).
    program = "import sys, tests.unit.test_codec as t; sys.stdout.write(t._all_encodings())"
    expected = _all_encodings()
    for seed in ("0", "1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO)}
        done = subprocess.run(
            [sys.executable, "-c", program],
            cwd=REPO,
            env=env,
            capture_output=True,
            check=True,
            text=True,
        )
        assert done.stdout == expected, f"PYTHONHASHSEED={seed}"


# -- interoperability with the avro package ------------------------------------------------


@pytest.mark.parametrize("filename", SCHEMA_FILES)
def test_fastavro_bytes_decode_with_avro(filename: str) -> None:
    schema = _avro_parse_all(SCHEMA_DIR)[filename]
    codec_, record = CODECS[filename], SAMPLES[filename]
    body = codec_.encode(record)[10:]
    reader = avro.io.DatumReader(schema, schema)
    value = reader.read(avro.io.BinaryDecoder(io.BytesIO(body)))
    assert value == record.to_dict()


@pytest.mark.parametrize("filename", SCHEMA_FILES)
def test_avro_bytes_decode_with_fastavro(filename: str) -> None:
    schema = _avro_parse_all(SCHEMA_DIR)[filename]
    codec_, record = CODECS[filename], SAMPLES[filename]
    buffer = io.BytesIO()
    avro.io.DatumWriter(schema).write(record.to_dict(), avro.io.BinaryEncoder(buffer))
    body = buffer.getvalue()
    assert codec_.decode_body(body) == record
    single_object = b"\xc3\x01" + schema.fingerprint("CRC-64-AVRO") + body
    assert codec_.decode(single_object) == record
    # both implementations produce the very same bytes
    assert single_object == codec_.encode(record)


@pytest.mark.parametrize(
    "event", [EVENT, EVENT_NULLS, EVENT_UNICODE], ids=["full", "nulls", "utf8"]
)
def test_object_event_interop_both_ways(event: ObjectEvent) -> None:
    schema = _avro_parse_all(SCHEMA_DIR)["object_event.avsc"]
    fast = OBJECT_EVENT.encode_body(event)
    value = avro.io.DatumReader(schema).read(avro.io.BinaryDecoder(io.BytesIO(fast)))
    assert isinstance(value, dict)
    assert ObjectEvent.from_dict(value) == event
    buffer = io.BytesIO()
    avro.io.DatumWriter(schema).write(event.to_dict(), avro.io.BinaryEncoder(buffer))
    assert OBJECT_EVENT.decode_body(buffer.getvalue()) == event
    assert buffer.getvalue() == fast


# -- Confluent framing ---------------------------------------------------------------------


def test_confluent_frame_round_trip() -> None:
    body = OBJECT_EVENT.encode_body(EVENT)
    framed = confluent_frame(258, body)
    assert framed[:5] == b"\x00\x00\x00\x01\x02"
    assert framed[5:] == body
    assert confluent_unframe(framed) == (258, body)
    schema_id, unframed = confluent_unframe(confluent_frame(2**31 - 1, b""))
    assert (schema_id, unframed) == (2**31 - 1, b"")
    assert OBJECT_EVENT.decode_body(confluent_unframe(framed)[1]) == EVENT


def test_confluent_frame_errors() -> None:
    with pytest.raises(ValueError, match="schema id"):
        confluent_frame(-1, b"")
    with pytest.raises(ValueError, match="schema id"):
        confluent_frame(2**31, b"")
    with pytest.raises(CodecError, match=r"truncated Confluent frame: .*at least 5 bytes, found 4"):
        confluent_unframe(b"\x00\x00\x00\x01")
    with pytest.raises(CodecError, match=r"expected 00, found c3 \(looks like Avro single-object"):
        confluent_unframe(OBJECT_EVENT.encode(EVENT))


# -- schema evolution on the read side -------------------------------------------------------


def _private_copy(codec_: AvroCodec[Any]) -> AvroCodec[Any]:
    """A codec like the module's, so add_writer_schema leaves the module's alone."""
    return AvroCodec(
        codec_._parsed,
        codec_._record_type,
        codec_._to_avro,
        codec_._from_avro,
        codec_._from_resolved,
    )


def _older_object_event() -> dict[str, Any]:
    """A plausible earlier ObjectEvent: no etag, no event_time."""
    schema = json.loads(load_schema_text("object_event.avsc"))
    schema["fields"] = [f for f in schema["fields"] if f["name"] not in ("etag", "event_time")]
    return dict(schema)


def test_older_writer_schema_is_resolved() -> None:
    old = _older_object_event()
    old_record = {k: v for k, v in EVENT.to_dict().items() if k not in ("etag", "event_time")}
    body = io.BytesIO()
    schemaless_writer(body, parse_schema(old, {}), old_record)
    old_fingerprint = crc64_avro(avro.schema.parse(json.dumps(old)).canonical_form)
    data = b"\xc3\x01" + old_fingerprint + body.getvalue()

    codec_ = _private_copy(OBJECT_EVENT)
    with pytest.raises(CodecError, match="unknown schema fingerprint"):
        codec_.decode(data)
    assert codec_.add_writer_schema(json.dumps(old)) == old_fingerprint
    decoded = codec_.decode(data)
    assert decoded == ObjectEvent(**{**EVENT.to_dict(), "etag": None, "event_time": None})
    assert codec_.decode(codec_.encode(EVENT)) == EVENT


def test_add_writer_schema_refuses_another_record() -> None:
    codec_ = _private_copy(WATERMARK)
    with pytest.raises(CodecError, match=r"must be the record io\.seqgate\.Watermark"):
        codec_.add_writer_schema(load_schema_text("object_event.avsc"))
    with pytest.raises(CodecError, match="invalid writer schema"):
        codec_.add_writer_schema(
            '{"type": "record", "name": "io.seqgate.Watermark",'
            ' "fields": [{"name": "position", "type": "no-such-type"}]}'
        )


def test_incompatible_writer_schema_fails_on_decode() -> None:
    # A writer without a field the reader needs (and that has no default).
    old = json.loads(load_schema_text("watermark.avsc"))
    old["fields"] = [f for f in old["fields"] if f["name"] != "event_id"]
    body = io.BytesIO()
    schemaless_writer(
        body, parse_schema(old, {}), {"position": "p", "input_partition": 1, "input_offset": 2}
    )
    codec_ = _private_copy(WATERMARK)
    fingerprint = codec_.add_writer_schema(json.dumps(old))
    with pytest.raises(CodecError, match=r"invalid io\.seqgate\.Watermark body: .*event_id"):
        codec_.decode(b"\xc3\x01" + fingerprint + body.getvalue())


# -- the schemas and the dataclasses agree --------------------------------------------------------

_PY_TO_AVRO = {
    "str": "string",
    "bytes": "bytes",
    "str | None": ["null", "string"],
    "bytes | None": ["null", "bytes"],
    "ObjectEvent": "io.seqgate.ObjectEvent",
}
_INT_TYPES = {"int": ("int", "long"), "int | None": (["null", "int"], ["null", "long"])}


@pytest.mark.parametrize(
    ("filename", "record_type"),
    [
        ("object_event.avsc", ObjectEvent),
        ("outbox_record.avsc", OutboxRecord),
        ("rejected_record.avsc", RejectedRecord),
        ("watermark.avsc", Watermark),
        ("seen_event.avsc", SeenEvent),
    ],
)
def test_schema_matches_dataclass(filename: str, record_type: type[Any]) -> None:
    schema = json.loads(load_schema_text(filename))
    assert schema["namespace"] == "io.seqgate"
    assert schema["name"] == record_type.__name__
    py_fields = fields(record_type)
    assert [f["name"] for f in schema["fields"]] == [f.name for f in py_fields]
    for avro_field, py_field in zip(schema["fields"], py_fields, strict=True):
        annotation = str(py_field.type)
        if annotation in _INT_TYPES:
            assert avro_field["type"] in _INT_TYPES[annotation], py_field.name
        else:
            assert avro_field["type"] == _PY_TO_AVRO[annotation], py_field.name
        if isinstance(avro_field["type"], list):  # optional: null first, default null
            assert avro_field["default"] is None, py_field.name
        assert avro_field.get("doc"), f"{filename}: field {py_field.name} has no doc"


def test_schemas_are_package_data() -> None:
    assert sorted(p.name for p in SCHEMA_DIR.glob("*.avsc")) == sorted(SCHEMA_FILES)
    for filename in SCHEMA_FILES:
        assert load_schema_text(filename) == (SCHEMA_DIR / filename).read_text(encoding="utf-8")
    pyproject = (REPO / "pyproject.toml").read_text()
    assert '"seqgate.schemas" = ["*.avsc"]' in pyproject


def test_documented_fingerprints_are_current() -> None:
    text = (REPO / "docs" / "contracts.md").read_text(encoding="utf-8")
    documented = dict(re.findall(r"^\| `(io\.seqgate\.\w+)` \| `([0-9a-f]{16})` \|$", text, re.M))
    assert documented == {c.schema_name: c.fingerprint.hex() for c in CODECS.values()}
