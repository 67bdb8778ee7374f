"""Avro encoding of the contracts (docs/design.md §2.7).

Wire formats
------------
* **Single-object encoding** (the default, no registry needed), as in the Avro
  specification: the two marker bytes ``C3 01``, the 8-byte CRC-64-AVRO
  fingerprint of the writer schema's Parsing Canonical Form in
  **little-endian** order, then the Avro binary body. :meth:`AvroCodec.encode`
  and :meth:`AvroCodec.decode`.
* **Confluent wire format** (used when a schema-registry URL is configured):
  ``00`` + the 4-byte big-endian registry schema id + the Avro binary body.
  :func:`confluent_frame` / :func:`confluent_unframe` only do the framing, around
  :meth:`AvroCodec.encode_body` / :meth:`AvroCodec.decode_body`; the registry
  client that maps schemas to ids is not part of this module (it comes later).

Determinism: the Avro binary encoding of these schemas (records, strings, longs,
ints, bytes and ``["null", T]`` unions; no maps, no floats) is a pure function of
the field values, so the same record always encodes to the same bytes. Outbox
replay relies on that (docs/design.md §2.3).

Hot path: fastavro's ``schemaless_writer`` / ``schemaless_reader`` with schemas
parsed once at import, a fresh ``BytesIO`` per call (as fast as a reused one, and
thread-safe), and hand-written record <-> dict conversions.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable
from dataclasses import fields
from importlib.resources import files
from io import BytesIO
from operator import attrgetter
from typing import Any, Final, Generic, TypeVar, cast

from fastavro import schemaless_reader, schemaless_writer
from fastavro.schema import expand_schema, fingerprint, parse_schema, to_parsing_canonical_form

from seqgate.schemas import binary
from seqgate.schemas.records import (
    DecisionRecord,
    ObjectEvent,
    OutboxRecord,
    RejectedRecord,
    SeenEvent,
    Watermark,
)

__all__ = [
    "CONFLUENT_MAGIC",
    "DECISION_RECORD",
    "OBJECT_EVENT",
    "OUTBOX_RECORD",
    "REJECTED_RECORD",
    "SCHEMA_FILES",
    "SEEN_EVENT",
    "SINGLE_OBJECT_MAGIC",
    "WATERMARK",
    "AvroCodec",
    "CodecError",
    "confluent_frame",
    "confluent_unframe",
    "crc64_avro",
    "encode_outbox",
    "load_schema_text",
    "watermark_position",
]

T = TypeVar("T")

SINGLE_OBJECT_MAGIC: Final = b"\xc3\x01"
"""Marker of Avro single-object encoding, format version 1."""
_HEADER_LEN: Final = len(SINGLE_OBJECT_MAGIC) + 8

CONFLUENT_MAGIC: Final = 0
"""First byte of the Confluent wire format."""
_CONFLUENT_HEADER: Final = struct.Struct(">BI")
_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1

SCHEMA_FILES: Final = (
    "object_event.avsc",
    "outbox_record.avsc",
    "rejected_record.avsc",
    "watermark.avsc",
    "seen_event.avsc",
    "decision_record.avsc",
)
"""The package's schema files, in load order: a schema may refer by name to the
named types of the files before it (``outbox_record`` uses ``io.seqgate.ObjectEvent``)."""

_PACKAGE: Final = __name__.rpartition(".")[0]


class CodecError(Exception):
    """Bytes that are not a valid encoding of the expected record (or a record
    that cannot be encoded). The message says what was expected and what was found."""


def load_schema_text(filename: str) -> str:
    """The text of one of the package's ``.avsc`` files (package data)."""
    return files(_PACKAGE).joinpath(filename).read_text(encoding="utf-8")


def crc64_avro(parsing_canonical_form: str) -> bytes:
    """CRC-64-AVRO (Rabin) fingerprint of a Parsing Canonical Form, as the 8
    little-endian bytes that single-object encoding carries."""
    # fastavro returns the hex of the little-endian byte string (checked in tests
    # against the avro package and the spec's test vectors).
    return bytes.fromhex(fingerprint(parsing_canonical_form, "CRC-64-AVRO"))


