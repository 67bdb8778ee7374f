"""The package's Avro schema files, parsed once, and their fingerprints (docs/design.md §2.7)."""

from __future__ import annotations

import json
from importlib.resources import files
from typing import Any, Final

from fastavro.schema import expand_schema, fingerprint, parse_schema, to_parsing_canonical_form

__all__ = [
    "PARSED_SCHEMAS",
    "SCHEMA_FILES",
    "crc64_avro",
    "load_schema_text",
    "schema_fingerprint",
]

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


def load_schema_text(filename: str) -> str:
    """The text of one of the package's ``.avsc`` files (package data)."""
    return files(_PACKAGE).joinpath(filename).read_text(encoding="utf-8")


def crc64_avro(parsing_canonical_form: str) -> bytes:
    """CRC-64-AVRO (Rabin) fingerprint of a Parsing Canonical Form, as the 8
    little-endian bytes that single-object encoding carries."""
    # fastavro returns the hex of the little-endian byte string (checked in tests
    # against the avro package and the spec's test vectors).
    return bytes.fromhex(fingerprint(parsing_canonical_form, "CRC-64-AVRO"))


def schema_fingerprint(parsed: Any) -> bytes:
    """The CRC-64-AVRO fingerprint of a fastavro-parsed schema."""
    # Named references must be inlined first: the canonical form of a schema is
    # self-contained (the first occurrence of a named type carries its definition).
    return crc64_avro(to_parsing_canonical_form(expand_schema(parsed)))


def _parse_all() -> dict[str, Any]:
    named: dict[str, Any] = {}  # shared, so outbox_record resolves io.seqgate.ObjectEvent
    parsed: dict[str, Any] = {}
    for filename in SCHEMA_FILES:
        parsed[filename] = parse_schema(json.loads(load_schema_text(filename)), named)
    return parsed


PARSED_SCHEMAS: Final = _parse_all()
"""File name -> its fastavro-parsed schema."""
