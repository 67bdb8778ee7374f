"""The markers that tell seqgate's two Avro wire formats apart (docs/design.md §2.7).

* Single-object encoding: ``C3 01``, the 8-byte fingerprint, the body
  (:mod:`seqgate.schemas.avro_codec`).
* Confluent wire format: ``00``, the 4-byte schema id, the body
  (:mod:`seqgate.schemas.confluent`).

Each decoder names the other format when it is handed it, so both markers live here.
"""

from __future__ import annotations

from typing import Final

from seqgate.schemas.errors import CodecError

__all__ = ["CONFLUENT_MAGIC", "SINGLE_OBJECT_HEADER_LEN", "SINGLE_OBJECT_MAGIC", "CodecError"]

SINGLE_OBJECT_MAGIC: Final = b"\xc3\x01"
"""Marker of Avro single-object encoding, format version 1."""

SINGLE_OBJECT_HEADER_LEN: Final = len(SINGLE_OBJECT_MAGIC) + 8
"""The marker and the 8-byte CRC-64-AVRO fingerprint of the writer schema."""

CONFLUENT_MAGIC: Final = 0
"""First byte of the Confluent wire format."""
