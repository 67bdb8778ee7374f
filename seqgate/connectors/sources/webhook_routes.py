"""The provider routes of ``seqgate bridge http``: their settings, the bridge's :class:`Gate`,
and Event Grid's handshakes.

Each provider route (``/gcs`` ... ``/appwrite``) has its entry - path, parser,
authentication - in :data:`seqgate.connectors.sources.route_table.ROUTE_TABLE`, with the
other routes; it is served only when its secret is configured here
(:class:`WebhookSettings`). Each decodes strictly
(:func:`seqgate.connectors.parsers.normalize.normalize_with`) and hands the document to its
own provider's parser: no shape recognition, so a body sent to ``/box`` is read as Box's or
rejected.

====================  ===============================  ==========================================
route                 sender                           options
====================  ===============================  ==========================================
``POST /gcs``         Pub/Sub push subscription        ``--gcs-jwks-file``, ``--gcs-audience``
                      (GCS notifications)              (and ``--gcs-service-account``)
``POST /azure``       Event Grid webhook (Event Grid   ``--azure-secret`` (query parameter
``OPTIONS /azure``    schema or CloudEvents 1.0)       ``code`` or ``X-Seqgate-Secret`` header)
``POST /supabase``    database webhook on              ``--supabase-secret``
                      ``storage.objects``              (``X-Seqgate-Secret`` header)
``POST /b2``          Backblaze B2 event notification  ``--b2-signing-secret``
``POST /box``         Box webhook V2                   ``--box-primary-key``,
                                                       ``--box-secondary-key``
``POST /cloudinary``  Cloudinary notification          ``--cloudinary-api-secret`` (SHA-1 or
                                                       SHA-256)
``POST /appwrite``    Appwrite storage webhook         ``--appwrite-signature-key``,
                                                       ``--appwrite-webhook-url``
====================  ===============================  ==========================================

Handshakes (answered, counted as ``handshakes``, never written to Kafka; they must carry the
secret too): an Event Grid ``SubscriptionValidationEvent`` POSTed to ``/azure`` is answered
200 with ``{"validationResponse": <code>}``; a CloudEvents ``OPTIONS /azure`` with
``WebHook-Request-Origin`` is answered 200 with ``WebHook-Allowed-Origin`` (the origin
echoed) and ``WebHook-Allowed-Rate: *``; without that header, or with an invalid one, 400.

Signed timestamps (Box, Cloudinary) are checked against the bridge's clock
(``HttpSettings.clock``); the GCS token's validity against the verifier's own clock.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Final, Protocol

from aiohttp import web

from seqgate.connectors.auth.azure import verify_azure_secret
from seqgate.connectors.auth.cloudinary import CLOUDINARY_ALGORITHMS
from seqgate.connectors.auth.gcs_oidc import GcsPushVerifier
from seqgate.connectors.errors import WebhookAuthError
from seqgate.connectors.parsers.azure import (
    cloudevents_handshake_headers,
    parse_azure,
    validation_response,
)
from seqgate.connectors.parsers.normalize import normalize_with
from seqgate.connectors.parsers.results import ParseResult

__all__ = [
    "AZURE_SECRET_QUERY",
    "SECRET_HEADER",
    "WEBHOOK_ROUTES",
    "AppwriteSettings",
    "CloudinarySettings",
    "Gate",
    "WebhookSettings",
    "answer_azure_options",
    "answer_azure_validation",
    "check_azure_secret",
    "parse_azure_request",
    "route_origin",
]

log = logging.getLogger(__name__)

WEBHOOK_ROUTES: Final = ("gcs", "azure", "supabase", "b2", "box", "cloudinary", "appwrite")
SECRET_HEADER: Final = "X-Seqgate-Secret"
AZURE_SECRET_QUERY: Final = "code"
CLOUDEVENTS_ORIGIN_HEADER: Final = "WebHook-Request-Origin"
# Where parse_azure_request notes a validation event's reply for answer_azure_validation.
_VALIDATION: Final = web.RequestKey("seqgate.azure_validation", dict[str, str])


@dataclass(frozen=True)
class CloudinarySettings:
    """The product environment: its API secret, its cloud name (the bucket), its algorithm."""

    api_secret: str
    cloud_name: str
    algorithm: str = "sha1"

    def __post_init__(self) -> None:
        if not self.api_secret:
            raise ValueError("the API secret must not be empty")
        if not self.cloud_name or "/" in self.cloud_name:
            raise ValueError(f"cloud name {self.cloud_name!r}: expected a non-empty name, no '/'")
        if self.algorithm not in CLOUDINARY_ALGORITHMS:
            raise ValueError(
                f"signature algorithm {self.algorithm!r}: expected one of"
                f" {', '.join(CLOUDINARY_ALGORITHMS)}"
            )


@dataclass(frozen=True)
class AppwriteSettings:
    """The webhook's signature key and its URL exactly as configured in Appwrite (signed)."""

    signature_key: str
    webhook_url: str

    def __post_init__(self) -> None:
        if not self.signature_key or not self.webhook_url:
            raise ValueError("both the signature key and the webhook URL are required")


