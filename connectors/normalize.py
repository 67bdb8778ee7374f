"""Entry point of the bridge's validation: raw bytes -> events, rejections, ignores.

:func:`normalize` decodes one received message body as JSON, then hands the
document to the first parser that recognizes its shape. Today only native S3
notifications are known; SQS, SNS, EventBridge and MinIO envelopes are added
to :data:`_PARSERS` later, each as a (recognizer, parser) pair.

JSON decoding is strict, because the exact bytes may be dead-lettered and
reread by other tools:

* the body must be UTF-8 (one leading byte-order mark is tolerated);
* it must be one JSON value per RFC 8259: ``NaN``/``Infinity`` are refused;
* an object may not repeat a member name (parsers could otherwise disagree
  on which value counts);
* pathological input (numbers too long to convert, nesting too deep to
  decode) is refused instead of raising.

Every failure here is one whole-message rejection with reason
``malformed_json``; a document of a shape no parser recognizes is rejected as
``not_a_notification``. :func:`normalize` never raises.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from connectors.errors import RejectReason
from connectors.results import ParseResult
from connectors.s3_native import parse_s3_records

__all__ = ["ParseResult", "normalize"]

_BOM: Final = b"\xef\xbb\xbf"


@dataclass(frozen=True, slots=True)
class _Parser:
    """A notification format: how to recognize a document, and how to parse it."""

    name: str
    recognizes: Callable[[object], bool]
    parse: Callable[[object, str], ParseResult]


def _is_native_s3(document: object) -> bool:
    return isinstance(document, dict) and ("Records" in document or "Event" in document)


# Tried in order; the first parser that recognizes the document handles it.
_PARSERS: Final[tuple[_Parser, ...]] = (
    _Parser(name="native S3 notification", recognizes=_is_native_s3, parse=parse_s3_records),
)


def _quote(name: str, limit: int = 40) -> str:
    """A member name as a bounded JSON string, for messages."""
    shown = json.dumps(name[:limit]) + ("..." if len(name) > limit else "")
    return shown


class _JsonError(ValueError):
    """Why a body is not acceptable JSON; its message is the rejection's."""


def _refuse_constant(name: str) -> object:
    raise _JsonError(f"{name} is not valid JSON (RFC 8259 has no NaN or Infinity)")


def _unique_members(pairs: list[tuple[str, object]]) -> dict[str, object]:
    members: dict[str, object] = {}
    for name, value in pairs:
        if name in members:
            raise _JsonError(
                f"member name {_quote(name)} appears twice in one object: expected unique names"
            )
        members[name] = value
    return members


def _decode_json(raw: bytes) -> object:
    """Strict UTF-8 JSON decoding; raises _JsonError with a clear message."""
    body = raw[len(_BOM) :] if raw.startswith(_BOM) else raw
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _JsonError(
            f"the body is not valid UTF-8 (byte 0x{body[error.start]:02X} at byte offset "
            f"{error.start + len(raw) - len(body)}: {error.reason}): expected UTF-8 JSON"
        ) from None
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_members)
    except json.JSONDecodeError as error:
        raise _JsonError(
            f"the body is not valid JSON: {error.msg} at line {error.lineno} column "
            f"{error.colno} (character {error.pos})"
        ) from None
    except _JsonError:
        raise
    except RecursionError:
        raise _JsonError("the body is not acceptable JSON: it is nested too deeply") from None
    except ValueError as error:  # e.g. an integer literal beyond the conversion limit
        raise _JsonError(f"the body is not acceptable JSON: {error}") from None


def _describe(document: object) -> str:
    if isinstance(document, dict):
        names = [_quote(str(name)) for name in sorted(document, key=str)[:8]]
        more = ", ..." if len(document) > len(names) else ""
        return "a JSON object with members " + (", ".join(names) + more if names else "(none)")
    kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(document), "a number")


def _rejected(reason: RejectReason, message: str) -> ParseResult:
    return ParseResult.rejected(reason, message)


def normalize(raw: bytes, origin: str) -> ParseResult:
    """Turn one received message body into events, rejections and ignore notes.

    ``origin`` says where the bytes came from and is copied into every event.
    Never raises: invalid input yields rejections (``record_index`` None for a
    whole message, the record's index for one bad record of a batch).
    """
    try:
        document = _decode_json(raw)
    except _JsonError as error:
        return _rejected(RejectReason.MALFORMED_JSON, str(error))
    for parser in _PARSERS:
        if parser.recognizes(document):
            return parser.parse(document, origin)
    known = ", ".join(parser.name for parser in _PARSERS)
    return _rejected(
        RejectReason.NOT_A_NOTIFICATION,
        f"the body is {_describe(document)}: expected one of: {known} "
        "(a JSON object with 'Records' or an 'Event')",
    )