def _fingerprint_of(parsed: Any) -> bytes:
    # Named references must be inlined first: the canonical form of a schema is
    # self-contained (the first occurrence of a named type carries its definition).
    return crc64_avro(to_parsing_canonical_form(expand_schema(parsed)))


# Fingerprint -> full name of every schema this module knows, to name the
# culprit when a decoder is handed a record of another type.
_KNOWN_FINGERPRINTS: dict[bytes, str] = {}


class AvroCodec(Generic[T]):
    """Encoder/decoder of one record type.

    ``schema_name`` is the full Avro name, ``fingerprint`` the 8-byte CRC-64-AVRO
    fingerprint (little-endian) of the schema's Parsing Canonical Form.
    """

    __slots__ = (
        "_fast_encode",
        "_fast_read",
        "_from_avro",
        "_from_resolved",
        "_header",
        "_parsed",
        "_record_type",
        "_to_avro",
        "_writers",
        "fingerprint",
        "schema_name",
    )

    schema_name: str
    fingerprint: bytes

    def __init__(
        self,
        parsed_schema: Any,
        record_type: type[T],
        to_avro: Callable[[T], dict[str, Any]],
        from_avro: Callable[[dict[str, Any]], T],
        from_resolved: Callable[[dict[str, Any]], T],
        *,
        fast_read: binary.Reader | None = None,
        fast_encode: Callable[[T], bytes] | None = None,
    ) -> None:
        """``parsed_schema`` is a fastavro-parsed record schema (named references
        resolvable through its named schemas). ``to_avro`` converts a record to
        fastavro's dict form; ``from_avro`` converts back a dict read with this
        very schema (fields in schema order, so it may be positional);
        ``from_resolved`` one read from another writer schema (fastavro then
        returns the fields in writer order, defaults last), so it must go by name.
        ``fast_read``/``fast_encode`` (flat records only, from :mod:`seqgate.schemas.binary`)
        read and write this very schema without fastavro; anything they refuse
        goes through fastavro."""
        self._fast_read = fast_read
        self._fast_encode = fast_encode
        self._parsed = parsed_schema
        self._record_type = record_type
        self._to_avro = to_avro
        self._from_avro = from_avro
        self._from_resolved = from_resolved
        self.schema_name = str(parsed_schema["name"])
        self.fingerprint = _fingerprint_of(parsed_schema)
        self._header = SINGLE_OBJECT_MAGIC + self.fingerprint
        # writer fingerprint -> (writer schema, reader schema or None when equal)
        self._writers: dict[bytes, tuple[Any, Any]] = {self.fingerprint: (parsed_schema, None)}
        _KNOWN_FINGERPRINTS[self.fingerprint] = self.schema_name

    def __repr__(self) -> str:
        return f"AvroCodec({self.schema_name}, fingerprint={self.fingerprint.hex()})"

    # -- single-object encoding --------------------------------------------

    def encode(self, record: T) -> bytes:
        """Single-object encoding: ``C3 01`` + fingerprint (8 bytes, LE) + body."""
        return self._header + self.encode_body(record)

    def decode(self, data: bytes) -> T:
        """Decode a single-object encoding; the fingerprint must be this codec's
        schema (or a writer schema registered with :meth:`add_writer_schema`)."""
        if self._fast_read is not None and data[:_HEADER_LEN] == self._header:
            try:
                return self._record_type(*self._fast_read(data, _HEADER_LEN))
            except binary.BinaryRefused:
                pass  # fastavro decides, and words the error
        if len(data) < _HEADER_LEN:
            raise CodecError(
                f"truncated {self.schema_name}: expected at least {_HEADER_LEN} bytes "
                f"(Avro single-object header), found {len(data)}"
            )
        if data[:2] != SINGLE_OBJECT_MAGIC:
            hint = ""
            if data[0] == CONFLUENT_MAGIC:
                hint = " (looks like the Confluent wire format: use confluent_unframe)"
            raise CodecError(
                f"bad magic for {self.schema_name}: expected c3 01 (Avro single-object "
                f"encoding), found {data[:2].hex(' ')}{hint}"
            )
        found = data[2:_HEADER_LEN]
        writer = self._writers.get(found)
        if writer is None:
            other = _KNOWN_FINGERPRINTS.get(found)
            what = f"the fingerprint of {other}" if other else "unknown"
            raise CodecError(
                f"unknown schema fingerprint for {self.schema_name}: expected "
                f"{self.fingerprint.hex()}, found {found.hex()} ({what})"
            )
        return self._read(data, _HEADER_LEN, writer[0], writer[1])

    @property
    def header(self) -> bytes:
        """The single-object header of this schema: ``C3 01`` + fingerprint."""
        return self._header

    def is_current(self, data: bytes) -> bool:
        """Whether ``data`` is a single-object encoding written with this very schema
        (so its body can be copied into another record's encoding as it is)."""
        return data[:_HEADER_LEN] == self._header

    # -- raw Avro binary, for other framings ---------------------------------

    def encode_body(self, record: T) -> bytes:
        """The Avro binary encoding of ``record`` (no header)."""
        if type(record) is not self._record_type:
            raise CodecError(
                f"cannot encode {self.schema_name}: expected a "
                f"{self._record_type.__name__}, found {type(record).__name__}"
            )
        if self._fast_encode is not None:
            try:
                return self._fast_encode(record)
            except (binary.BinaryRefused, AttributeError, TypeError, ValueError):
                pass  # fastavro decides, and words the error
        fo = BytesIO()
        try:
            schemaless_writer(fo, self._parsed, self._to_avro(record))
        except (TypeError, ValueError, OverflowError, AttributeError) as exc:
            raise CodecError(f"cannot encode {self.schema_name}: {exc}") from exc
        return fo.getvalue()

    def decode_body(self, body: bytes) -> T:
        """Decode a raw Avro binary body written with this codec's schema."""
        return self._read(body, 0, self._parsed, None)

    # -- evolution ------------------------------------------------------------

    def add_writer_schema(self, schema_json: str) -> bytes:
        """Accept single-object data written with an older (or newer) version of
        this schema; such data is resolved into the current schema on decode.

        ``schema_json`` must be self-contained (named types defined inline) and
        compatible per the Avro resolution rules. Returns its fingerprint.
        """
        try:
            writer = parse_schema(json.loads(schema_json), {})
        except Exception as exc:
            raise CodecError(f"invalid writer schema for {self.schema_name}: {exc}") from exc
        name = writer.get("name") if isinstance(writer, dict) else None
        if name != self.schema_name:
            raise CodecError(f"writer schema must be the record {self.schema_name}, found {name!r}")
        writer_fingerprint = _fingerprint_of(writer)
        if writer_fingerprint != self.fingerprint:
            self._writers[writer_fingerprint] = (writer, self._parsed)
        return writer_fingerprint

    # -- internals ---------------------------------------------------------------

    def _read(self, data: bytes, start: int, writer: Any, reader: Any) -> T:
        fo = BytesIO(data)
        fo.seek(start)
        try:
            value = cast(dict[str, Any], schemaless_reader(fo, writer, reader))
        except EOFError as exc:
            raise CodecError(
                f"truncated {self.schema_name}: the Avro body ended early ({len(data)} bytes "
                f"in total){': ' + str(exc) if str(exc) else ''}"
            ) from exc
        except Exception as exc:
            raise CodecError(
                f"invalid {self.schema_name} body: {type(exc).__name__}: {exc}"
            ) from exc
        end = fo.tell()
        if end != len(data):
            raise CodecError(
                f"invalid {self.schema_name}: expected {end} bytes, found {len(data)} "
                f"({len(data) - end} trailing bytes after the record)"
            )
        if reader is None:
            return self._from_avro(value)
        return self._from_resolved(value)


