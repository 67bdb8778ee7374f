"""Typed access to members of decoded JSON documents, for the notification parsers.

Each accessor reads one member of a JSON object and returns it with its
Python type, or raises :class:`~connectors.errors.RecordRejected` with a
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
"""

from __future__ import annotations

import json
import re
from typing import Final, TypeVar

from connectors.errors import RecordRejected, RejectReason

__all__ = [
    "PREVIEW_LIMIT",
    "check_constant",
    "check_text",
    "index_path",
    "is_text",
    "member_path",
    "object_member",
    "optional_size",
    "optional_string",
    "required_member",
    "required_string",
    "sequencer_member",
    "show",
]

PREVIEW_LIMIT: Final = 80
"""How many characters of a string :func:`show` prints."""

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
    field = member_path(path, name)
    value = parent.get(name)
    if value is None:
        raise RecordRejected(RejectReason.MISSING_FIELD, f"{field} is missing: {missing}")
    if not isinstance(value, json_type):
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{field} must be {invalid}, got {show(value)}"
        )
    return value


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


def required_string(parent: dict[object, object], name: str, path: str, what: str) -> str:
    """The required non-empty string ``parent[name]``; ``what`` says what it names.

    An empty string is missing. The value is returned as it is (it may hold
    lone surrogates: see :func:`check_text`).
    """
    field = member_path(path, name)
    value = parent.get(name)
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
    """The optional size in bytes ``parent[name]``: absent or null give None."""
    value = parent.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{member_path(path, name)} must be a non-negative integer (bytes) when present, "
            f"got {show(value)}",
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
