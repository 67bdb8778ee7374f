"""Avro single-object encoding of one record type (docs/design.md §2.7).

As in the Avro specification: the two marker bytes ``C3 01``, the 8-byte
CRC-64-AVRO fingerprint of the writer schema's Parsing Canonical Form in
**little-endian** order, then the Avro binary body. :meth:`AvroCodec.encode`
and :meth:`AvroCodec.decode`; the raw body alone, for other framings
(:mod:`seqgate.schemas.confluent`), with :meth:`AvroCodec.encode_body` and
:meth:`AvroCodec.decode_body`.

Hot path: fastavro's ``schemaless_writer`` / ``schemaless_reader`` with schemas
parsed once at import and a fresh ``BytesIO`` per call (as fast as a reused one,
and thread-safe), behind the generated readers and writers of
:mod:`seqgate.schemas.binary` for the flat records.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from io import BytesIO
from typing import Any, Generic, TypeVar, cast

from fastavro import schemaless_reader, schemaless_writer
from fastavro.schema import parse_schema

from seqgate.schemas import binary
from seqgate.schemas.avro_schemas import schema_fingerprint
from seqgate.schemas.errors import BinaryRefused, CodecError
from seqgate.schemas.wire import CONFLUENT_MAGIC, SINGLE_OBJECT_HEADER_LEN, SINGLE_OBJECT_MAGIC

__all__ = ["AvroCodec"]

T = TypeVar("T")

# Fingerprint -> full name of every schema this module knows, to name the
# culprit when a decoder is handed a record of another type.
_KNOWN_FINGERPRINTS: dict[bytes, str] = {}


def _constructor(record_type: type[T]) -> Callable[[tuple[Any, ...]], T]:
    """``values -> record_type(*values)``. For a frozen, slotted dataclass without
    ``__post_init__`` (the flat records), the fields are set through their slots, as its
    ``__init__`` does but without a frozen ``__setattr__`` per field: the decode of every
    input event builds one (the same record, at half the cost)."""
    fields = dataclasses.fields(record_type) if dataclasses.is_dataclass(record_type) else ()
    plain = (
        bool(fields)
        and "__slots__" in vars(record_type)
        and not hasattr(record_type, "__post_init__")
        and all(field.init for field in fields)
    )
    if not plain:
        return lambda values: record_type(*values)
    names = [f"v{index}" for index in range(len(fields))]
    namespace: dict[str, Any] = {"new": object.__new__, "cls": record_type}
    body = []
    for name, field in zip(names, fields, strict=True):
        namespace[f"set_{name}"] = getattr(record_type, field.name).__set__
        body.append(f"    set_{name}(record, {name})")
    source = "\n".join(
        [
            "def make(values):",
            f"    ({', '.join(names)},) = values",
            "    record = new(cls)",
            *body,
            "    return record",
        ]
    )
    exec(
        compile(source, f"<seqgate.schemas.avro_codec make {record_type.__name__}>", "exec"),
        namespace,
    )
    return namespace["make"]  # type: ignore[no-any-return]


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
        "_make",
        "_parsed",
        "_record_type",
        "_to_avro",
        "_writers",
        "fingerprint",
        "schema_json",
        "schema_name",
    )

    schema_name: str
    fingerprint: bytes
    schema_json: str | None

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
        schema_json: str | None = None,
    ) -> None:
        """``parsed_schema`` is a fastavro-parsed record schema (named references
        resolvable through its named schemas). ``to_avro`` converts a record to
        fastavro's dict form; ``from_avro`` converts back a dict read with this
        very schema (fields in schema order, so it may be positional);
        ``from_resolved`` one read from another writer schema (fastavro then
        returns the fields in writer order, defaults last), so it must go by name.
        ``fast_read``/``fast_encode`` (flat records only, from :mod:`seqgate.schemas.binary`)
        read and write this very schema without fastavro; anything they refuse
        goes through fastavro. ``schema_json`` is the schema's self-contained JSON, what a
        schema registry is given (None: this codec is not written through one)."""
        self.schema_json = schema_json
        self._fast_read = fast_read
        self._fast_encode = fast_encode
        self._parsed = parsed_schema
        self._record_type = record_type
        self._make = _constructor(record_type)
        self._to_avro = to_avro
        self._from_avro = from_avro
        self._from_resolved = from_resolved
        self.schema_name = str(parsed_schema["name"])
        self.fingerprint = schema_fingerprint(parsed_schema)
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
        if self._fast_read is not None and data[:SINGLE_OBJECT_HEADER_LEN] == self._header:
            try:
                return self._make(self._fast_read(data, SINGLE_OBJECT_HEADER_LEN))
            except BinaryRefused:
                pass  # fastavro decides, and words the error
        if len(data) < SINGLE_OBJECT_HEADER_LEN:
            raise CodecError(
                f"truncated {self.schema_name}: expected at least {SINGLE_OBJECT_HEADER_LEN} bytes "
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
        found = data[2:SINGLE_OBJECT_HEADER_LEN]
        if found not in self._writers:
            other = _KNOWN_FINGERPRINTS.get(found)
            what = f"the fingerprint of {other}" if other else "unknown"
            raise CodecError(
                f"unknown schema fingerprint for {self.schema_name}: expected "
                f"{self.fingerprint.hex()}, found {found.hex()} ({what})"
            )
        return self.decode_written_with(found, data, SINGLE_OBJECT_HEADER_LEN)

    def decode_written_with(self, writer_fingerprint: bytes, data: bytes, start: int) -> T:
        """Decode the Avro body at ``data[start:]``, written with the schema of
        ``writer_fingerprint``: this codec's own or one added with :meth:`add_writer_schema`
        (another framing, e.g. the Confluent wire format, tells which)."""
        writer = self._writers.get(writer_fingerprint)
        if writer is None:
            raise CodecError(
                f"no writer schema of {self.schema_name} with fingerprint "
                f"{writer_fingerprint.hex()}"
            )
        if self._fast_read is not None and writer[1] is None:
            try:
                return self._make(self._fast_read(data, start))
            except BinaryRefused:
                pass  # fastavro decides, and words the error
        return self._read(data, start, writer[0], writer[1])

    @property
    def header(self) -> bytes:
        """The single-object header of this schema: ``C3 01`` + fingerprint."""
        return self._header

    def is_current(self, data: bytes) -> bool:
        """Whether ``data`` is a single-object encoding written with this very schema
        (so its body can be copied into another record's encoding as it is)."""
        return data[:SINGLE_OBJECT_HEADER_LEN] == self._header

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
            except (BinaryRefused, AttributeError, TypeError, ValueError):
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
        writer_fingerprint = schema_fingerprint(writer)
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
