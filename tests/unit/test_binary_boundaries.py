"""The hand-written Avro varints (seqgate.schemas.binary) at every width boundary.

A zigzag varint changes width where the zigzag value crosses 2^(7k), that is at
the values ±2^(7k-1); the writer also has hand-unrolled 1-, 2- and 3-byte cases.
Property tests rarely draw those exact values, so each is spelled out here,
for every numeric field kind, the watermark and the outbox tail, and string
lengths. Every expected byte string comes from fastavro's schemaless writer and
every decoded value is checked through fastavro's reader too, never only
through the code under test. The fast readers and writers are also called
directly: through a codec, a value they wrongly refuse would silently go to
fastavro and hide the bug.
"""

from __future__ import annotations

from io import BytesIO
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from seqgate.schemas import binary
from seqgate.schemas.avro_schemas import PARSED_SCHEMAS
from seqgate.schemas.codec import (
    OBJECT_EVENT,
    OUTBOX_RECORD,
    WATERMARK,
    encode_outbox,
    encode_watermark,
    watermark_position,
)
from seqgate.schemas.errors import BinaryRefused
from seqgate.schemas.records import ObjectEvent, OutboxRecord, Watermark
from seqgate.schemas.wire import SINGLE_OBJECT_HEADER_LEN

LONG_MIN = -(2**63)
LONG_MAX = 2**63 - 1
INT_MIN = -(2**31)
INT_MAX = 2**31 - 1


def _boundaries() -> list[int]:
    values = {0, 1, -1, LONG_MIN, LONG_MAX, LONG_MIN + 1, LONG_MAX - 1}
    values |= {INT_MIN, INT_MAX, INT_MIN + 1, INT_MAX - 1}
    for k in range(1, 10):
        width = 2 ** (7 * k)  # where an unsigned varint gains a byte
        half = 2 ** (7 * k - 1)  # where a zigzag varint gains a byte
        values |= {width - 1, width, -(width - 1), -width}
        values |= {-half, -half - 1, half - 1, half}
    return sorted(values)


BOUNDARIES = _boundaries()
LONGS = [v for v in BOUNDARIES if LONG_MIN <= v <= LONG_MAX]
INTS = [v for v in BOUNDARIES if INT_MIN <= v <= INT_MAX]
BEYOND_LONG = [LONG_MIN - 1, LONG_MAX + 1, 2**64, -(2**64)]
BEYOND_INT = [INT_MIN - 1, INT_MAX + 1, 2**35, LONG_MIN, LONG_MAX]

KIND_SCHEMAS: dict[int, Any] = {
    binary.STRING: "string",
    binary.OPTIONAL_STRING: ["null", "string"],
    binary.LONG: "long",
    binary.OPTIONAL_LONG: ["null", "long"],
    binary.INT: "int",
}


def record_schema(*kinds: int) -> Any:
    fields = [{"name": f"f{i}", "type": KIND_SCHEMAS[kind]} for i, kind in enumerate(kinds)]
    return parse_schema({"type": "record", "name": "R", "fields": fields})


def fastavro_write(schema: Any, value: Any) -> bytes:
    out = BytesIO()
    schemaless_writer(out, schema, value)
    return out.getvalue()


def fastavro_read(schema: Any, data: bytes) -> Any:
    stream = BytesIO(data)
    value = schemaless_reader(stream, schema, None)
    assert stream.tell() == len(data), "fastavro left bytes unread"
    return value


def raw_varint(number: int) -> bytes:
    """An unsigned base-128 varint of any size, written independently of binary.py."""
    out = bytearray()
    while True:
        low = number & 0x7F
        number >>= 7
        if number:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def numeric_cases() -> list[tuple[int, int]]:
    cases = [(kind, v) for kind in (binary.LONG, binary.OPTIONAL_LONG) for v in LONGS]
    return cases + [(binary.INT, v) for v in INTS]


def case_id(value: Any) -> str:
    return {binary.LONG: "long", binary.OPTIONAL_LONG: "optional_long", binary.INT: "int"}.get(
        value, str(value)
    )


# ---- one numeric field of each kind ---------------------------------------------------------


@pytest.mark.parametrize(("kind", "value"), numeric_cases(), ids=case_id)
def test_a_numeric_field_at_a_boundary_is_fastavros_bytes_and_reads_back(
    kind: int, value: int
) -> None:
    schema = record_schema(kind)
    expected = fastavro_write(schema, {"f0": value})
    assert binary.writer_for((kind,))((value,)) == expected
    assert binary.reader_for((kind,))(expected, 0) == (value,)
    assert fastavro_read(schema, expected) == {"f0": value}


@pytest.mark.parametrize("value", LONGS, ids=str)
def test_encode_long_at_a_boundary_is_fastavros_long(value: int) -> None:
    expected = fastavro_write("long", value)
    assert binary.encode_long(value) == expected
    assert fastavro_read("long", binary.encode_long(value)) == value