@dataclass(frozen=True)
class WebhookSettings:
    """The secrets of the provider routes; a route is served only when its secret is set."""

    gcs: GcsPushVerifier | None = None
    azure_secret: str | None = None
    supabase_secret: str | None = None
    b2_signing_secret: str | None = None
    box_primary_key: str | None = None
    box_secondary_key: str | None = None
    cloudinary: CloudinarySettings | None = None
    appwrite: AppwriteSettings | None = None

    def enabled_routes(self) -> list[str]:
        enabled = {
            "gcs": self.gcs is not None,
            "azure": bool(self.azure_secret),
            "supabase": bool(self.supabase_secret),
            "b2": bool(self.b2_signing_secret),
            "box": bool(self.box_primary_key or self.box_secondary_key),
            "cloudinary": self.cloudinary is not None,
            "appwrite": self.appwrite is not None,
        }
        return [route for route in WEBHOOK_ROUTES if enabled[route]]


class Gate(Protocol):
    """What the routes need from the bridge
    (:class:`seqgate.connectors.sources.http_server.HttpBridge`)."""

    async def read_body(self, request: web.Request) -> bytes | web.Response:
        """The body (counted as a request), or the 413 answer."""
        ...

    def refuse(self, route: str, error: WebhookAuthError) -> web.Response:
        """Count and log an authentication failure; the 401/403 answer."""
        ...

    async def deliver(self, raw: bytes, route: str, result: ParseResult) -> web.Response:
        """Filter and publish; 200 once Kafka acknowledged every record, else 503."""
        ...

    def count(self, name: str) -> None:
        """Add one to the bridge's counter ``name``."""
        ...


def route_origin(route: str) -> str:
    """The origin of what a route publishes."""
    return f"http:{route}"


def check_azure_secret(request: web.Request, secret: str) -> None:
    """The Event Grid secret, in the query parameter ``code`` or the secret header."""
    verify_azure_secret(
        request.query.get(AZURE_SECRET_QUERY), request.headers.get(SECRET_HEADER), secret
    )


def parse_azure_request(
    context: object, request: web.Request, raw: bytes, origin: str
) -> ParseResult:
    """Parse an Event Grid body; a validation event's reply is noted on ``request`` for
    :func:`answer_azure_validation` (the event itself is ignored)."""

    def parse(document: object, origin: str) -> ParseResult:
        if (reply := validation_response(document)) is not None:
            request.setdefault(_VALIDATION, reply)
        return parse_azure(document, origin)

    return normalize_with(raw, origin, parse)


def answer_azure_validation(gate: Gate, request: web.Request, answer: web.Response) -> web.Response:
    """The validation code instead of ``answer`` (once delivered, 200) for a validation event."""
    reply = request.get(_VALIDATION)
    if reply is None or answer.status != 200:
        return answer
    gate.count("handshakes")
    log.warning("Event Grid subscription validated: answering its validation code")
    return web.json_response(reply)


async def answer_azure_options(gate: Gate, request: web.Request) -> web.StreamResponse:
    """The CloudEvents webhook validation handshake (abuse protection), once authenticated."""
    origin = request.headers.get(CLOUDEVENTS_ORIGIN_HEADER)
    if origin is None:
        message = f"OPTIONS /azure without {CLOUDEVENTS_ORIGIN_HEADER}: not a handshake"
        return web.json_response({"error": message}, status=400)
    try:
        headers = cloudevents_handshake_headers(origin)
    except ValueError as error:
        return web.json_response({"error": str(error)}, status=400)
    gate.count("handshakes")
    log.warning("CloudEvents webhook validated", extra={"request_origin": origin})
    return web.Response(status=200, headers=headers)
