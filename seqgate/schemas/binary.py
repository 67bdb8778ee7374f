"""Hand-written Avro binary for the processor's hot path.

The worker decodes every input event and the watermark it is compared with,
and encodes a watermark and an outbox record per accepted event. Through
fastavro each call costs 2-6 µs, mostly in building a ``BytesIO``, a dict and
then the dataclass. The records are flat (strings, longs, ints and
``["null", T]`` unions), so for each one a reader and a writer are generated
once, at import, from the schema's field layout: straight-line code with no
per-field dispatch, in the manner of ``dataclasses`` generating ``__init__``.

This module is an accelerator, never an authority: :mod:`seqgate.schemas.avro_codec` calls
it first and falls back to fastavro whenever it refuses, so every error
message (and every decision about what is invalid) stays fastavro's. It
refuses whatever it is not certain about: a union branch other than 0/1, a
negative length, a value out of range, truncated or trailing bytes, bad UTF-8,
a value of another Python type. Property tests check that both produce the
same records and the same bytes (tests/unit/test_codec_binary.py).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from seqgate.schemas.errors import BinaryRefused

__all__ = [
    "INT",
    "LONG",
    "OPTIONAL_LONG",
    "OPTIONAL_STRING",
    "STRING",
    "encode_long",
    "layout_of",
    "read_string",
    "reader_for",
    "writer_for",
]

STRING: Final = 0
OPTIONAL_STRING: Final = 1
LONG: Final = 2
OPTIONAL_LONG: Final = 3
INT: Final = 4

_INT32_MIN: Final = -(2**31)
_INT32_MAX: Final = 2**31 - 1
_LONG_MIN: Final = -(2**63)
_LONG_MAX: Final = 2**63 - 1

_LAYOUTS: Final[dict[Any, int]] = {
    "string": STRING,
    "long": LONG,
    "int": INT,
    ("null", "string"): OPTIONAL_STRING,
    ("null", "long"): OPTIONAL_LONG,
}

Reader = Callable[[bytes, int], tuple[Any, ...]]
Writer = Callable[[tuple[Any, ...]], bytes]


def layout_of(parsed_schema: Any) -> tuple[int, ...] | None:
    """The field layout of a fastavro-parsed record schema; None if it is not flat."""
    layout = []
    for field in parsed_schema["fields"]:
        kind = field["type"]
        found = _LAYOUTS.get(tuple(kind) if isinstance(kind, list) else kind)
        if found is None:
            return None
        layout.append(found)
    return tuple(layout)


# ---- primitives ------------------------------------------------------------------


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Zigzag varint at ``pos``, any length up to 10 bytes: (value, next position)."""
    result = 0
    shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            break
        shift += 7
        if shift > 63:
            raise BinaryRefused("varint longer than 10 bytes")
    return (result >> 1) ^ -(result & 1), pos


def read_string(data: bytes, pos: int) -> str:
    """The string at ``pos`` (the rest of the record is not looked at)."""
    try:
        length, pos = _varint(data, pos)
        end = pos + length
        if length < 0 or end > len(data):
            raise BinaryRefused("string length")
        return data[pos:end].decode("utf-8")
    except (IndexError, UnicodeDecodeError) as error:
        raise BinaryRefused(str(error)) from error


# Single-byte varints: zigzag of -64..63.
_SMALL: Final = {n: bytes([(n << 1) ^ (n >> 63)]) for n in range(-64, 64)}


