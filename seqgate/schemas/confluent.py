"""The Confluent wire format's framing: ``00`` + 4-byte big-endian schema id + Avro body.

Used by :mod:`seqgate.schemas.framing` when a schema registry is configured, around
:meth:`~seqgate.schemas.avro_codec.AvroCodec.encode_body`; the registry that maps
schemas to ids is :mod:`seqgate.runtime.schema_registry` (docs/design.md §2.7).
"""

from __future__ import annotations

import struct
from typing import Final

from seqgate.schemas.errors import CodecError
from seqgate.schemas.wire import CONFLUENT_MAGIC, SINGLE_OBJECT_MAGIC

__all__ = ["confluent_frame", "confluent_unframe"]

_CONFLUENT_HEADER: Final = struct.Struct(">BI")
_INT32_MAX: Final = 2**31 - 1


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
