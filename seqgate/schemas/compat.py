"""Schema evolution check (docs/design.md §2.7).

Backward compatibility, as the Avro specification's schema resolution defines it:
a reader using the **new** schema can read every record written with the **old**
one. That is what the processor needs to replay its changelog and what outbox
consumers need to read history after an upgrade. The check is the `avro`
package's ``ReaderWriterCompatibilityChecker`` (the port of Java's
``SchemaCompatibility``); ``avro`` is only partly typed, so every use of it is
confined to this module behind typed functions.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import avro.compatibility
import avro.errors
import avro.name
import avro.schema

__all__ = ["check_compatible"]


def check_compatible(
    *,
    reader_json: str,
    writer_json: str,
    reader_references: Iterable[str] = (),
    writer_references: Iterable[str] = (),
) -> list[str]:
    """Can a reader with ``reader_json`` read data written with ``writer_json``?

    Backward compatibility of a new schema is ``reader_json=new, writer_json=old``; swap them
    for forward compatibility. Returns the incompatibility messages, sorted; an empty list
    means compatible. ``*_references`` are the JSON texts of schemas defining named types that
    the schema refers to by name (e.g. ``object_event.avsc`` for ``outbox_record.avsc``), in
    dependency order. Raises ``ValueError`` when a schema is not valid Avro.
    """
    reader = _parse("reader", reader_json, reader_references)
    writer = _parse("writer", writer_json, writer_references)
    checker: Any = avro.compatibility.ReaderWriterCompatibilityChecker()  # type: ignore[no-untyped-call]
    result: Any = checker.get_compatibility(reader, writer)
    if result.compatibility is avro.compatibility.SchemaCompatibilityType.compatible:
        return []
    # The checker merges the results of nested checks into sets, so a message
    # cannot be paired with its own location; report the kinds and locations found.
    kinds = ", ".join(sorted({str(kind.value) for kind in result.incompatibilities}))
    locations = sorted(str(location) for location in result.locations)
    if len(locations) > 1 and "/" in locations:  # "/" is only the merge root then
        locations.remove("/")
    where = ", ".join(locations)
    messages = sorted(str(message) for message in result.messages) or ["no detail"]
    return [f"{kinds or 'incompatible'}: {message} (at {where})" for message in messages]


def _parse(role: str, schema_json: str, references: Iterable[str]) -> Any:
    names = avro.name.Names()
    texts = [*references, schema_json]
    parsed: Any = None
    for index, text in enumerate(texts):
        what = f"{role} schema" if index == len(texts) - 1 else f"{role} reference #{index}"
        try:
            parsed = avro.schema.make_avsc_object(json.loads(text), names)
        except (ValueError, avro.errors.AvroException) as exc:
            raise ValueError(f"invalid {what}: {exc}") from exc
    return parsed
