"""A shared secret in a request header whose name is configured: a generic API key.

EventBridge API destinations use it (the connection's API key authorization adds the
header to every request it sends); any sender that can add a fixed header can.
"""

from __future__ import annotations

from collections.abc import Mapping

from seqgate.connectors.auth.shared import readable_credentials, same_secret
from seqgate.connectors.errors import MISSING, WRONG, WebhookAuthError

__all__ = ["verify_header_secret"]


def verify_header_secret(headers: Mapping[str, str], name: str, expected: str) -> None:
    """Check that header ``name`` of ``headers`` carries ``expected``.

    Raises :class:`~seqgate.connectors.errors.WebhookAuthError`: 401 when the
    header is missing, 403 when it is not UTF-8 text or differs (compared in
    constant time).
    """
    readable_credentials(headers, (name,))
    given = headers.get(name)
    if given is None:
        raise WebhookAuthError(MISSING, f"header {name} missing")
    if not same_secret(given, expected):
        raise WebhookAuthError(WRONG, f"header {name} does not match")