def encode_long(value: int) -> bytes:
    """Zigzag varint of an Avro int or long."""
    small = _SMALL.get(value)
    if small is not None:
        return small
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise BinaryRefused("long range")
    number = ((value << 1) ^ (value >> 63)) & 0xFFFF_FFFF_FFFF_FFFF
    # Offsets and sizes mostly fit 2-3 bytes: spelled out, without the loop.
    if number < 0x4000:
        return bytes(((number & 0x7F) | 0x80, number >> 7))
    if number < 0x20_0000:
        return bytes(((number & 0x7F) | 0x80, ((number >> 7) & 0x7F) | 0x80, number >> 14))
    out = bytearray()
    while number >= 0x80:
        out.append((number & 0x7F) | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


# ---- generated readers and writers ---------------------------------------------------

_NAMESPACE: Final[dict[str, Any]] = {
    "BinaryRefused": BinaryRefused,
    "_varint": _varint,
    "_SMALL": _SMALL,
    "encode_long": encode_long,
    "_INT32_MIN": _INT32_MIN,
    "_INT32_MAX": _INT32_MAX,
    "_LONG_MIN": _LONG_MIN,
    "_LONG_MAX": _LONG_MAX,
}


def _read_field(kind: int, name: str) -> list[str]:
    """Statements that read one field into the local ``name``."""
    lines: list[str] = []
    indent = ""
    if kind in (OPTIONAL_STRING, OPTIONAL_LONG):
        lines += [
            "b = data[pos]",
            "pos += 1",
            "if b == 0:",
            f"    {name} = None",
            "elif b != 2:",  # 2 is zigzag 1: the non-null branch
            "    raise BinaryRefused('union branch')",
            "else:",
        ]
        indent = "    "
    body = [
        "b = data[pos]",
        "if b < 0x80:",
        "    n = (b >> 1) ^ -(b & 1)",
        "    pos += 1",
        "else:",
        "    n, pos = _varint(data, pos)",
    ]
    if kind in (STRING, OPTIONAL_STRING):
        body += [
            "end = pos + n",
            "if n < 0 or end > size:",
            "    raise BinaryRefused('string length')",
            f"{name} = data[pos:end].decode('utf-8')",
            "pos = end",
        ]
    else:
        low, high = ("_INT32_MIN", "_INT32_MAX") if kind == INT else ("_LONG_MIN", "_LONG_MAX")
        body += [
            f"if not {low} <= n <= {high}:",
            "    raise BinaryRefused('out of range')",
            f"{name} = n",
        ]
    return lines + [indent + line for line in body]


def reader_for(layout: tuple[int, ...]) -> Reader:
    """A function ``(data, pos) -> field values`` reading a record of ``layout``
    that must end exactly at the end of ``data``; raises BinaryRefused."""
    names, body = _statements(layout, _read_field)
    source = "\n".join(
        [
            "def read(data, pos):",
            "    size = len(data)",
            "    try:",
            *("        " + line for line in body),
            "    except (IndexError, UnicodeDecodeError) as error:",
            "        raise BinaryRefused(str(error)) from error",
            "    if pos != size:",
            "        raise BinaryRefused('trailing bytes')",
            f"    return ({', '.join(names)},)",
        ]
    )
    return _compile(source, "read")  # type: ignore[no-any-return]


def _write_field(kind: int, name: str) -> list[str]:
    """Statements that append the encoding of the local ``name`` to ``out``."""
    lines: list[str] = []
    indent = ""
    if kind in (OPTIONAL_STRING, OPTIONAL_LONG):
        lines += [
            f"if {name} is None:",
            "    out.append(b'\\x00')",
            "else:",
            "    out.append(b'\\x02')",
        ]
        indent = "    "
    if kind in (STRING, OPTIONAL_STRING):
        body = [
            f"if type({name}) is not str:",
            "    raise BinaryRefused('not a str')",
            f"e = {name}.encode('utf-8')",
            "out.append(_SMALL.get(len(e)) or encode_long(len(e)))",
            "out.append(e)",
        ]
    else:
        low, high = ("_INT32_MIN", "_INT32_MAX") if kind == INT else ("_LONG_MIN", "_LONG_MAX")
        body = [
            f"if type({name}) is not int or not {low} <= {name} <= {high}:",
            "    raise BinaryRefused('not an int in range')",
            f"out.append(_SMALL.get({name}) or encode_long({name}))",
        ]
    return lines + [indent + line for line in body]


def writer_for(layout: tuple[int, ...]) -> Writer:
    """A function ``(field values) -> Avro binary body`` for a record of ``layout``;
    raises BinaryRefused for a value of another type or out of range."""
    names, body = _statements(layout, _write_field)
    source = "\n".join(
        [
            "def write(values):",
            f"    ({', '.join(names)},) = values",
            "    out = []",
            *("    " + line for line in body),
            "    return b''.join(out)",
        ]
    )
    return _compile(source, "write")  # type: ignore[no-any-return]


def _statements(
    layout: tuple[int, ...], field_statements: Callable[[int, str], list[str]]
) -> tuple[list[str], list[str]]:
    """One local per field (``v0``, ``v1``, ...) and the statements for all fields."""
    names = [f"v{index}" for index in range(len(layout))]
    body: list[str] = []
    for kind, name in zip(layout, names, strict=True):
        body += field_statements(kind, name)
    return names, body


def _compile(source: str, name: str) -> Any:
    namespace = dict(_NAMESPACE)
    exec(compile(source, f"<seqgate.schemas.binary {name}>", "exec"), namespace)
    return namespace[name]
