"""The payload of a GCS notification: ``payloadFormat`` and the object resource in ``data``.

``JSON_API_V1``: ``data`` is base64 of the object resource (``kind``
``storage#object``). ``NONE``: no data, the attributes alone. Absent: the
presence of ``data`` decides.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Final

from seqgate.connectors.parsers.json_fields import nesting_exceeds, show, too_deep_message
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.reasons import RejectReason

__all__ = ["JSON_API_V1", "PAYLOAD_NONE", "object_resource", "payload_format"]

JSON_API_V1: Final = "JSON_API_V1"
PAYLOAD_NONE: Final = "NONE"
_OBJECT_RESOURCE_KIND: Final = "storage#object"


def payload_format(
    message: dict[object, object], attributes: dict[object, object], path: str
) -> str:
    value = attributes.get("payloadFormat")
    if value is None or value == "":
        return PAYLOAD_NONE if message.get("data") in (None, "") else JSON_API_V1
    if value in (JSON_API_V1, PAYLOAD_NONE):
        return str(value)
    raise RecordRejected(
        RejectReason.UNSUPPORTED_SCHEMA_VERSION,
        f"{path}.payloadFormat {show(value)} is not supported: expected "
        f"{JSON_API_V1!r} (the object resource in 'data') or {PAYLOAD_NONE!r} (attributes only)",
    )


def object_resource(message: dict[object, object], path: str) -> dict[object, object]:
    raw = message.get("data")
    if raw is None or raw == "":
        raise RecordRejected(
            RejectReason.MISSING_FIELD,
            f"{path} is missing: payloadFormat {JSON_API_V1} carries the object resource "
            "as base64-encoded JSON",
        )
    if not isinstance(raw, str):
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{path} must be a base64 string, got {show(raw)}"
        )
    try:
        data = _decode_base64(raw)
    except ValueError as error:
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{path} {show(raw)} is not valid base64: {error}"
        ) from None
    if nesting_exceeds(data):
        raise RecordRejected(RejectReason.NESTING_TOO_DEEP, too_deep_message(f"{path} (decoded)"))
    try:
        resource: object = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        raise RecordRejected(
            RejectReason.MALFORMED_JSON,
            f"{path} does not decode to JSON text (expected the object resource): {error}",
        ) from None
    if not isinstance(resource, dict):
        raise RecordRejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"{path} decodes to {show(resource)}: expected the object resource, a JSON object",
        )
    kind = resource.get("kind")
    if kind is not None and kind != _OBJECT_RESOURCE_KIND:
        raise RecordRejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"{path}.kind is {show(kind)}: expected {_OBJECT_RESOURCE_KIND!r}",
        )
    return resource


def _decode_base64(text: str) -> bytes:
    # Pub/Sub's JSON form writes bytes in standard base64; the proto3 JSON
    # mapping also allows the URL-safe alphabet and dropped padding.
    standard = text.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(standard + "=" * (-len(standard) % 4), validate=True)
    except binascii.Error as error:
        raise ValueError(str(error)) from None
