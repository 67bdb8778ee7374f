"""What ``seqgate bridge http`` serves: its limits, its routes and their secrets.

:class:`HttpSettings` says which routes are served (a route whose secret is not
configured is not served at all) and which one is served without
authentication; :func:`is_loopback` tells whether a listening host can be
reached only from this machine, where that route may be served.
"""

from __future__ import annotations

import ipaddress
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from seqgate.connectors.auth.sns_signature import SnsVerifier
from seqgate.connectors.sources.webhook_routes import WebhookSettings

__all__ = [
    "DEFAULT_BODY_TIMEOUT_S",
    "DEFAULT_HEADER_TIMEOUT_S",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_CONNECTIONS",
    "ROUTES",
    "HttpSettings",
    "is_loopback",
]

DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
DEFAULT_HEADER_TIMEOUT_S: Final = 10.0
DEFAULT_BODY_TIMEOUT_S: Final = 30.0
DEFAULT_MAX_CONNECTIONS: Final = 1000
ROUTES: Final = ("s3", "sns", "eventbridge", "minio")


@dataclass(frozen=True)
class HttpSettings:
    """What the server serves, and the secrets of each route."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S  # request head, from accept or last reply
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S  # the whole body, from the end of the head
    max_connections: int = DEFAULT_MAX_CONNECTIONS  # more are answered 503 and closed
    s3_token: str | None = None
    s3_enabled: bool = True
    minio_token: str | None = None
    eventbridge_header: tuple[str, str] | None = None  # (name, value)
    sns: SnsVerifier | None = None
    confirm_subscription: Callable[[str], None] | None = None  # GET SubscribeURL
    webhooks: WebhookSettings = field(default_factory=WebhookSettings)  # /gcs ... /appwrite
    clock: Callable[[], float] = time.time  # signed timestamps (Box, Cloudinary)

    def enabled_routes(self) -> list[str]:
        enabled = {
            "s3": self.s3_enabled,
            "sns": self.sns is not None,
            "eventbridge": self.eventbridge_header is not None,
            "minio": self.minio_token is not None,
        }
        own = [route for route in ROUTES if enabled[route]]
        return [*own, *self.webhooks.enabled_routes()]

    def unauthenticated_routes(self) -> list[str]:
        """The routes served without any authentication (``/s3`` without a token)."""
        return ["s3"] if self.s3_enabled and self.s3_token is None else []


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (only local senders reach it)."""
    if not host:
        return False  # every interface
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(entry[4][0]).is_loopback for entry in found)
