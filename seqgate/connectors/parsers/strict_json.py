"""Strict JSON decoding of received bodies and of envelopes' inner bodies.

Decoding is strict, because the exact bytes may be rejected and
reread by other tools:

* the body must be UTF-8 (one leading byte-order mark is tolerated);
* it must be one JSON value per RFC 8259: ``NaN``/``Infinity`` are refused;
* an object may not repeat a member name (parsers could otherwise disagree
  on which value counts);
* pathological input (numbers too long to convert) is refused instead of
  raising;
* arrays and objects may nest at most
  :data:`~seqgate.connectors.parsers.json_fields.MAX_JSON_DEPTH` (64) deep in one JSON text: a
  scan of the text before it is decoded
  (:func:`~seqgate.connectors.parsers.json_fields.nesting_exceeds`)
  refuses deeper text as ``nesting_too_deep``, so the decoder never recurses
  deeper. An envelope's inner body is a text of its own, scanned on its own.

A body that is not acceptable raises :class:`JsonRefused`, whose message and
reason (``malformed_json``, or ``nesting_too_deep``) are the rejection's.

Speed (issue 19 §3): a body is first decoded by msgspec, about seven times as fast
as ``json`` with the member hook. msgspec enforces every rule above but one: it keeps
the last of repeated member names. Its document is used only when it is provably the
one ``json`` would give (:func:`_fast_decode`); any other body, and every body msgspec
refuses, takes the ``json`` path, which decides and words the refusal.
"""

from __future__ import annotations

import json
from typing import Final

import msgspec

from seqgate.connectors.errors import JsonRefused
from seqgate.connectors.parsers.json_fields import nesting_exceeds, too_deep_message
from seqgate.schemas.reasons import RejectReason

__all__ = ["THE_BODY", "JsonRefused", "decode_json", "decode_json_text", "quote_name"]

_BOM: Final = b"\xef\xbb\xbf"
_UNSURE: Final = object()
_msgspec_decode: Final = msgspec.json.Decoder().decode
_msgspec_encode: Final = msgspec.json.Encoder().encode
THE_BODY: Final = "the body"
"""How decoding messages name the text they decode."""


def quote_name(name: str, limit: int = 40) -> str:
    """A member name as a bounded JSON string, for messages."""
    shown = json.dumps(name[:limit]) + ("..." if len(name) > limit else "")
    return shown


def _refuse_constant(name: str) -> object:
    raise JsonRefused(f"{name} is not valid JSON (RFC 8259 has no NaN or Infinity)")


def _unique_members(pairs: list[tuple[str, object]]) -> dict[str, object]:
    members: dict[str, object] = {}
    for name, value in pairs:
        if name in members:
            raise JsonRefused(
                f"member name {quote_name(name)} appears twice in one object: expected unique names"
            )
        members[name] = value
    return members


def decode_json_text(text: str) -> object:
    """Strict JSON decoding of text; raises JsonRefused with a clear message."""
    if nesting_exceeds(text):
        raise JsonRefused(too_deep_message(THE_BODY), RejectReason.NESTING_TOO_DEEP)
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_members)
    except json.JSONDecodeError as error:
        # Some of json's messages end with "at" ("Unterminated string starting at").
        what = error.msg.removesuffix(" at")
        raise JsonRefused(
            f"the body is not valid JSON: {what} at line {error.lineno} column "
            f"{error.colno} (character {error.pos})"
        ) from None
    except JsonRefused:
        raise
    except ValueError as error:  # e.g. an integer literal beyond the conversion limit
        raise JsonRefused(f"the body is not acceptable JSON: {error}") from None


def _fast_decode(body: bytes) -> object:
    """msgspec's document of ``body`` when it is the strict decoder's, else ``_UNSURE``.

    msgspec refuses what the strict decoder refuses (invalid UTF-8, lone surrogates,
    NaN and Infinity, RFC 8259's grammar; it also refuses some acceptable text, such as
    ``1e400``, which then takes the strict path) and decodes numbers and strings to the
    same values, except that it keeps the last of repeated member names. A repeat is
    ruled out by counting quotes: in JSON text without a backslash every ``"`` delimits
    a string and no string holds one, so the text has two per string, and so has
    msgspec's writing of the document. Every member has a name, so a repeat drops at
    least one string from the document: the counts are equal exactly when no name
    repeats.
    """
    if b"\\" in body:
        return _UNSURE
    try:
        document = _msgspec_decode(body)
        written = _msgspec_encode(document)
    except (msgspec.MsgspecError, ValueError):
        return _UNSURE
    return document if body.count(b'"') == written.count(b'"') else _UNSURE


def decode_json(raw: bytes) -> object:
    """Strict UTF-8 JSON decoding; raises JsonRefused with a clear message."""
    body = raw[len(_BOM) :] if raw.startswith(_BOM) else raw
    if not nesting_exceeds(body):
        document = _fast_decode(body)
        if document is not _UNSURE:
            return document
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise JsonRefused(
            f"the body is not valid UTF-8 (byte 0x{body[error.start]:02X} at byte offset "
            f"{error.start + len(raw) - len(body)}: {error.reason}): expected UTF-8 JSON"
        ) from None
    return decode_json_text(text)
