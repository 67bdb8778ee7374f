"""Supabase database webhook authentication: a shared secret in a header.

The webhook sends the secret in a header chosen when it is created.
"""

from __future__ import annotations

from seqgate.connectors.auth.shared import same_secret
from seqgate.connectors.errors import MISSING, WRONG, WebhookAuthError

__all__ = ["verify_supabase_secret"]


def verify_supabase_secret(header_value: str | None, expected: str) -> None:
    """Check the shared-secret header of a Supabase database webhook.

    Raises :class:`~seqgate.connectors.errors.WebhookAuthError`: 401 when the
    header is absent or empty, 403 when it differs from ``expected``
    (compared in constant time). Raises ValueError when ``expected`` is empty
    (a route without a configured secret must not call this).
    """
    if not expected:
        raise ValueError("no shared secret is configured for the Supabase webhook route")
    if not header_value:
        raise WebhookAuthError(
            MISSING,
            "the Supabase webhook request carries no shared-secret header: add it to the "
            "webhook's HTTP headers",
        )
    if not same_secret(header_value, expected):
        raise WebhookAuthError(WRONG, "the Supabase webhook request's shared secret is wrong")
