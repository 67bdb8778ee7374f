"""The codecs of seqgate's records, one per Avro contract (docs/design.md §2.7).

Each is an :class:`~seqgate.schemas.avro_codec.AvroCodec` of one schema of
:mod:`seqgate.schemas.avro_schemas` and its dataclass in
:mod:`seqgate.schemas.records`; the fields of both agree, in order (checked at
import).

Determinism: the Avro binary encoding of these schemas (records, strings, longs,
ints, bytes and ``["null", T]`` unions; no maps, no floats) is a pure function of
the field values, so the same record always encodes to the same bytes. Outbox
replay relies on that (docs/design.md §2.3).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields
from operator import attrgetter
from typing import Any, Final, TypeVar

from seqgate.schemas import binary
from seqgate.schemas.avro_codec import AvroCodec
from seqgate.schemas.avro_schemas import PARSED_SCHEMAS, standalone_schema_json
from seqgate.schemas.errors import BinaryRefused
from seqgate.schemas.records import (
    DecisionRecord,
    ObjectEvent,
    OutboxRecord,
    RejectedRecord,
    SeenEvent,
    Watermark,
)
from seqgate.schemas.wire import SINGLE_OBJECT_HEADER_LEN

__all__ = [
    "DECISION_RECORD",
    "OBJECT_EVENT",
    "OUTBOX_RECORD",
    "REJECTED_RECORD",
    "SEEN_EVENT",
    "WATERMARK",
    "encode_outbox",
    "encode_watermark",
    "framed_outbox",
    "watermark_position",
]

T = TypeVar("T")

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_INT: Final = "int"
_OPTIONAL_INT: Final = ["null", "int"]


# -- record <-> fastavro dict conversions ----------------------------------------


def _int32(value: int, name: str) -> int:
    # fastavro writes any Python int into an Avro "int" without a range check;
    # Java readers would then fail, so refuse it here.
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"{value} does not fit the Avro int of field {name}")
    return value


def _fields_to_avro(parsed: Any) -> Callable[[Any], dict[str, Any]]:
    """record -> fastavro's dict of a flat schema: its fields, in schema order,
    each Avro ``int`` range-checked (an optional one only when set)."""
    names = tuple(field["name"] for field in parsed["fields"])
    ints = tuple(
        (field["name"], field["type"] == _OPTIONAL_INT)
        for field in parsed["fields"]
        if field["type"] in (_INT, _OPTIONAL_INT)
    )

    def to_avro(record: Any) -> dict[str, Any]:
        values = {name: getattr(record, name) for name in names}
        for name, optional in ints:
            if not (optional and values[name] is None):
                _int32(values[name], name)
        return values

    return to_avro


def _positional(record_type: Callable[..., T]) -> Callable[[dict[str, Any]], T]:
    """fastavro's dict read with the record's own schema -> the record: the fields
    come in schema order, which :func:`_check_fields` proves equal to the dataclass order."""

    def from_avro(values: dict[str, Any]) -> T:
        return record_type(*values.values())

    return from_avro


_event_to_avro: Final = _fields_to_avro(PARSED_SCHEMAS["object_event.avsc"])
_event_from_avro: Final = _positional(ObjectEvent)


def _outbox_to_avro(r: OutboxRecord) -> dict[str, Any]:
    if type(r.event) is not ObjectEvent:
        raise TypeError(f"field event must be an ObjectEvent, found {type(r.event).__name__}")
    return {
        "event": _event_to_avro(r.event),
        "previous_position": r.previous_position,
        "input_partition": _int32(r.input_partition, "input_partition"),
        "input_offset": r.input_offset,
    }


def _outbox_from_avro(d: dict[str, Any]) -> OutboxRecord:
    return OutboxRecord(
        _event_from_avro(d["event"]),
        d["previous_position"],
        d["input_partition"],
        d["input_offset"],
    )


# -- the codecs ------------------------------------------------------------------------


def _check_fields(parsed: Any, record_type: type[Any]) -> None:
    """The contract: schema fields and dataclass fields agree, in order."""
    in_schema = [f["name"] for f in parsed["fields"]]
    in_class = [f.name for f in fields(record_type)]
    if in_schema != in_class:
        raise RuntimeError(
            f"{parsed['name']} fields {in_schema} do not match "
            f"{record_type.__name__} fields {in_class}"
        )


def _codec(
    filename: str,
    record_type: type[T],
    from_resolved: Callable[[dict[str, Any]], T],
    to_avro: Callable[[T], dict[str, Any]] | None = None,
    from_avro: Callable[[dict[str, Any]], T] | None = None,
) -> AvroCodec[T]:
    """The codec of ``filename``; a flat record's conversions come from its schema."""
    parsed = PARSED_SCHEMAS[filename]
    _check_fields(parsed, record_type)
    to_avro = _fields_to_avro(parsed) if to_avro is None else to_avro
    from_avro = _positional(record_type) if from_avro is None else from_avro
    layout = binary.layout_of(parsed)
    schema_json = standalone_schema_json(filename)
    if layout is None:
        return AvroCodec(
            parsed, record_type, to_avro, from_avro, from_resolved, schema_json=schema_json
        )
    fields_of = attrgetter(*(f["name"] for f in parsed["fields"]))
    write = binary.writer_for(layout)

    def fast_encode(record: T) -> bytes:
        return write(fields_of(record))

    return AvroCodec(
        parsed,
        record_type,
        to_avro,
        from_avro,
        from_resolved,
        fast_read=binary.reader_for(layout),
        fast_encode=fast_encode,
        schema_json=schema_json,
    )


