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
    "standalone_schema_json",
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


def standalone_schema_json(filename: str) -> str:
    """The JSON of one of the package's schema files with every named type it refers to
    defined inline, docs and defaults kept: what a schema registry is given, since a
    registry (and a consumer reading through it) knows no other file."""
    defined: dict[str, Any] = {}
    for name in SCHEMA_FILES:
        document = json.loads(load_schema_text(name))
        if name == filename:
            return json.dumps(_inlined(document, defined, set()), separators=(",", ":"))
        defined[f"{document.get('namespace', '')}.{document['name']}".lstrip(".")] = document
    raise KeyError(f"{filename} is not one of the package's schema files {SCHEMA_FILES}")


def _inlined(node: Any, defined: dict[str, Any], done: set[str]) -> Any:
    # Avro allows a named type to be defined once per schema: later mentions stay names.
    if isinstance(node, str):
        if node in defined and node not in done:
            done.add(node)
            return _inlined(defined[node], defined, done)
        return node
    if isinstance(node, list):
        return [_inlined(item, defined, done) for item in node]
    if isinstance(node, dict):
        return {
            key: _inlined(value, defined, done) if key in _TYPE_KEYS else value
            for key, value in node.items()
        }
    return node


_TYPE_KEYS: Final = frozenset({"type", "items", "values", "fields"})
