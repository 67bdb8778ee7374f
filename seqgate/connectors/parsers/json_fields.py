"""Typed access to members of decoded JSON documents, for the notification parsers.

Each accessor reads one member of a JSON object and returns it with its
Python type, or raises :class:`~seqgate.schemas.errors.RecordRejected` with a
message that names the member by its JSON path (``Records[0].s3.object.size``,
``detail.bucket.name``) and shows the offending value (:func:`show`); the
parser turns the exception into a rejection.

Conventions shared by the accessors:

* ``path`` is the JSON path of the object that holds the member ("" for the
  document itself), ``name`` the member's name; messages name the member
  :func:`member_path` ``(path, name)``;
* absent and ``null`` are the same: ``missing_field`` for a required member,
  None for an optional one;
* a value of another JSON type is ``invalid_field`` (``invalid_sequencer`` for
  the sequencer).

:func:`nesting_exceeds` bounds the nesting of JSON text before it is decoded
(:data:`MAX_JSON_DEPTH`), for every decoder of the bridge.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Container
from itertools import accumulate
from typing import Final, TypeVar

from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.limits import MAX_SIZE
from seqgate.schemas.reasons import RejectReason

__all__ = [
    "MAX_JSON_DEPTH",
    "PREVIEW_LIMIT",
    "brackets_balanced",
    "check_constant",
    "check_text",
    "index_path",
    "is_text",
    "member_path",
    "nesting_exceeds",
    "notification_object",
    "object_member",
    "optional_size",
    "optional_string",
    "required_member",
    "required_string",
    "sequencer_member",
    "show",
    "supported_name",
    "too_deep_message",
]

PREVIEW_LIMIT: Final = 80
"""How many characters of a string :func:`show` prints."""

MAX_JSON_DEPTH: Final = 64
"""How deeply arrays and objects may nest in one JSON text (the top-level value is 1).

Real notifications nest fewer than 10 levels (an S3 record is 5: ``Records``,
the record, ``s3``, ``object``, with user metadata or Box's path collection a
few more), and envelopes do not add up: an SNS, SQS or Lambda envelope carries
its inner document as a JSON *string*, decoded (and bounded) on its own. 64
leaves room for any provider's metadata while staying far below Python's
recursion limit (1,000), which ``json.loads``, ``json.dumps`` and hashing a
record for its id would otherwise hit."""

_T = TypeVar("_T")
_BIG_NUMBER: Final = 10**30
_HEX_DIGITS: Final = re.compile(r"[0-9A-Fa-f]+")
_HEX_EXPECTED: Final = "expected a non-empty string of hex digits"


# --------------------------------------------------------------------------- paths, values


def member_path(path: str, name: str) -> str:
    """The JSON path of member ``name`` of the value at ``path`` ("" is the root)."""
    return f"{path}.{name}" if path else name


def index_path(path: str, index: int) -> str:
    """The JSON path of element ``index`` of the array at ``path``."""
    return f"{path}[{index}]"


def show(value: object) -> str:
    """A short, printable rendering of a JSON value for messages.

    Strings are shown as JSON strings cut to :data:`PREVIEW_LIMIT` characters,
    numbers and booleans with their value (a huge integer by its size),
    arrays, objects and null by their type.
    """
    if isinstance(value, str):
        shown = json.dumps(value[:PREVIEW_LIMIT], ensure_ascii=False)
        # A lone surrogate (legal in JSON text) cannot be written as UTF-8.
        shown = shown.encode("utf-8", "backslashreplace").decode("utf-8")
        if len(value) > PREVIEW_LIMIT:
            shown += f"... ({len(value)} characters)"
        return shown
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {json.dumps(value)}"
    if isinstance(value, int) and abs(value) >= _BIG_NUMBER:
        return f"number of {value.bit_length()} bits"
    if isinstance(value, int | float):
        return f"number {json.dumps(value)}"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def is_text(value: str) -> bool:
    """Whether ``value`` is encodable as UTF-8 (JSON text may hold lone surrogates)."""
    if value.isascii():  # O(1) in CPython: a flag of the string
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_text(value: str, field: str) -> None:
    """Refuse (``invalid_field``) a string of member ``field`` that holds a lone surrogate."""
    if not is_text(value):
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{field} {show(value)} contains a lone surrogate: expected Unicode text",
        )


# --------------------------------------------------------------------------- nesting depth

# Brackets of both kinds as one: depth does not depend on the kind (matching
# them is the decoder's business), and one kind makes a level one replace.
_OPEN, _CLOSE, _LEAF = b"[", b"]", b"[]"
_AS_BRACKETS: Final = bytes.maketrans(b"{}", _OPEN + _CLOSE)
_NOT_BRACKETS: Final = bytes(range(256)).translate(None, b"[]{}")
_DEPTH_STEP: Final = {ord(_OPEN): 1, ord(_CLOSE): -1}


def _structure(data: bytes) -> bytes:
    """The brackets of JSON text outside its strings, in order, all written ``[`` / ``]``.

    Escaped backslashes go first, so every ``\\"`` left is an escaped quote;
    without either, the quotes delimit strings and every other piece is outside
    one. Byte-wise is exact for UTF-8 text: no byte of a multi-byte character
    is ASCII.
    """
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    outside = b"".join(unescaped.split(b'"')[::2])
    return outside.translate(_AS_BRACKETS, _NOT_BRACKETS)


def _deeper_than(brackets: bytes, limit: int) -> bool:
    """Whether the running depth of ``brackets`` ever exceeds ``limit``."""
    depths = accumulate(map(_DEPTH_STEP.__getitem__, brackets))
    return next(filter(limit.__lt__, depths), None) is not None


def nesting_exceeds(text: str | bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether the JSON ``text`` nests arrays and objects more than ``limit`` deep.

    A scan, not a parse, to run before ``json.loads`` (which recurses once per
    level). Brackets inside strings do not count; for text that is not valid
    JSON the answer bounds what a parser would recurse into.

    Cost: a document with at most ``limit`` brackets, two counts. Others, one
    C-level pass over the brackets per level of the document (each removes the
    innermost pairs), stopping as soon as ``limit + 1`` opening brackets in a
    row show: a shallow document takes a few passes, a deep chain one.
    """
    if isinstance(text, str):
        if text.count("[") + text.count("{") <= limit:
            return False
        data = text.encode("utf-8", "surrogatepass")
    else:
        if text.count(b"[") + text.count(b"{") <= limit:
            return False
        data = text
    brackets = remaining = _structure(data)
    too_deep = _OPEN * (limit + 1)
    for _ in range(limit + 1):
        if not remaining:
            return False
        if too_deep in remaining:
            return True
        shorter = remaining.replace(_LEAF, b"")
        if len(shorter) == len(remaining):
            break  # unbalanced: not JSON
        remaining = shorter
    return _deeper_than(brackets, limit)