OBJECT_EVENT: Final = _codec(
    "object_event.avsc", ObjectEvent, ObjectEvent.from_dict, _event_to_avro, _event_from_avro
)
OUTBOX_RECORD: Final = _codec(
    "outbox_record.avsc", OutboxRecord, OutboxRecord.from_dict, _outbox_to_avro, _outbox_from_avro
)
REJECTED_RECORD: Final = _codec("rejected_record.avsc", RejectedRecord, RejectedRecord.from_dict)
WATERMARK: Final = _codec("watermark.avsc", Watermark, Watermark.from_dict)
SEEN_EVENT: Final = _codec("seen_event.avsc", SeenEvent, SeenEvent.from_dict)
DECISION_RECORD: Final = _codec("decision_record.avsc", DecisionRecord, DecisionRecord.from_dict)


# -- shortcuts of the worker's hot path ----------------------------------------------

# The outbox record's body is the event's body followed by these fields, so an
# event read with the current schema is copied, not encoded again.
_OUTBOX_TAIL_LAYOUT: Final = (binary.OPTIONAL_STRING, binary.INT, binary.LONG)
_write_outbox_tail: Final = binary.writer_for(_OUTBOX_TAIL_LAYOUT)
_OUTBOX_COPIES_EVENT: Final = (
    PARSED_SCHEMAS["outbox_record.avsc"]["fields"][0]["type"] == OBJECT_EVENT.schema_name
    and binary.layout_of({"fields": PARSED_SCHEMAS["outbox_record.avsc"]["fields"][1:]})
    == _OUTBOX_TAIL_LAYOUT
)


def encode_outbox(outbox: OutboxRecord, event_bytes: bytes) -> bytes:
    """``OUTBOX_RECORD.encode(outbox)``, where ``outbox.event`` was decoded from
    ``event_bytes`` (single-object encoding): the event's body is copied when it was
    written with the current schema (byte-identical for what fastavro writes; a replay of
    the same input yields the same bytes either way)."""
    current = OBJECT_EVENT.is_current(event_bytes)
    body = event_bytes[SINGLE_OBJECT_HEADER_LEN:] if current else None
    return framed_outbox(OUTBOX_RECORD.header, outbox, body)


def framed_outbox(header: bytes, outbox: OutboxRecord, event_body: bytes | None) -> bytes:
    """``header`` + the Avro body of ``outbox``; ``event_body`` is the body of
    ``outbox.event`` as read, when it was written with the current schema (then copied,
    not encoded again), else None."""
    if _OUTBOX_COPIES_EVENT and event_body is not None:
        tail = (outbox.previous_position, outbox.input_partition, outbox.input_offset)
        try:
            return header + event_body + _write_outbox_tail(tail)
        except BinaryRefused:
            pass  # fastavro decides, and words the error
    return header + OUTBOX_RECORD.encode_body(outbox)


_WATERMARK_LAYOUT: Final = binary.layout_of(PARSED_SCHEMAS["watermark.avsc"])
assert _WATERMARK_LAYOUT is not None, "the watermark is a flat record"
_write_watermark: Final = binary.writer_for(_WATERMARK_LAYOUT)


def encode_watermark(
    position: str, event_id: str, input_partition: int, input_offset: int
) -> bytes:
    """``WATERMARK.encode(Watermark(position, event_id, input_partition, input_offset))``
    without building the record: the same bytes (the same generated writer), one per
    accepted event of an ordered source."""
    try:
        return WATERMARK.header + _write_watermark(
            (position, event_id, input_partition, input_offset)
        )
    except BinaryRefused:
        return WATERMARK.encode(Watermark(position, event_id, input_partition, input_offset))


def watermark_position(data: bytes) -> str:
    """``WATERMARK.decode(data).position`` without decoding the other fields
    (the position is the first field; the state store holds only watermarks
    this process or its predecessors wrote)."""
    if WATERMARK.is_current(data):
        try:
            return binary.read_string(data, SINGLE_OBJECT_HEADER_LEN)
        except BinaryRefused:
            pass
    return WATERMARK.decode(data).position
