"""What every webhook authentication check shares: its error type and its primitives.

A provider's check (an HMAC signature, a shared secret, an OIDC token) raises
:class:`WebhookAuthError` with the HTTP status to answer - 401 when the credential
is missing, 403 when it is present but wrong, forged or outside its time window -
and a message naming what failed. The HTTP bridge counts and logs the failure and
never writes the request to Kafka.
"""

from __future__ import annotations

import hmac
from typing import Final

__all__ = ["MISSING", "WRONG", "WebhookAuthError", "check_timestamp_window", "same_secret"]

MISSING: Final = 401
WRONG: Final = 403


class WebhookAuthError(Exception):
    """A request failed authentication: answer ``status`` (401 or 403)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def same_secret(given: str | bytes, expected: str | bytes) -> bool:
    """Constant-time comparison of two secrets or digests (UTF-8 bytes for ``str``)."""
    left = given.encode("utf-8") if isinstance(given, str) else given
    right = expected.encode("utf-8") if isinstance(expected, str) else expected
    return hmac.compare_digest(left, right)


def check_timestamp_window(timestamp_s: float, now_s: float, window_s: float, what: str) -> None:
    """Refuse (403) a signed timestamp further than ``window_s`` from ``now_s``: a replay."""
    if abs(now_s - timestamp_s) > window_s:
        raise WebhookAuthError(
            WRONG,
            f"{what} is {abs(now_s - timestamp_s):.0f} s away from now, outside the"
            f" {window_s:.0f} s window (a replayed or delayed request, or a clock off)",
        )
