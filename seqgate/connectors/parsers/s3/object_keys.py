"""Object keys of S3-style records: form-encoded, decoded exactly once."""

from __future__ import annotations

from typing import Final

from seqgate.connectors.errors import KeyEncodingError
from seqgate.connectors.parsers.json_fields import required_member, show
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.reasons import RejectReason

__all__ = ["KeyEncodingError", "decode_form_key", "object_key"]

_HEX_BYTES: Final = frozenset(b"0123456789abcdefABCDEF")


def decode_form_key(raw: str) -> str:
    """Decode an S3 notification key exactly once.

    S3 writes keys in form encoding: ``+`` stands for a space and ``%XX`` for
    one byte; the resulting bytes are UTF-8. A ``+`` produced by ``%2B`` stays
    a literal ``+``, and ``%25`` yields a literal ``%`` that is not decoded
    again (``a%252Fb`` -> ``a%2Fb``). Characters outside ASCII that arrive
    unescaped are taken as their UTF-8 bytes.

    Stricter than :func:`urllib.parse.unquote_plus`, which passes malformed
    escapes through: raises :class:`KeyEncodingError` for a ``%`` not followed
    by two hex digits, or for bytes that are not valid UTF-8.
    """
    try:
        data = raw.encode("utf-8")
    except UnicodeEncodeError as error:
        raise KeyEncodingError(
            f"character {raw[error.start]!a} at offset {error.start} is a lone surrogate, not text"
        ) from None
    decoded = bytearray()
    start = 0
    while (percent := data.find(b"%", start)) >= 0:
        decoded += data[start:percent].replace(b"+", b" ")
        digits = data[percent + 1 : percent + 3]
        if len(digits) != 2 or not _HEX_BYTES.issuperset(digits):
            raise KeyEncodingError(
                f"the '%' at byte offset {percent} must be followed by two hex digits, "
                f"found {digits.decode('ascii', 'backslashreplace')!r}"
            )
        decoded.append(int(digits, 16))
        start = percent + 3
    decoded += data[start:].replace(b"+", b" ")
    try:
        return decoded.decode("utf-8")
    except UnicodeDecodeError as error:
        bad = bytes(decoded[error.start : error.end]).hex(" ").upper()
        raise KeyEncodingError(
            f"the decoded bytes are not valid UTF-8 (byte(s) {bad} at decoded byte offset "
            f"{error.start}: {error.reason})"
        ) from None


def object_key(obj: dict[object, object], object_path: str) -> str:
    raw = required_member(
        obj,
        "key",
        object_path,
        str,
        missing="expected the object's form-encoded name",
        invalid="a string (the form-encoded name)",
    )
    if raw == "":
        raise RecordRejected(
            RejectReason.MISSING_FIELD,
            f"{object_path}.key is empty: expected the object's form-encoded name",
        )
    try:
        return decode_form_key(raw)
    except KeyEncodingError as error:
        raise RecordRejected(
            RejectReason.INVALID_KEY_ENCODING,
            f"{object_path}.key {show(raw)} is not valid form encoding "
            f"('+' for space, '%XX' for a byte, UTF-8 text): {error}",
        ) from None