def test_the_widths_change_exactly_at_the_zigzag_boundaries() -> None:
    for k in range(1, 10):
        half = 2 ** (7 * k - 1)
        for last_of_width in (half - 1, -half):
            assert len(binary.encode_long(last_of_width)) == k, last_of_width
        for first_of_next in (half, -half - 1):
            if first_of_next <= LONG_MAX:
                assert len(binary.encode_long(first_of_next)) == k + 1, first_of_next
    assert len(binary.encode_long(LONG_MAX)) == len(binary.encode_long(LONG_MIN)) == 10


@pytest.mark.parametrize("value", INTS, ids=str)
def test_an_optional_long_beside_strings_and_ints_at_a_boundary(value: int) -> None:
    kinds = (binary.OPTIONAL_STRING, binary.INT, binary.OPTIONAL_LONG, binary.STRING)
    schema = record_schema(*kinds)
    values = ("p", value, value, "s")
    expected = fastavro_write(schema, dict(zip(("f0", "f1", "f2", "f3"), values, strict=True)))
    assert binary.writer_for(kinds)(values) == expected
    assert binary.reader_for(kinds)(expected, 0) == values


def test_null_optionals_are_one_zero_byte_each() -> None:
    kinds = (binary.OPTIONAL_LONG, binary.OPTIONAL_STRING)
    expected = fastavro_write(record_schema(*kinds), {"f0": None, "f1": None})
    assert expected == b"\x00\x00"
    assert binary.writer_for(kinds)((None, None)) == expected
    assert binary.reader_for(kinds)(expected, 0) == (None, None)


# ---- values beyond the field's range ----------------------------------------------------------


@pytest.mark.parametrize("value", BEYOND_LONG, ids=str)
def test_a_long_beyond_64_bits_is_refused_by_both_writers(value: int) -> None:
    with pytest.raises(BinaryRefused):
        binary.encode_long(value)
    for kind in (binary.LONG, binary.OPTIONAL_LONG):
        with pytest.raises(BinaryRefused):
            binary.writer_for((kind,))((value,))


@pytest.mark.parametrize("value", BEYOND_INT, ids=str)
def test_an_int_beyond_32_bits_is_refused_by_the_writer_and_the_reader(value: int) -> None:
    with pytest.raises(BinaryRefused):
        binary.writer_for((binary.INT,))((value,))
    as_long = fastavro_write("long", value)
    with pytest.raises(BinaryRefused):
        binary.reader_for((binary.INT,))(as_long, 0)


@pytest.mark.parametrize("value", [LONG_MIN - 1, LONG_MAX + 1], ids=str)
def test_a_ten_byte_varint_beyond_64_bits_is_refused_by_the_reader(value: int) -> None:
    zigzag = 2 * value if value >= 0 else -2 * value - 1
    data = raw_varint(zigzag)
    assert len(data) == 10
    for kind in (binary.LONG, binary.OPTIONAL_LONG):
        prefix = b"\x02" if kind == binary.OPTIONAL_LONG else b""
        with pytest.raises(BinaryRefused):
            binary.reader_for((kind,))(prefix + data, 0)


@pytest.mark.parametrize(
    "data",
    [b"\x80" * 10 + b"\x00", raw_varint(2**70), b"\xff" * 11 + b"\x01"],
    ids=["zero-in-11-bytes", "2^70", "12-bytes"],
)
def test_a_varint_longer_than_10_bytes_is_refused(data: bytes) -> None:
    with pytest.raises(BinaryRefused):
        binary.reader_for((binary.LONG,))(data, 0)
    with pytest.raises(BinaryRefused):
        binary.read_string(data + b"x", 0)


@pytest.mark.parametrize("branch", [b"\x01", b"\x03", b"\x04"], ids=lambda b: b.hex())
def test_a_union_branch_other_than_null_or_the_type_is_refused(branch: bytes) -> None:
    for kind in (binary.OPTIONAL_LONG, binary.OPTIONAL_STRING):
        with pytest.raises(BinaryRefused):
            binary.reader_for((kind,))(branch + b"\x00", 0)


def test_trailing_and_missing_bytes_are_refused() -> None:
    reader = binary.reader_for((binary.LONG,))
    encoded = fastavro_write("long", 8192)
    with pytest.raises(BinaryRefused):
        reader(encoded + b"\x00", 0)
    with pytest.raises(BinaryRefused):
        reader(encoded[:-1], 0)


# ---- string lengths ----------------------------------------------------------------------------

# The length prefix is a zigzag long: 63/64 cross from one byte to two (and the
# _SMALL table), 8191/8192 from two to three, 2^20 - 1 / 2^20 from three to four.
STRING_LENGTHS = [0, 1, 63, 64, 65, 8191, 8192, 2**20 - 1, 2**20]


