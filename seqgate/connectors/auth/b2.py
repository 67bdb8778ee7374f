"""Backblaze B2 event notification signatures.

Header ``x-bz-event-notification-signature: v1=<hex>``, the HMAC-SHA256 of the
raw body with the rule's signing secret. B2 puts no timestamp under the
signature, so a replay cannot be told from a redelivery here; the dedupe on
``eventId`` absorbs both.
"""

from __future__ import annotations

from typing import Final

from seqgate.connectors.auth.shared import hmac_digest, same_secret
from seqgate.connectors.errors import MISSING, WRONG, WebhookAuthError
from seqgate.connectors.parsers.json_fields import show

__all__ = ["B2_SIGNATURE_HEADER", "verify_b2_signature"]

B2_SIGNATURE_HEADER: Final = "x-bz-event-notification-signature"

_SIGNATURE_VERSION: Final = "v1="


def verify_b2_signature(body: bytes, header: str | None, secret: str) -> None:
    """Check the ``x-bz-event-notification-signature`` header of a B2 request.

    ``body`` is the raw request body, ``secret`` the rule's signing secret.
    Raises :class:`WebhookAuthError`: 401 without the header, 403 for a value
    that is not ``v1=<hex>`` or a signature that does not match.
    """
    if header is None or not header.strip():
        raise WebhookAuthError(
            MISSING,
            f"the {B2_SIGNATURE_HEADER} header is missing: B2 signs every notification of a "
            "rule that has a signing secret",
        )
    value = header.strip()
    if not value.startswith(_SIGNATURE_VERSION):
        raise WebhookAuthError(
            WRONG,
            f"the {B2_SIGNATURE_HEADER} header is not 'v1=<hex HMAC-SHA256>': got {show(value)}",
        )
    expected = hmac_digest(secret, body, "sha256").hex()
    if not same_secret(value[len(_SIGNATURE_VERSION) :].lower(), expected):
        raise WebhookAuthError(
            WRONG,
            f"the {B2_SIGNATURE_HEADER} signature does not match the body: forged, altered "
            "in transit, or signed with another rule's secret",
        )
