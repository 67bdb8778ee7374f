"""What every webhook authentication check shares: its error type and its primitives.

A provider's check (an HMAC signature, a shared secret, an OIDC token) raises
:class:`WebhookAuthError` with the HTTP status to answer - 401 when the credential
is missing, 403 when it is present but wrong, forged or outside its time window -
and a message naming what failed. It is the one error family of webhook authentication
(SNS's :class:`~seqgate.connectors.errors.SnsVerificationError` is one, always
403). The HTTP bridge counts and logs the failure, answers it through its one status
mapping (``seqgate.connectors.sources.route_table.refusal``) and never writes the request
to Kafka.

A credential whose bytes are not UTF-8 text (aiohttp hands such header bytes over
as lone surrogates) is present but cannot be right: :func:`readable_credentials`
refuses it with 403 before any check reads it, and :func:`same_secret` compares
such values byte for byte instead of raising.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterable, Mapping

from seqgate.connectors.errors import WRONG, WebhookAuthError
from seqgate.connectors.parsers.json_fields import is_text

__all__ = [
    "check_timestamp_window",
    "hmac_digest",
    "readable_credentials",
    "same_secret",
]


def same_secret(given: str | bytes, expected: str | bytes) -> bool:
    """Constant-time comparison of two secrets or digests (UTF-8 bytes for ``str``;
    lone surrogates, undecodable bytes received or configured, compare as themselves)."""
    return hmac.compare_digest(_bytes(given), _bytes(expected))


def hmac_digest(key: str, message: bytes, algorithm: str) -> bytes:
    """HMAC of ``message`` with the UTF-8 bytes of ``key`` under ``algorithm`` ("sha1", ...)."""
    return hmac.new(key.encode("utf-8"), message, algorithm).digest()


def _bytes(value: str | bytes) -> bytes:
    return value.encode("utf-8", "surrogatepass") if isinstance(value, str) else value


def readable_credentials(headers: Mapping[str, str], names: Iterable[str]) -> None:
    """Refuse (403) a request whose credential header ``names`` carry bytes that are
    not UTF-8 text: a malformed credential, never a right one."""
    for name in names:
        value = headers.get(name)
        if value is not None and not is_text(value):
            raise WebhookAuthError(
                WRONG, f"the {name} header is not UTF-8 text: a malformed credential"
            )


def check_timestamp_window(timestamp_s: float, now_s: float, window_s: float, what: str) -> None:
    """Refuse (403) a signed timestamp further than ``window_s`` from ``now_s``: a replay."""
    if abs(now_s - timestamp_s) > window_s:
        raise WebhookAuthError(
            WRONG,
            f"{what} is {abs(now_s - timestamp_s):.0f} s away from now, outside the"
            f" {window_s:.0f} s window (a replayed or delayed request, or a clock off)",
        )