@pytest.mark.parametrize("length", STRING_LENGTHS, ids=str)
def test_a_string_whose_length_is_at_a_boundary(length: int) -> None:
    text = "x" * length
    for kind in (binary.STRING, binary.OPTIONAL_STRING):
        schema = record_schema(kind)
        expected = fastavro_write(schema, {"f0": text})
        assert binary.writer_for((kind,))((text,)) == expected
        assert binary.reader_for((kind,))(expected, 0) == (text,)
        assert fastavro_read(schema, expected) == {"f0": text}
    alone = fastavro_write("string", text)
    assert binary.read_string(alone, 0) == text


def test_a_string_length_past_the_end_is_refused() -> None:
    data = fastavro_write("string", "abc")
    for reader in (binary.reader_for((binary.STRING,)), binary.read_string):
        with pytest.raises(BinaryRefused):
            reader(data[:-1], 0)
    negative = raw_varint(1) + b"abc"  # zigzag 1 is the length -1
    with pytest.raises(BinaryRefused):
        binary.read_string(negative, 0)
    with pytest.raises(BinaryRefused):
        binary.reader_for((binary.STRING,))(negative, 0)


def test_a_negative_string_length_is_refused_even_when_the_rest_would_parse() -> None:
    # "\x08AB", then the length -4 (zigzag 7) stepping back into it, from where
    # a 4-byte string ends exactly at the end: only the sign check refuses this.
    data = bytes([0x06, 0x08, 0x41, 0x42, 0x07, 0x43])
    with pytest.raises(BinaryRefused):
        binary.reader_for((binary.STRING, binary.STRING, binary.STRING))(data, 0)


# ---- the watermark: encode_watermark, the codec and watermark_position -------------------------

WATERMARK_LAYOUT = binary.layout_of(PARSED_SCHEMAS["watermark.avsc"])
WATERMARK_CASES = [(0, offset) for offset in LONGS] + [(p, 0) for p in INTS]


def watermark_body(watermark: Watermark) -> bytes:
    return fastavro_write(PARSED_SCHEMAS["watermark.avsc"], watermark.to_dict())


@pytest.mark.parametrize(("partition", "offset"), WATERMARK_CASES, ids=str)
def test_a_watermark_at_a_boundary_is_fastavros_bytes_and_decodes(
    partition: int, offset: int
) -> None:
    watermark = Watermark("0000000062F1A9C1D3", "event-1", partition, offset)
    body = watermark_body(watermark)
    values = ("0000000062F1A9C1D3", "event-1", partition, offset)
    assert WATERMARK_LAYOUT is not None
    assert binary.writer_for(WATERMARK_LAYOUT)(values) == body
    encoded = encode_watermark(*values)
    assert encoded == WATERMARK.header + body
    assert WATERMARK.encode(watermark) == encoded
    assert binary.reader_for(WATERMARK_LAYOUT)(encoded, SINGLE_OBJECT_HEADER_LEN) == values
    assert WATERMARK.decode(encoded) == watermark
    assert fastavro_read(PARSED_SCHEMAS["watermark.avsc"], body) == watermark.to_dict()
    assert watermark_position(encoded) == watermark.position


def test_a_watermark_at_input_offset_8192_reads_back() -> None:
    """The case that once would have failed: zigzag(8192) is exactly 0x4000."""
    encoded = encode_watermark("p", "e", 0, 8192)
    assert encoded[-3:] == b"\x80\x80\x01"
    assert WATERMARK.decode(encoded) == Watermark("p", "e", 0, 8192)


@pytest.mark.parametrize("length", STRING_LENGTHS, ids=str)
def test_a_watermark_position_whose_length_is_at_a_boundary(length: int) -> None:
    position = "7" * length
    watermark = Watermark(position, "e", 1, 2)
    encoded = encode_watermark(position, "e", 1, 2)
    assert encoded == WATERMARK.header + watermark_body(watermark)
    assert watermark_position(encoded) == position
    assert WATERMARK.decode(encoded) == watermark


# ---- the outbox tail, written after the copied event body --------------------------------------

EVENT = ObjectEvent("s3://b/k", "s3", "b", "k", "created", "n", "01", None, 5, None, None, "origin")


@pytest.mark.parametrize(("partition", "offset"), WATERMARK_CASES, ids=str)
def test_the_outbox_tail_at_a_boundary_is_fastavros_bytes(partition: int, offset: int) -> None:
    outbox = OutboxRecord(EVENT, "00", partition, offset)
    expected = OUTBOX_RECORD.header + fastavro_write(
        PARSED_SCHEMAS["outbox_record.avsc"], outbox.to_dict()
    )
    assert encode_outbox(outbox, OBJECT_EVENT.encode(EVENT)) == expected
    assert OUTBOX_RECORD.decode(expected) == outbox
