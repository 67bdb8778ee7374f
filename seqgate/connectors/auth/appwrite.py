"""Appwrite webhook signatures.

``X-Appwrite-Webhook-Signature`` is the base64 HMAC-SHA1, under the webhook's
signature key, of the webhook's configured URL followed by the body. Appwrite
percent-decodes that URL (PHP ``rawurldecode``: ``%XX`` only, ``+`` kept)
before signing, and so does :func:`verify_appwrite_signature`. No timestamp is
signed, so a replay is caught only by the dedupe on the id.
"""

from __future__ import annotations

import base64
from typing import Final
from urllib.parse import unquote_to_bytes

from seqgate.connectors.auth.shared import hmac_digest, same_secret
from seqgate.connectors.errors import MISSING, WRONG, WebhookAuthError

__all__ = ["APPWRITE_SIGNATURE_HEADER", "verify_appwrite_signature"]

APPWRITE_SIGNATURE_HEADER: Final = "X-Appwrite-Webhook-Signature"


def verify_appwrite_signature(url: str, body: bytes, header: str | None, key: str) -> None:
    """Check the ``X-Appwrite-Webhook-Signature`` header of an Appwrite request.

    ``url`` is the webhook's URL exactly as configured in Appwrite, ``body``
    the raw request body, ``key`` the webhook's signature key. Raises
    :class:`WebhookAuthError`: 401 without the header, 403 when it does not match.
    """
    if header is None or not header.strip():
        raise WebhookAuthError(
            MISSING,
            f"the {APPWRITE_SIGNATURE_HEADER} header is missing: Appwrite signs every "
            "webhook request (version 0.15 and later)",
        )
    expected = base64.b64encode(hmac_digest(key, unquote_to_bytes(url) + body, "sha1"))
    if not same_secret(header.strip(), expected):
        raise WebhookAuthError(
            WRONG,
            f"the {APPWRITE_SIGNATURE_HEADER} signature does not match the configured URL "
            "and the body: forged, altered, or signed with another key or for another URL",
        )
