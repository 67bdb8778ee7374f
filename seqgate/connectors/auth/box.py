"""Box webhook signatures.

``box-signature-primary`` / ``box-signature-secondary`` are the base64
HMAC-SHA256 of the body bytes followed by the bytes of the
``box-delivery-timestamp`` header, each under the application's key of the
same name (two keys let one be rotated while the other is in use). Box
documents a 10-minute limit on the timestamp; the check takes an injected
clock.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from datetime import datetime
from typing import Final

from seqgate.connectors.auth.shared import check_timestamp_window, hmac_digest, same_secret
from seqgate.connectors.errors import MISSING, WRONG, WebhookAuthError
from seqgate.connectors.parsers.json_fields import show
from seqgate.connectors.parsers.webhook_fields import header_value

__all__ = ["BOX_SIGNATURE_HEADERS", "verify_box_signature"]

_PRIMARY: Final = "box-signature-primary"
_SECONDARY: Final = "box-signature-secondary"
_TIMESTAMP: Final = "box-delivery-timestamp"
_VERSION: Final = "box-signature-version"
_ALGORITHM: Final = "box-signature-algorithm"

BOX_SIGNATURE_HEADERS: Final = (_PRIMARY, _SECONDARY, _TIMESTAMP, _VERSION, _ALGORITHM)
"""Every header :func:`verify_box_signature` reads."""


def verify_box_signature(
    body: bytes,
    headers: Mapping[str, str],
    primary_key: str | None,
    secondary_key: str | None,
    now_s: float,
    window_s: float = 600,
) -> None:
    """Check the signature headers of a Box webhook request.

    ``headers`` are the request's headers (any case); ``now_s`` is the
    current time in seconds since the epoch. The request is authentic when
    the primary signature matches under ``primary_key`` or the secondary one
    under ``secondary_key``. Raises :class:`WebhookAuthError`: 401 when no
    signature or no timestamp was sent, 403 for an unknown signature version
    or algorithm, an unreadable timestamp, a timestamp outside ``window_s``,
    or no matching signature. Raises ValueError when both keys are None.
    """
    if primary_key is None and secondary_key is None:
        raise ValueError("verify_box_signature needs the primary or the secondary key")
    primary = header_value(headers, _PRIMARY)
    secondary = header_value(headers, _SECONDARY)
    if not primary and not secondary:
        raise WebhookAuthError(
            MISSING,
            f"neither {_PRIMARY} nor {_SECONDARY} was sent: Box signs every webhook of an "
            "application that has signature keys",
        )
    timestamp = header_value(headers, _TIMESTAMP)
    if not timestamp:
        raise WebhookAuthError(MISSING, f"the {_TIMESTAMP} header is missing: it is signed")
    _check_scheme(headers)
    check_timestamp_window(_sent_at(timestamp), now_s, window_s, _TIMESTAMP)
    signed = body + timestamp.encode("utf-8")
    for key, signature in ((primary_key, primary), (secondary_key, secondary)):
        if key is not None and signature:
            expected = base64.b64encode(hmac_digest(key, signed, "sha256"))
            if same_secret(signature.strip(), expected):
                return
    raise WebhookAuthError(
        WRONG,
        f"no signature matches: {_PRIMARY} under the primary key and {_SECONDARY} under the "
        "secondary key were both checked where sent (forged, altered, or keys out of date)",
    )


def _check_scheme(headers: Mapping[str, str]) -> None:
    """Refuse (403) a signature version or algorithm other than Box's 1 / HmacSHA256."""
    version = header_value(headers, _VERSION)
    if version is not None and version.strip() != "1":
        raise WebhookAuthError(WRONG, f"{_VERSION} {show(version)} is not supported: expected 1")
    algorithm = header_value(headers, _ALGORITHM)
    if algorithm is not None and algorithm.strip() != "HmacSHA256":
        raise WebhookAuthError(
            WRONG, f"{_ALGORITHM} {show(algorithm)} is not supported: expected HmacSHA256"
        )


def _sent_at(timestamp: str) -> float:
    """The signed delivery time in seconds since the epoch; 403 unless ISO 8601 with an offset."""
    try:
        sent_at = datetime.fromisoformat(timestamp.strip())
    except ValueError:
        sent_at = None
    if sent_at is None or sent_at.tzinfo is None:
        raise WebhookAuthError(
            WRONG, f"{_TIMESTAMP} {show(timestamp)} is not an ISO 8601 time with a UTC offset"
        )
    return sent_at.timestamp()