def brackets_balanced(text: bytes) -> bool:
    """Whether ``text`` closes every array and object it opens (strings aside), as
    every complete JSON value does; for telling JSON Lines from one document
    that is too deep to decode."""
    brackets = _structure(text)
    return 2 * brackets.count(_OPEN) == len(brackets)


def too_deep_message(subject: str, limit: int = MAX_JSON_DEPTH) -> str:
    """The message of a ``nesting_too_deep`` rejection of the JSON text ``subject`` names."""
    return (
        f"{subject} nests arrays and objects more than {limit} levels deep: seqgate decodes "
        f"at most {limit} (real notifications nest fewer than 10)"
    )


# --------------------------------------------------------------------------- accessors


def required_member(
    parent: dict[object, object],
    name: str,
    path: str,
    json_type: type[_T],
    *,
    missing: str,
    invalid: str,
) -> _T:
    """The member ``parent[name]``, which must be present and a ``json_type`` (dict, list, str).

    Absent or null is ``missing_field`` (``<field> is missing: <missing>``);
    another type is ``invalid_field`` (``<field> must be <invalid>, got <value>``).
    """
    value = parent.get(name)
    if isinstance(value, json_type):
        return value
    field = member_path(path, name)
    if value is None:
        raise RecordRejected(RejectReason.MISSING_FIELD, f"{field} is missing: {missing}")
    raise RecordRejected(
        RejectReason.INVALID_FIELD, f"{field} must be {invalid}, got {show(value)}"
    )


def object_member(
    parent: dict[object, object], name: str, path: str, *, expected: str = "a JSON object"
) -> dict[object, object]:
    """The required JSON object ``parent[name]``.

    ``expected`` describes it in the message for an absent member.
    """
    return required_member(
        parent, name, path, dict, missing=f"expected {expected}", invalid="a JSON object"
    )


def check_constant(
    parent: dict[object, object],
    name: str,
    path: str,
    value: str,
    *,
    reason: RejectReason,
    expected: str,
) -> None:
    """Refuse (``reason``) unless ``parent[name]`` is exactly ``value``.

    The message is ``<field> is missing: <expected>`` or ``<field> is <shown
    value>: <expected>``.
    """
    found = parent.get(name)
    if found == value:
        return
    detail = "is missing" if found is None else f"is {show(found)}"
    raise RecordRejected(reason, f"{member_path(path, name)} {detail}: {expected}")


