"""What the webhook parsers (B2, Box, Cloudinary, Appwrite) share.

Reading a header whatever its case, turning a provider's millisecond clock
into the ISO text of ``event_time``, deriving a stable event id when the
provider sends none, and the number and id members that
:mod:`seqgate.connectors.parsers.json_fields` does not cover. Pure functions only.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Final

from seqgate.connectors.parsers.json_fields import check_text, member_path, required_string, show
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.reasons import RejectReason

__all__ = [
    "derived_event_id",
    "header_value",
    "millis_to_iso",
    "optional_count",
    "required_count",
    "required_id",
]

_MAX_MILLIS: Final = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """The value of header ``name`` in ``headers``, matched without regard to case, or None.

    An exact match is tried first, so a case-insensitive mapping (aiohttp's
    ``CIMultiDictProxy``) answers without a scan.
    """
    value = headers.get(name)
    if value is not None:
        return value
    wanted = name.lower()
    for key, found in headers.items():
        if key.lower() == wanted:
            return found
    return None


def millis_to_iso(millis: int) -> str:
    """A UTC instant given in milliseconds since the epoch, as ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

    Raises ValueError outside years 1970..9999.
    """
    if not 0 <= millis <= _MAX_MILLIS:
        raise ValueError(f"{millis} ms is outside 1970..9999")
    seconds, rest = divmod(millis, 1000)
    moment = datetime.fromtimestamp(seconds, UTC)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{rest:03d}Z"


def derived_event_id(prefix: str, material: Sequence[object]) -> str:
    """``prefix`` + the first 32 hex digits of SHA-256 over ``material`` written as JSON.

    For a provider that sends no per-event id (docs/design.md §4.1): the material holds
    only fields of the record, never the clock, so a redelivery gets the same
    id. JSON keeps the fields from running into each other.
    """
    try:
        text = json.dumps(list(material), ensure_ascii=True, sort_keys=True)
    except (RecursionError, TypeError, ValueError):
        # Nesting deeper than json.dumps can recurse (json.loads allows about as
        # much): keep the flat fields and name the nested ones by type.
        flat = [type(item).__name__ if isinstance(item, dict | list) else item for item in material]
        text = json.dumps(flat, ensure_ascii=True, default=repr)
    return prefix + hashlib.sha256(text.encode("ascii")).hexdigest()[:32]


def _number(parent: dict[object, object], name: str, path: str) -> int | None:
    value = parent.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{member_path(path, name)} must be a non-negative integer, got {show(value)}",
        )
    return value


def optional_count(parent: dict[object, object], name: str, path: str) -> int | None:
    """The optional non-negative integer ``parent[name]``: absent or null give None."""
    return _number(parent, name, path)


def required_count(parent: dict[object, object], name: str, path: str, what: str) -> int:
    """The required non-negative integer ``parent[name]``; ``what`` says what it counts."""
    value = _number(parent, name, path)
    if value is None:
        raise RecordRejected(
            RejectReason.MISSING_FIELD,
            f"{member_path(path, name)} is missing: expected {what}, a non-negative integer",
        )
    return value


def required_id(parent: dict[object, object], name: str, path: str, what: str) -> str:
    """The required identifier ``parent[name]``: a non-empty string of text, no ``/``.

    Identifiers end up as bucket names or whole keys, where a ``/`` would
    change the meaning of the identity.
    """
    field = member_path(path, name)
    value = required_string(parent, name, path, what)
    check_text(value, field)
    if "/" in value:
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{field} {show(value)} contains '/': expected {what}"
        )
    return value
