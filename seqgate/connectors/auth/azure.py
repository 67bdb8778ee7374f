"""Azure Event Grid webhook authentication: a shared secret.

Event Grid signs nothing: the secret travels in the endpoint's query string
or in a delivery header.
"""

from __future__ import annotations

from seqgate.connectors.auth.shared import same_secret
from seqgate.connectors.errors import MISSING, WRONG, WebhookAuthError

__all__ = ["verify_azure_secret"]


def verify_azure_secret(query_secret: str | None, header_secret: str | None, expected: str) -> None:
    """Check the shared secret of an Event Grid webhook, given in the query string or a header.

    Raises :class:`~seqgate.connectors.errors.WebhookAuthError` with 401 when
    neither carries a secret (None and empty are the same) and 403 when one
    that is given differs from ``expected``: every secret presented must be
    right. Comparisons take constant time. Raises ValueError when ``expected``
    is empty (a route without a configured secret must not call this).
    """
    if not expected:
        raise ValueError("no shared secret is configured for the Azure Event Grid route")
    given = [secret for secret in (query_secret, header_secret) if secret]
    if not given:
        raise WebhookAuthError(
            MISSING,
            "the Event Grid request carries no shared secret: put it in the subscription's "
            "endpoint URL (query string) or in a delivery header",
        )
    matches = [same_secret(secret, expected) for secret in given]
    if not all(matches):
        raise WebhookAuthError(WRONG, "the Event Grid request's shared secret is wrong")
