"""The hand-written Avro path (seqgate.schemas.binary) agrees with fastavro, byte for byte.

Every comparison goes through fastavro directly (``schemaless_writer`` /
``schemaless_reader`` on the parsed schema), never through the codec under
test, so a bug in the fast path cannot hide behind itself.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

import pytest
from fastavro import schemaless_reader, schemaless_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.schemas import binary
from seqgate.schemas.avro_schemas import PARSED_SCHEMAS
from seqgate.schemas.codec import (
    OBJECT_EVENT,
    OUTBOX_RECORD,
    SEEN_EVENT,
    WATERMARK,
    encode_outbox,
    watermark_position,
)
from seqgate.schemas.errors import CodecError
from seqgate.schemas.records import ObjectEvent, OutboxRecord, SeenEvent, Watermark

texts = st.text(max_size=30)
optional_texts = st.none() | texts
longs = st.integers(min_value=-(2**63), max_value=2**63 - 1)
ints = st.integers(min_value=-(2**31), max_value=2**31 - 1)

events = st.builds(
    ObjectEvent,
    texts,
    texts,
    texts,
    texts,
    texts,
    texts,
    optional_texts,
    optional_texts,
    st.none() | longs,
    optional_texts,
    optional_texts,
    texts,
)
watermarks = st.builds(Watermark, texts, texts, ints, longs)
seen_events = st.builds(SeenEvent, texts, texts, longs, ints, longs)


def fastavro_body(filename: str, record: Any) -> bytes:
    out = BytesIO()
    schemaless_writer(out, PARSED_SCHEMAS[filename], record.to_dict())
    return out.getvalue()


def fastavro_read(filename: str, body: bytes) -> dict[str, Any]:
    value: dict[str, Any] = schemaless_reader(BytesIO(body), PARSED_SCHEMAS[filename], None)
    return value


CASES = [
    ("object_event.avsc", OBJECT_EVENT, events),
    ("watermark.avsc", WATERMARK, watermarks),
    ("seen_event.avsc", SEEN_EVENT, seen_events),
]


@pytest.mark.parametrize(("filename", "codec", "records"), CASES, ids=lambda c: str(c)[:20])
def test_fast_encoding_and_decoding_agree_with_fastavro(
    filename: str, codec: Any, records: st.SearchStrategy[Any]
) -> None:
    @settings(max_examples=300, deadline=None)
    @given(records)
    def check(record: Any) -> None:
        body = fastavro_body(filename, record)
        encoded = codec.encode(record)
        assert encoded == codec.header + body
        assert codec.decode(encoded) == record
        layout = binary.layout_of(PARSED_SCHEMAS[filename])
        assert layout is not None
        assert binary.reader_for(layout)(encoded, 10) == tuple(record.to_dict().values())

    check()


@settings(max_examples=300, deadline=None)
@given(events, optional_texts, ints, longs)
def test_the_outbox_copies_the_event_bytes_exactly(
    event: ObjectEvent, previous: str | None, partition: int, offset: int
) -> None:
    outbox = OutboxRecord(event, previous, partition, offset)
    expected = OUTBOX_RECORD.encode(outbox)  # fastavro: the outbox is not flat
    assert expected == OUTBOX_RECORD.header + fastavro_body("outbox_record.avsc", outbox)
    assert encode_outbox(outbox, OBJECT_EVENT.encode(event)) == expected


def test_an_event_of_an_older_writer_schema_is_encoded_not_copied() -> None:
    event = ObjectEvent("i", "s3", "b", "k", "created", "n", "01", None, None, None, None, "o")
    foreign = b"\xc3\x01" + b"\x00" * 8 + OBJECT_EVENT.encode_body(event)
    outbox = OutboxRecord(event, None, 0, 1)
    assert encode_outbox(outbox, foreign) == OUTBOX_RECORD.encode(outbox)


@settings(max_examples=300, deadline=None)
@given(watermarks)
def test_the_watermark_position_is_read_alone(watermark: Watermark) -> None:
    assert watermark_position(WATERMARK.encode(watermark)) == watermark.position


@settings(max_examples=1000, deadline=None)
@given(events, st.data())
def test_damaged_bytes_decode_as_fastavro_says_or_fail_as_it_does(
    event: ObjectEvent, data: st.DataObject
) -> None:
    """Truncate, extend or flip bytes of a valid body: the codec then returns
    exactly what fastavro returns, or raises CodecError where fastavro fails."""
    body = bytearray(OBJECT_EVENT.encode_body(event))
    how = data.draw(st.sampled_from(["flip", "truncate", "extend"]))
    if how == "flip" and body:
        index = data.draw(st.integers(0, len(body) - 1))
        body[index] = data.draw(st.integers(0, 255))
    elif how == "truncate":
        del body[data.draw(st.integers(0, len(body))) :]
    else:
        body += data.draw(st.binary(min_size=1, max_size=3))
    damaged = bytes(body)
    stream = BytesIO(damaged)
    try:
        expected: dict[str, Any] | None = schemaless_reader(
            stream, PARSED_SCHEMAS["object_event.avsc"], None
        )
        if stream.tell() != len(damaged):
            expected = None  # trailing bytes: the codec refuses them
    except Exception:
        expected = None
    if expected is None:
        with pytest.raises(CodecError):
            OBJECT_EVENT.decode(OBJECT_EVENT.header + damaged)
    else:
        assert OBJECT_EVENT.decode(OBJECT_EVENT.header + damaged).to_dict() == expected


@pytest.mark.parametrize(
    "record",
    [
        Watermark("p", "e", 2**31, 0),  # int out of range
        Watermark("p", 7, 0, 0),  # type: ignore[arg-type]
        Watermark("p", "e", 0, 2**63),  # long out of range
    ],
)
def test_values_the_fast_writer_refuses_get_fastavros_verdict(record: Watermark) -> None:
    layout = binary.layout_of(PARSED_SCHEMAS["watermark.avsc"])
    assert layout is not None
    with pytest.raises(binary.BinaryRefused):
        binary.writer_for(layout)(tuple(record.to_dict().values()))
    with pytest.raises(CodecError):
        WATERMARK.encode(record)


@settings(max_examples=500, deadline=None)
@given(longs | st.integers(-(2**22), 2**22))
def test_varints_match_fastavro(value: int) -> None:
    out = BytesIO()
    schemaless_writer(out, "long", value)
    assert binary.encode_long(value) == out.getvalue()
