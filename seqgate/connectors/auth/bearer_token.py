"""``Authorization: Bearer <token>`` with a configured token: MinIO's webhook target
(``/minio``, its ``auth_token``) and, when a token is configured, ``/s3``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from seqgate.connectors.auth.shared import readable_credentials, same_secret
from seqgate.connectors.errors import MISSING, WRONG, WebhookAuthError

__all__ = ["AUTHORIZATION", "verify_bearer_token"]

AUTHORIZATION: Final = "Authorization"


def verify_bearer_token(headers: Mapping[str, str], token: str) -> None:
    """Check that ``headers`` carry ``Authorization: Bearer <token>``.

    Raises :class:`~seqgate.connectors.errors.WebhookAuthError`: 401 when the
    header is missing or not a Bearer token, 403 when it is not UTF-8 text or
    the token differs (compared in constant time).
    """
    readable_credentials(headers, (AUTHORIZATION,))
    header = headers.get(AUTHORIZATION)
    if header is None:
        raise WebhookAuthError(MISSING, "Authorization header missing")
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer":
        raise WebhookAuthError(MISSING, "Authorization is not a Bearer token")
    if not same_secret(given.strip(), token):
        raise WebhookAuthError(WRONG, "Bearer token does not match")
