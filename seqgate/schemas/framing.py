"""How seqgate frames its records on Kafka: Avro single-object encoding, or the
Confluent wire format through a schema registry (docs/design.md §2.7, docs/consumers.md).

A :class:`Framing` writes one of the two and reads both, told apart by the first byte
(``C3`` single-object, ``00`` Confluent), so that a deployment switches writers to the
registry without a flag day: readers meet both in one topic for a while.

* Without a registry, records are written in single-object encoding, and a Confluent
  frame cannot be read (its schema id means nothing without the registry that assigned
  it): it is refused with a :class:`~seqgate.schemas.errors.CodecError` naming the fix.
* With a registry, a record written to topic T is ``00`` + the 4-byte big-endian id of
  its schema registered under T's subject + the same Avro body; a Confluent frame is read
  with the writer schema its id names (fetched once per id), resolved into the current one.

The registry itself (HTTP, authentication, subject names, compatibility) is
:mod:`seqgate.runtime.schema_registry`; this module only needs the two answers
of :class:`SchemaRegistry`, so it stays pure and testable.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Protocol, TypeVar

from seqgate.schemas.avro_codec import AvroCodec
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD, framed_outbox
from seqgate.schemas.confluent import confluent_frame
from seqgate.schemas.errors import CodecError
from seqgate.schemas.records import OutboxRecord
from seqgate.schemas.wire import CONFLUENT_MAGIC, SINGLE_OBJECT_HEADER_LEN, SINGLE_OBJECT_MAGIC

__all__ = ["CONFLUENT_HEADER_LEN", "SINGLE_OBJECT", "Framing", "SchemaRegistry"]

T = TypeVar("T")

CONFLUENT_HEADER_LEN: Final = 5
"""``00`` and the 4-byte big-endian schema id."""

_CONFLUENT_FIRST: Final = bytes([CONFLUENT_MAGIC])
_SINGLE_OBJECT_FIRST: Final = SINGLE_OBJECT_MAGIC[:1]
# Ids the registry did not know, remembered so that a stream of bad frames does not
# become a stream of registry requests; bounded, since the ids come from the input.
_MAX_UNKNOWN_IDS: Final = 1024


class SchemaRegistry(Protocol):
    """What seqgate asks of a schema registry."""

    def schema_id(self, topic: str, schema_name: str, schema_json: str) -> int:
        """The id of ``schema_json`` (the record ``schema_name``) under the subject of
        ``topic``'s values, registering it there when it is not yet."""
        ...

    def schema_json(self, schema_id: int) -> str:
        """The schema of ``schema_id``; raises LookupError when the registry has none."""
        ...