def _no_hint(name: str) -> str:
    return ""


def supported_name(
    parent: dict[object, object],
    name: str,
    path: str,
    supported: Container[str],
    expected: str,
    *,
    hint: Callable[[str], str] = _no_hint,
    null_is_missing: bool = True,
) -> str:
    """The member ``parent[name]`` that names what happened (an event type, a trigger),
    when it is one of ``supported``; else ``unsupported_event_type``.

    The message is ``<field> is missing: <expected>``, ``<field> must be a
    string, got <shown value>: <expected>`` or ``<field> <shown value> is not
    supported<hint(value)>: <expected>``. ``null_is_missing`` False reads a
    ``null`` as a value of another type.
    """
    value = parent.get(name)
    if isinstance(value, str) and value in supported:
        return value
    if value is None and null_is_missing:
        detail = "is missing"
    elif not isinstance(value, str):
        detail = f"must be a string, got {show(value)}"
    else:
        detail = f"{show(value)} is not supported{hint(value)}"
    raise RecordRejected(
        RejectReason.UNSUPPORTED_EVENT_TYPE, f"{member_path(path, name)} {detail}: {expected}"
    )


def required_string(parent: dict[object, object], name: str, path: str, what: str) -> str:
    """The required non-empty string ``parent[name]``; ``what`` says what it names.

    An empty string is missing. The value is returned as it is (it may hold
    lone surrogates: see :func:`check_text`).
    """
    value = parent.get(name)
    if type(value) is str and value:
        return value
    field = member_path(path, name)
    if value is None or value == "":
        raise RecordRejected(
            RejectReason.MISSING_FIELD, f"{field} is missing: expected {what}, a non-empty string"
        )
    if not isinstance(value, str):
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{field} must be a non-empty string, got {show(value)}"
        )
    return value


def optional_string(
    parent: dict[object, object], name: str, path: str, *, text_only: bool = True
) -> str | None:
    """The optional string ``parent[name]``: absent, null or empty give None.

    With ``text_only`` a string holding a lone surrogate is ``invalid_field``.
    """
    value = parent.get(name)
    if value is None or value == "":
        return None
    field = member_path(path, name)
    if not isinstance(value, str):
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{field} must be a string when present, got {show(value)}"
        )
    if text_only:
        check_text(value, field)
    return value


def optional_size(parent: dict[object, object], name: str, path: str) -> int | None:
    """The optional size in bytes ``parent[name]``: absent or null give None.

    At most :data:`seqgate.schemas.limits.MAX_SIZE` (an Avro long is signed 64-bit).
    """
    value = parent.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_SIZE:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{member_path(path, name)} must be a non-negative integer below 2**63 (bytes) "
            f"when present, got {show(value)}",
        )
    return value


def notification_object(value: object, path: str, what: str) -> dict[object, object]:
    """``value``, the notification at ``path`` ("" for the whole body), as a JSON object;
    anything else is ``not_a_notification``, the message saying ``what`` was expected."""
    if not isinstance(value, dict):
        subject = path if path else "the body"
        raise RecordRejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"{subject} must be a JSON object ({what}), got {show(value)}",
        )
    return value


def sequencer_member(
    parent: dict[object, object], path: str, *, required_because: str | None
) -> str | None:
    """The S3-style sequencer ``parent["sequencer"]``: a non-empty string of hex digits.

    Every problem is ``invalid_sequencer``. An absent (or null) sequencer
    gives None when ``required_because`` is None; otherwise it is refused and
    ``required_because`` says, in the message, why the event must carry one.
    The value is returned as written (case and leading zeros kept).
    """
    field = member_path(path, "sequencer")
    value = parent.get("sequencer")
    if value is None:
        if required_because is None:
            return None
        raise RecordRejected(
            RejectReason.INVALID_SEQUENCER,
            f"{field} is missing: {_HEX_EXPECTED} ({required_because})",
        )
    if not isinstance(value, str):
        raise RecordRejected(
            RejectReason.INVALID_SEQUENCER, f"{field} must be a string, got {show(value)}"
        )
    if _HEX_DIGITS.fullmatch(value) is None:
        problem = "is empty" if value == "" else f"{show(value)} is not hexadecimal"
        raise RecordRejected(RejectReason.INVALID_SEQUENCER, f"{field} {problem}: {_HEX_EXPECTED}")
    return value