def confluent_frame(schema_id: int, body: bytes) -> bytes:
    """Confluent wire format: ``00`` + 4-byte big-endian schema id + Avro body.

    ``schema_id`` is the id a schema registry assigned to the writer schema; the
    registry client that obtains it is not part of this module.
    """
    if not 0 <= schema_id <= _INT32_MAX:
        raise ValueError(f"schema id must be in 0..{_INT32_MAX}, got {schema_id}")
    return _CONFLUENT_HEADER.pack(CONFLUENT_MAGIC, schema_id) + body


def confluent_unframe(data: bytes) -> tuple[int, bytes]:
    """Split a Confluent-framed message into ``(schema_id, body)``."""
    if len(data) < _CONFLUENT_HEADER.size:
        raise CodecError(
            f"truncated Confluent frame: expected at least {_CONFLUENT_HEADER.size} bytes, "
            f"found {len(data)}"
        )
    magic, schema_id = _CONFLUENT_HEADER.unpack_from(data)
    if magic != CONFLUENT_MAGIC:
        hint = ""
        if data[:2] == SINGLE_OBJECT_MAGIC:
            hint = " (looks like Avro single-object encoding: use AvroCodec.decode)"
        raise CodecError(
            f"bad magic for the Confluent wire format: expected 00, found {magic:02x}{hint}"
        )
    return int(schema_id), data[_CONFLUENT_HEADER.size :]


