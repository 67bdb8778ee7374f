"""Field limits of an ObjectEvent: what the bridge publishes and the worker accepts.

One contract for both sides. The bridge calls :func:`check_event` on every
event it builds (an event that breaks a limit becomes an ``invalid_field``
rejection instead), and the worker calls it again before deciding, so an event
that passes can always be encoded (Avro: strings are UTF-8, ``long`` is signed
64-bit) and its encoding, and every record built from it (outbox, watermark,
decision), stays far below the broker's maximum message size. Pure: no I/O.

Limits, in bytes of UTF-8 (what Avro and Kafka count), and why:

================  =========  ==================================================
field             limit      why
================  =========  ==================================================
``key``           4096       S3, GCS and B2 object names are at most 1,024
                             bytes of UTF-8; Azure blob names at most 1,024
                             characters, which is up to 4,096 bytes. One cap
                             serves every source (a per-source cap would buy
                             nothing: the bound on the encoded event is what
                             matters).
``bucket``        256        S3 and B2 bucket names <= 63, GCS <= 222 (dotted
                             names), Azure ``<account>.<container>`` <= 24 +
                             1 + 63 = 88; Supabase, Appwrite ids and
                             Cloudinary cloud names are shorter.
``position``      128        S3 sequencers are 16-20 hex digits, MinIO's 16,
                             Azure's 32-48, GCS generations padded to 20
                             digits.
``id``            256        a provider's own event id (Event Grid and
                             EventBridge GUIDs, B2 and Box ids, Cloudinary
                             request ids: <= 64) or a derived hash (prefix +
                             32 hex digits); no parser embeds the key in an id.
``version_id``    1024       S3 documents version ids as at most 1,024 bytes.
``etag``          256        S3 ETags are 32 hex digits (``-N`` for multipart),
                             SHA-1 digests 40, Azure's ``0x...`` about 18.
``event_name``    256        provider event types verbatim: the longest S3 name
                             is 45 bytes; Azure's ``Microsoft.Storage.*`` about
                             40.
``event_time``    64         ISO-8601 timestamps: 20-35 bytes (Azure and
                             Supabase write 7 and 6 fraction digits and
                             offsets).
``kind``          64         seqgate's own vocabulary (the longest is 28 bytes).
``source``        32         seqgate's own provider names (the longest is 10).
``origin``        4352       ``file:<path>:<line>`` with a path of up to 4,096
                             bytes (Linux PATH_MAX), plus room for the scheme
                             and the line; SQS, HTTP and Kafka origins are
                             shorter.
``size``          0..2^63-1  an Avro ``long`` is signed 64-bit, and a size is
                             never negative (S3 objects are at most 5 TiB).
================  =========  ==================================================

Every string must be valid Unicode text (no lone surrogates, which JSON text
may carry in ``\\ud800`` escapes but UTF-8 cannot encode). With these limits an
encoded ObjectEvent (single-object encoding) is at most :data:`MAX_EVENT_BYTES`
(10,830) bytes, and an outbox record (an event, a previous position and two
numbers) at most about 11 KB: a broker's default 1 MB limit is never reached.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Final

from seqgate.schemas.binary import encode_long
from seqgate.schemas.errors import FieldLimitError
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.wire import SINGLE_OBJECT_HEADER_LEN

__all__ = [
    "MAX_BUCKET_BYTES",
    "MAX_ETAG_BYTES",
    "MAX_EVENT_BYTES",
    "MAX_EVENT_NAME_BYTES",
    "MAX_EVENT_TIME_BYTES",
    "MAX_ID_BYTES",
    "MAX_KEY_BYTES",
    "MAX_KIND_BYTES",
    "MAX_ORIGIN_BYTES",
    "MAX_POSITION_BYTES",
    "MAX_SIZE",
    "MAX_SOURCE_BYTES",
    "MAX_VERSION_ID_BYTES",
    "MIN_SIZE",
    "TEXT_LIMITS",
    "check_event",
]

MAX_ID_BYTES: Final = 256
MAX_SOURCE_BYTES: Final = 32
MAX_BUCKET_BYTES: Final = 256
MAX_KEY_BYTES: Final = 4096
MAX_KIND_BYTES: Final = 64
MAX_EVENT_NAME_BYTES: Final = 256
MAX_POSITION_BYTES: Final = 128
MAX_VERSION_ID_BYTES: Final = 1024
MAX_ETAG_BYTES: Final = 256
MAX_EVENT_TIME_BYTES: Final = 64
MAX_ORIGIN_BYTES: Final = 4352
MIN_SIZE: Final = 0
MAX_SIZE: Final = 2**63 - 1
"""``size`` is an Avro ``long``: signed 64-bit, and never negative."""

TEXT_LIMITS: Final[dict[str, int]] = {
    "id": MAX_ID_BYTES,
    "source": MAX_SOURCE_BYTES,
    "bucket": MAX_BUCKET_BYTES,
    "key": MAX_KEY_BYTES,
    "kind": MAX_KIND_BYTES,
    "event_name": MAX_EVENT_NAME_BYTES,
    "position": MAX_POSITION_BYTES,
    "version_id": MAX_VERSION_ID_BYTES,
    "etag": MAX_ETAG_BYTES,
    "event_time": MAX_EVENT_TIME_BYTES,
    "origin": MAX_ORIGIN_BYTES,
}
"""The byte limit of every string field of an ObjectEvent, by field name."""

_OPTIONAL: Final = frozenset({"position", "version_id", "etag", "event_time"})
_PREVIEW_CHARS: Final = 40
_BIG_NUMBER: Final = 10**30


_UNION_BYTES: Final = 1  # the branch index of a ["null", T] field

MAX_EVENT_BYTES: Final = (
    SINGLE_OBJECT_HEADER_LEN
    + sum(limit + len(encode_long(limit)) for limit in TEXT_LIMITS.values())
    + _UNION_BYTES * (len(_OPTIONAL) + 1)  # + size
    + len(encode_long(MAX_SIZE))
)
"""The longest single-object encoding of an ObjectEvent that passes :func:`check_event`."""


# --------------------------------------------------------------------------- messages


def _preview(value: str) -> str:
    """The start of ``value`` as a JSON string, printable even with lone surrogates."""
    shown = json.dumps(value[:_PREVIEW_CHARS], ensure_ascii=False)
    shown = shown.encode("utf-8", "backslashreplace").decode("utf-8")
    return shown + ("..." if len(value) > _PREVIEW_CHARS else "")


def _show_number(value: int) -> str:
    # str() of a huge int is slow, and refused beyond 4,300 digits.
    if abs(value) >= _BIG_NUMBER:
        return f"a {'negative ' if value < 0 else ''}number of {value.bit_length()} bits"
    return str(value)


def _text_error(field: str, value: str, limit: int) -> FieldLimitError:
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as error:
        return FieldLimitError(
            field,
            f"{field} {_preview(value)} holds a lone surrogate at character {error.start}: "
            "expected Unicode text (UTF-8 cannot encode it)",
        )
    return FieldLimitError(
        field,
        f"{field} is {size} bytes of UTF-8 ({_preview(value)}): the limit is {limit} bytes",
    )


def _type_error(field: str, value: object, expected: str) -> FieldLimitError:
    return FieldLimitError(field, f"{field} must be {expected}, got {type(value).__name__}")


# --------------------------------------------------------------------------- the check


def _utf8_bytes(value: str) -> int:
    """The UTF-8 length of ``value``, or -1 when it cannot be encoded."""
    if value.isascii():  # O(1) in CPython: a flag of the string
        return len(value)
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError:
        return -1


def _fits(value: str, limit: int) -> bool:
    """Whether ``value`` is text (no lone surrogate) of at most ``limit`` bytes of UTF-8."""
    # A character is 1 to 4 bytes: the length in characters settles most strings.
    return len(value) <= limit and 0 <= _utf8_bytes(value) <= limit


def _check_text(field: str, value: object, limit: int) -> None:
    if type(value) is not str:
        if value is None and field in _OPTIONAL:
            return
        raise _type_error(
            field, value, "a string" if field not in _OPTIONAL else "a string or null"
        )
    if not _fits(value, limit):
        raise _text_error(field, value, limit)


def _check_size(size: object) -> None:
    if size is None:
        return
    if type(size) is not int:
        raise _type_error("size", size, "an integer or null")
    if not MIN_SIZE <= size <= MAX_SIZE:
        raise FieldLimitError(
            "size",
            f"size {_show_number(size)} is outside {MIN_SIZE}..{MAX_SIZE} "
            "(bytes; an Avro long is signed 64-bit)",
        )


def _check_each(event: ObjectEvent) -> None:
    """Raise for the first field of ``event`` that breaks its limit, in schema order."""
    for field in ObjectEvent.__slots__:
        if field == "size":
            _check_size(event.size)
        else:
            _check_text(field, getattr(event, field), TEXT_LIMITS[field])


def _within_limits_source() -> str:
    """Source of ``_within_limits(e) -> bool``: every rule of the table in one expression.

    The hot path (bridge and worker, once per event): with the limits as
    literals and no call for an ASCII field within its limit, it costs about a
    third of a loop over the fields (generated once, at import, as
    :mod:`seqgate.schemas.binary` generates its readers).
    """
    terms = []
    for field, limit in TEXT_LIMITS.items():
        value = f"e.{field}"
        term = (
            f"(type({value}) is str and (({value}.isascii() and len({value}) <= {limit})"
            f" or _fits({value}, {limit})))"
        )
        terms.append(f"({value} is None or {term})" if field in _OPTIONAL else term)
    terms.append(
        f"(e.size is None or (type(e.size) is int and {MIN_SIZE} <= e.size <= {MAX_SIZE}))"
    )
    return "def within_limits(e):\n    return " + " and ".join(terms)


def _compile_within_limits() -> Callable[[ObjectEvent], bool]:
    namespace: dict[str, Any] = {"_fits": _fits}
    exec(
        compile(_within_limits_source(), "<seqgate.schemas.limits within_limits>", "exec"),
        namespace,
    )
    return namespace["within_limits"]  # type: ignore[no-any-return]


_within_limits: Final = _compile_within_limits()


def check_event(event: ObjectEvent) -> None:
    """Raise :class:`FieldLimitError` for the first field of ``event`` that breaks a limit.

    Fields are checked in schema order. Passing means ``OBJECT_EVENT.encode(event)``
    succeeds, decodes back equal and is at most :data:`MAX_EVENT_BYTES` long.
    """
    if not _within_limits(event):
        _check_each(event)