class Framing:
    """Writes records in one encoding, reads both (see the module's docstring)."""

    __slots__ = ("_fingerprints", "_ids", "_unknown", "registry")

    def __init__(self, registry: SchemaRegistry | None = None) -> None:
        self.registry = registry
        self._ids: dict[tuple[str, str], int] = {}  # (topic, schema name) -> schema id
        self._fingerprints: dict[tuple[str, int], bytes] = {}  # (schema name, id) -> writer
        self._unknown: dict[tuple[str, int], str] = {}  # (schema name, id) -> why not

    @property
    def name(self) -> str:
        """``single-object`` or ``confluent``: what this framing writes."""
        return "single-object" if self.registry is None else "confluent"

    # -- writing --------------------------------------------------------------------------

    def header(self, codec: AvroCodec[T], topic: str) -> bytes:
        """What precedes a record's Avro body on ``topic``: the single-object header, or
        ``00`` + the schema id (registered now, if it is not yet: call it at start-up,
        so that a registry problem stops the command before it reads anything)."""
        if self.registry is None:
            return codec.header
        key = (topic, codec.schema_name)
        schema_id = self._ids.get(key)
        if schema_id is None:
            if codec.schema_json is None:
                raise CodecError(f"{codec.schema_name} has no schema text to register")
            schema_id = self.registry.schema_id(topic, codec.schema_name, codec.schema_json)
            self._ids[key] = schema_id
            self._fingerprints[(codec.schema_name, schema_id)] = codec.fingerprint
        return confluent_frame(schema_id, b"")

    def writer(self, codec: AvroCodec[T], topic: str) -> Callable[[T], bytes]:
        """The encoder of ``codec``'s records for ``topic`` (see :meth:`header`)."""
        if self.registry is None:
            return codec.encode
        header = self.header(codec, topic)
        encode_body = codec.encode_body

        def encode(record: T) -> bytes:
            return header + encode_body(record)

        return encode

    def outbox_writer(self, topic: str) -> Callable[[OutboxRecord, bytes], bytes]:
        """The encoder of outbox records for ``topic``, given each with the bytes its event
        was read from: an event body written with the current schema is copied as it is
        (what :func:`~seqgate.schemas.codec.encode_outbox` does, in either framing)."""
        header = self.header(OUTBOX_RECORD, topic)
        current_body = self.current_body

        def encode(outbox: OutboxRecord, event_bytes: bytes) -> bytes:
            return framed_outbox(header, outbox, current_body(OBJECT_EVENT, event_bytes))

        return encode

    # -- reading --------------------------------------------------------------------------

    def decode(self, codec: AvroCodec[T], data: bytes) -> T:
        """``data`` in either encoding, decoded (a CodecError says why not)."""
        if data[:1] == _CONFLUENT_FIRST:
            if len(data) < CONFLUENT_HEADER_LEN:
                raise CodecError(
                    f"truncated {codec.schema_name} in the Confluent wire format: expected at"
                    f" least {CONFLUENT_HEADER_LEN} bytes, found {len(data)}"
                )
            schema_id = int.from_bytes(data[1:CONFLUENT_HEADER_LEN], "big")
            writer = self._writer(codec, schema_id)
            return codec.decode_written_with(writer, data, CONFLUENT_HEADER_LEN)
        return codec.decode(data)  # single-object, or its error naming both markers

    def current_body(self, codec: AvroCodec[T], data: bytes) -> bytes | None:
        """The Avro body of ``data`` when it was written with ``codec``'s current schema
        (in either encoding, as far as this framing knows its ids), else None."""
        if data[:1] == _SINGLE_OBJECT_FIRST:
            return data[SINGLE_OBJECT_HEADER_LEN:] if codec.is_current(data) else None
        if data[:1] == _CONFLUENT_FIRST and len(data) >= CONFLUENT_HEADER_LEN:
            schema_id = int.from_bytes(data[1:CONFLUENT_HEADER_LEN], "big")
            if self._fingerprints.get((codec.schema_name, schema_id)) == codec.fingerprint:
                return data[CONFLUENT_HEADER_LEN:]
        return None

    def current_headers(self, codec: AvroCodec[T]) -> list[bytes]:
        """The headers a record written with ``codec``'s current schema starts with, as far
        as this framing knows: the single-object header, and ``00`` + each schema id met
        so far whose writer schema is the current one."""
        headers = [codec.header]
        for (name, schema_id), fingerprint in self._fingerprints.items():
            if name == codec.schema_name and fingerprint == codec.fingerprint:
                headers.append(confluent_frame(schema_id, b""))
        return headers

    def _writer(self, codec: AvroCodec[T], schema_id: int) -> bytes:
        """The fingerprint of the writer schema of ``schema_id``, as ``codec`` knows it."""
        key = (codec.schema_name, schema_id)
        known = self._fingerprints.get(key)
        if known is not None:
            return known
        why = self._unknown.get(key)
        if why is None:
            why = self._learn(codec, schema_id)
        if why is not None:
            raise CodecError(why)
        return self._fingerprints[key]

    def _learn(self, codec: AvroCodec[T], schema_id: int) -> str | None:
        """Ask the registry for ``schema_id`` and remember the answer; the reason it cannot
        be read as ``codec``'s record, or None."""
        key = (codec.schema_name, schema_id)
        why: str | None = None
        if self.registry is None:
            why = (
                f"{codec.schema_name} in the Confluent wire format (schema id {schema_id}):"
                " reading it needs the schema registry that assigned the id"
                " (give --schema-registry-url)"
            )
        else:
            try:
                schema_json = self.registry.schema_json(schema_id)
            except LookupError:
                why = f"schema id {schema_id} is not in the schema registry"
            else:
                try:
                    self._fingerprints[key] = codec.add_writer_schema(schema_json)
                except CodecError as error:
                    why = f"schema id {schema_id}: {error}"
        if why is not None and len(self._unknown) < _MAX_UNKNOWN_IDS:
            self._unknown[key] = why
        return why


SINGLE_OBJECT: Final = Framing()
"""The framing without a schema registry: the default of every command."""