# -- record <-> fastavro dict conversions (hand-written: the hot path) ----------


def _int32(value: int, name: str) -> int:
    # fastavro writes any Python int into an Avro "int" without a range check;
    # Java readers would then fail, so refuse it here.
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"{value} does not fit the Avro int of field {name}")
    return value


def _event_to_avro(e: ObjectEvent) -> dict[str, Any]:
    return {
        "id": e.id,
        "source": e.source,
        "bucket": e.bucket,
        "key": e.key,
        "kind": e.kind,
        "event_name": e.event_name,
        "position": e.position,
        "version_id": e.version_id,
        "size": e.size,
        "etag": e.etag,
        "event_time": e.event_time,
        "origin": e.origin,
    }


def _event_from_avro(d: dict[str, Any]) -> ObjectEvent:
    # Read with this very schema, fastavro returns the fields in schema order,
    # which _check_fields proves equal to the dataclass order.
    return ObjectEvent(*d.values())


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


def _rejected_to_avro(r: RejectedRecord) -> dict[str, Any]:
    index = r.record_index
    return {
        "raw": r.raw,
        "origin": r.origin,
        "reason": r.reason,
        "message": r.message,
        "record_index": None if index is None else _int32(index, "record_index"),
    }


def _rejected_from_avro(d: dict[str, Any]) -> RejectedRecord:
    return RejectedRecord(*d.values())


def _watermark_to_avro(w: Watermark) -> dict[str, Any]:
    return {
        "position": w.position,
        "event_id": w.event_id,
        "input_partition": _int32(w.input_partition, "input_partition"),
        "input_offset": w.input_offset,
    }


def _watermark_from_avro(d: dict[str, Any]) -> Watermark:
    return Watermark(*d.values())


def _seen_to_avro(seen: SeenEvent) -> dict[str, Any]:
    return {
        "event_id": seen.event_id,
        "identity": seen.identity,
        "record_time": seen.record_time,
        "input_partition": _int32(seen.input_partition, "input_partition"),
        "input_offset": seen.input_offset,
    }


def _seen_from_avro(d: dict[str, Any]) -> SeenEvent:
    return SeenEvent(*d.values())


def _decision_to_avro(d: DecisionRecord) -> dict[str, Any]:
    return {
        "input_partition": _int32(d.input_partition, "input_partition"),
        "input_offset": d.input_offset,
        "identity": d.identity,
        "event_id": d.event_id,
        "position": d.position,
        "kind": d.kind,
        "outcome": d.outcome,
        "reason": d.reason,
        "previous_position": d.previous_position,
    }


def _decision_from_avro(d: dict[str, Any]) -> DecisionRecord:
    return DecisionRecord(*d.values())


def _check_fields(parsed: Any, record_type: type[Any]) -> None:
    """The contract: schema fields and dataclass fields agree, in order."""
    in_schema = [f["name"] for f in parsed["fields"]]
    in_class = [f.name for f in fields(record_type)]
    if in_schema != in_class:
        raise RuntimeError(
            f"{parsed['name']} fields {in_schema} do not match "
            f"{record_type.__name__} fields {in_class}"
        )


