"""Cloudinary notification signatures.

``X-Cld-Signature`` is the hex SHA-1 (or SHA-256, an account setting) of the
body, then the ``X-Cld-Timestamp`` value, then the API secret: a plain digest,
not an HMAC. Cloudinary's SDKs accept a timestamp for two hours by default; so
does this check, with an injected clock.
"""

from __future__ import annotations

import hashlib
from typing import Final

from seqgate.connectors.auth.shared import check_timestamp_window, same_secret
from seqgate.connectors.errors import MISSING, WRONG, WebhookAuthError
from seqgate.connectors.parsers.json_fields import show

__all__ = [
    "CLOUDINARY_ALGORITHMS",
    "CLOUDINARY_SIGNATURE_HEADER",
    "CLOUDINARY_TIMESTAMP_HEADER",
    "verify_cloudinary_signature",
]

CLOUDINARY_ALGORITHMS: Final = ("sha1", "sha256")
"""The signature algorithms a Cloudinary account can choose."""

CLOUDINARY_TIMESTAMP_HEADER: Final = "X-Cld-Timestamp"
CLOUDINARY_SIGNATURE_HEADER: Final = "X-Cld-Signature"


def verify_cloudinary_signature(
    body: bytes,
    timestamp: str | None,
    signature: str | None,
    api_secret: str,
    now_s: float,
    window_s: float = 7200,
    algorithm: str = "sha1",
) -> None:
    """Check the ``X-Cld-Timestamp`` and ``X-Cld-Signature`` headers of a Cloudinary request.

    ``algorithm`` is the account's signature algorithm, ``sha1`` (Cloudinary's
    default) or ``sha256``; ``now_s`` is the current time in seconds since the
    epoch. Raises :class:`WebhookAuthError`: 401 when either header is
    missing, 403 for a timestamp that is not whole seconds, one outside
    ``window_s``, or a signature that does not match. Raises ValueError for
    another ``algorithm``.
    """
    if algorithm not in CLOUDINARY_ALGORITHMS:
        raise ValueError(f"algorithm must be one of {CLOUDINARY_ALGORITHMS}, got {algorithm!r}")
    if not signature or not signature.strip():
        raise WebhookAuthError(
            MISSING, "the X-Cld-Signature header is missing: Cloudinary signs every notification"
        )
    if not timestamp or not timestamp.strip():
        raise WebhookAuthError(MISSING, "the X-Cld-Timestamp header is missing: it is signed")
    stamp = timestamp.strip()
    if not stamp.isascii() or not stamp.isdigit():
        raise WebhookAuthError(
            WRONG, f"X-Cld-Timestamp {show(timestamp)} is not a Unix time in whole seconds"
        )
    check_timestamp_window(float(stamp), now_s, window_s, "X-Cld-Timestamp")
    material = body + stamp.encode("ascii") + api_secret.encode("utf-8")
    expected = hashlib.new(algorithm, material).hexdigest()
    if not same_secret(signature.strip().lower(), expected):
        raise WebhookAuthError(
            WRONG,
            f"X-Cld-Signature does not match the body and timestamp under the API secret "
            f"({algorithm.upper()}): forged, altered, or signed with another secret or algorithm",
        )