def _load() -> dict[str, Any]:
    named: dict[str, Any] = {}  # shared, so outbox_record resolves io.seqgate.ObjectEvent
    parsed: dict[str, Any] = {}
    for filename in SCHEMA_FILES:
        parsed[filename] = parse_schema(json.loads(load_schema_text(filename)), named)
    return parsed


_PARSED: Final = _load()


def _codec(
    filename: str,
    record_type: type[T],
    to_avro: Callable[[T], dict[str, Any]],
    from_avro: Callable[[dict[str, Any]], T],
    from_resolved: Callable[[dict[str, Any]], T],
) -> AvroCodec[T]:
    parsed = _PARSED[filename]
    _check_fields(parsed, record_type)
    layout = binary.layout_of(parsed)
    if layout is None:
        return AvroCodec(parsed, record_type, to_avro, from_avro, from_resolved)
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
    )


OBJECT_EVENT: Final = _codec(
    "object_event.avsc", ObjectEvent, _event_to_avro, _event_from_avro, ObjectEvent.from_dict
)
OUTBOX_RECORD: Final = _codec(
    "outbox_record.avsc", OutboxRecord, _outbox_to_avro, _outbox_from_avro, OutboxRecord.from_dict
)
REJECTED_RECORD: Final = _codec(
    "rejected_record.avsc",
    RejectedRecord,
    _rejected_to_avro,
    _rejected_from_avro,
    RejectedRecord.from_dict,
)
WATERMARK: Final = _codec(
    "watermark.avsc", Watermark, _watermark_to_avro, _watermark_from_avro, Watermark.from_dict
)
SEEN_EVENT: Final = _codec(
    "seen_event.avsc", SeenEvent, _seen_to_avro, _seen_from_avro, SeenEvent.from_dict
)
DECISION_RECORD: Final = _codec(
    "decision_record.avsc",
    DecisionRecord,
    _decision_to_avro,
    _decision_from_avro,
    DecisionRecord.from_dict,
)


# The outbox record's body is the event's body followed by these fields, so an
# event read with the current schema is copied, not encoded again.
_OUTBOX_TAIL_LAYOUT: Final = (binary.OPTIONAL_STRING, binary.INT, binary.LONG)
_write_outbox_tail: Final = binary.writer_for(_OUTBOX_TAIL_LAYOUT)
_OUTBOX_COPIES_EVENT: Final = (
    _PARSED["outbox_record.avsc"]["fields"][0]["type"] == OBJECT_EVENT.schema_name
    and binary.layout_of({"fields": _PARSED["outbox_record.avsc"]["fields"][1:]})
    == _OUTBOX_TAIL_LAYOUT
)


def encode_outbox(outbox: OutboxRecord, event_bytes: bytes) -> bytes:
    """``OUTBOX_RECORD.encode(outbox)``, where ``outbox.event`` was decoded from
    ``event_bytes``: the event's body is copied when it was written with the
    current schema (byte-identical for what fastavro writes; a replay of the same
    input yields the same bytes either way)."""
    if _OUTBOX_COPIES_EVENT and OBJECT_EVENT.is_current(event_bytes):
        tail = (outbox.previous_position, outbox.input_partition, outbox.input_offset)
        try:
            return OUTBOX_RECORD.header + event_bytes[_HEADER_LEN:] + _write_outbox_tail(tail)
        except binary.BinaryRefused:
            pass  # fastavro decides, and words the error
    return OUTBOX_RECORD.encode(outbox)


def watermark_position(data: bytes) -> str:
    """``WATERMARK.decode(data).position`` without decoding the other fields
    (the position is the first field; the state store holds only watermarks
    this process or its predecessors wrote)."""
    if WATERMARK.is_current(data):
        try:
            return binary.read_string(data, _HEADER_LEN)
        except binary.BinaryRefused:
            pass
    return WATERMARK.decode(data).position
