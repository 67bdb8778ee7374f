"""The provider routes of ``seqgate bridge http``: storage webhooks that each sign their own way.

:class:`WebhookRoutes` registers these handlers on
:class:`seqgate.connectors.sources.http_server.HttpBridge`'s
application; the bridge (the :class:`Gate`) reads bodies, refuses, filters and publishes, so
every route keeps the same contract: authentication first (401 missing, 403 wrong - a
credential header whose bytes are not UTF-8 text is wrong, refused before any check reads
it; counted, logged, never written to Kafka), 413 above the body limit, 200 only after Kafka
acknowledged every record, 503 when it did not, bad input dead-lettered with its exact bytes.

Each route decodes strictly (:func:`seqgate.connectors.parsers.normalize.normalize_with`) and hands
the
document to its own provider's parser: no shape recognition, so a body sent to ``/box`` is
read as Box's or dead-lettered.

====================  ===============================  ==========================================
route                 sender                           authentication (options)
====================  ===============================  ==========================================
``POST /gcs``         Pub/Sub push subscription        ``Authorization: Bearer`` OIDC token, RS256
                      (GCS notifications)              under the keys of ``--gcs-jwks-file``, for
                                                       ``--gcs-audience`` (and
                                                       ``--gcs-service-account``); ``exp``/``iat``
``POST /azure``       Event Grid webhook (Event Grid   ``--azure-secret`` in the query parameter
``OPTIONS /azure``    schema or CloudEvents 1.0)       ``code`` or the ``X-Seqgate-Secret`` header
                                                       (every one given must match)
``POST /supabase``    database webhook on              ``X-Seqgate-Secret`` header:
                      ``storage.objects``              ``--supabase-secret``
``POST /b2``          Backblaze B2 event notification  ``x-bz-event-notification-signature``,
                                                       HMAC-SHA256 of the body
                                                       (``--b2-signing-secret``)
``POST /box``         Box webhook V2                   ``box-signature-primary``/``-secondary``
                                                       over body + ``box-delivery-timestamp``
                                                       (``--box-primary-key``,
                                                       ``--box-secondary-key``); 10 min window
``POST /cloudinary``  Cloudinary notification          ``X-Cld-Signature`` over body +
                                                       ``X-Cld-Timestamp`` + API secret
                                                       (``--cloudinary-api-secret``, SHA-1 or
                                                       SHA-256); 2 h window
``POST /appwrite``    Appwrite storage webhook         ``X-Appwrite-Webhook-Signature``, HMAC-SHA1
                                                       of ``--appwrite-webhook-url`` + body
                                                       (``--appwrite-signature-key``)
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

import functools
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, Protocol

from aiohttp import web

from seqgate.connectors.auth.appwrite import APPWRITE_SIGNATURE_HEADER, verify_appwrite_signature
from seqgate.connectors.auth.azure import verify_azure_secret
from seqgate.connectors.auth.b2 import B2_SIGNATURE_HEADER, verify_b2_signature
from seqgate.connectors.auth.bearer_token import AUTHORIZATION
from seqgate.connectors.auth.box import BOX_SIGNATURE_HEADERS, verify_box_signature
from seqgate.connectors.auth.cloudinary import (
    CLOUDINARY_ALGORITHMS,
    CLOUDINARY_SIGNATURE_HEADER,
    CLOUDINARY_TIMESTAMP_HEADER,
    verify_cloudinary_signature,
)
from seqgate.connectors.auth.gcs_oidc import GcsPushVerifier
from seqgate.connectors.auth.shared import WebhookAuthError, readable_credentials
from seqgate.connectors.auth.supabase import verify_supabase_secret
from seqgate.connectors.parsers.appwrite import APPWRITE_EVENTS_HEADER, parse_appwrite
from seqgate.connectors.parsers.azure import (
    cloudevents_handshake_headers,
    parse_azure,
    validation_response,
)
from seqgate.connectors.parsers.b2 import parse_b2
from seqgate.connectors.parsers.box import parse_box
from seqgate.connectors.parsers.cloudinary import parse_cloudinary
from seqgate.connectors.parsers.gcs import parse_gcs
from seqgate.connectors.parsers.normalize import normalize_with
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.parsers.supabase import parse_supabase

__all__ = [
    "AZURE_SECRET_QUERY",
    "SECRET_HEADER",
    "WEBHOOK_ROUTES",
    "AppwriteSettings",
    "CloudinarySettings",
    "Gate",
    "WebhookRoutes",
    "WebhookSettings",
]

log = logging.getLogger(__name__)

WEBHOOK_ROUTES: Final = ("gcs", "azure", "supabase", "b2", "box", "cloudinary", "appwrite")
SECRET_HEADER: Final = "X-Seqgate-Secret"
AZURE_SECRET_QUERY: Final = "code"
CLOUDEVENTS_ORIGIN_HEADER: Final = "WebHook-Request-Origin"

Parser = Callable[[object, str], ParseResult]
HeaderCheck = Callable[[], object]
BodyCheck = Callable[[bytes], object]


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

    def refuse(self, route: str, status: int, reason: str) -> web.Response:
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


class WebhookRoutes:
    """The handlers of the provider routes, on top of the bridge's :class:`Gate`."""

    def __init__(self, settings: WebhookSettings, gate: Gate, clock: Callable[[], float]) -> None:
        self.settings = settings
        self.gate = gate
        self.clock = clock

    def register(self, app: web.Application) -> None:
        """Add the configured routes (and OPTIONS /azure) to ``app``."""
        handlers: dict[str, Callable[[web.Request], Awaitable[web.StreamResponse]]] = {
            "gcs": self._gcs,
            "azure": self._azure,
            "supabase": self._supabase,
            "b2": self._b2,
            "box": self._box,
            "cloudinary": self._cloudinary,
            "appwrite": self._appwrite,
        }
        for route in self.settings.enabled_routes():
            app.router.add_post(f"/{route}", handlers[route])
            if route == "azure":
                app.router.add_route("OPTIONS", "/azure", self._azure_options)

    # ---- the routes

    async def _gcs(self, request: web.Request) -> web.StreamResponse:
        verifier = self.settings.gcs
        assert verifier is not None
        await verifier.prepare(request.headers.get(AUTHORIZATION))
        return await self._receive(
            request,
            "gcs",
            parse_gcs,
            (AUTHORIZATION,),
            check_headers=lambda: verifier.verify(request.headers.get(AUTHORIZATION)),
        )

    async def _supabase(self, request: web.Request) -> web.StreamResponse:
        secret = self.settings.supabase_secret
        assert secret
        return await self._receive(
            request,
            "supabase",
            parse_supabase,
            (SECRET_HEADER,),
            check_headers=lambda: verify_supabase_secret(
                request.headers.get(SECRET_HEADER), secret
            ),
        )

    async def _b2(self, request: web.Request) -> web.StreamResponse:
        secret = self.settings.b2_signing_secret
        assert secret
        header = request.headers.get(B2_SIGNATURE_HEADER)
        return await self._receive(
            request,
            "b2",
            parse_b2,
            (B2_SIGNATURE_HEADER,),
            check_body=lambda raw: verify_b2_signature(raw, header, secret),
        )

    async def _box(self, request: web.Request) -> web.StreamResponse:
        primary, secondary = self.settings.box_primary_key, self.settings.box_secondary_key
        return await self._receive(
            request,
            "box",
            parse_box,
            BOX_SIGNATURE_HEADERS,
            check_body=lambda raw: verify_box_signature(
                raw, request.headers, primary or None, secondary or None, self.clock()
            ),
        )

    async def _cloudinary(self, request: web.Request) -> web.StreamResponse:
        config = self.settings.cloudinary
        assert config is not None
        timestamp = request.headers.get(CLOUDINARY_TIMESTAMP_HEADER)
        signature = request.headers.get(CLOUDINARY_SIGNATURE_HEADER)
        return await self._receive(
            request,
            "cloudinary",
            functools.partial(parse_cloudinary, cloud_name=config.cloud_name),
            (CLOUDINARY_TIMESTAMP_HEADER, CLOUDINARY_SIGNATURE_HEADER),
            check_body=lambda raw: verify_cloudinary_signature(
                raw,
                timestamp,
                signature,
                config.api_secret,
                self.clock(),
                algorithm=config.algorithm,
            ),
        )

    async def _appwrite(self, request: web.Request) -> web.StreamResponse:
        config = self.settings.appwrite
        assert config is not None
        signature = request.headers.get(APPWRITE_SIGNATURE_HEADER)
        return await self._receive(
            request,
            "appwrite",
            functools.partial(parse_appwrite, events=request.headers.get(APPWRITE_EVENTS_HEADER)),
            (APPWRITE_SIGNATURE_HEADER,),
            check_body=lambda raw: verify_appwrite_signature(
                config.webhook_url, raw, signature, config.signature_key
            ),
        )

    async def _azure(self, request: web.Request) -> web.StreamResponse:
        validation: list[dict[str, str]] = []

        def parse(document: object, origin: str) -> ParseResult:
            if (reply := validation_response(document)) is not None:
                validation.append(reply)
            return parse_azure(document, origin)  # the validation event itself is ignored

        answer = await self._receive(
            request,
            "azure",
            parse,
            (),  # _check_azure reads the header, and checks it for OPTIONS too
            check_headers=lambda: self._check_azure(request),
        )
        if not validation or answer.status != 200:
            return answer
        self.gate.count("handshakes")
        log.warning("Event Grid subscription validated: answering its validation code")
        return web.json_response(validation[0])

    async def _azure_options(self, request: web.Request) -> web.StreamResponse:
        """The CloudEvents webhook validation handshake (abuse protection)."""
        try:
            self._check_azure(request)
        except WebhookAuthError as error:
            return self._refuse("azure", error)
        origin = request.headers.get(CLOUDEVENTS_ORIGIN_HEADER)
        if origin is None:
            message = f"OPTIONS /azure without {CLOUDEVENTS_ORIGIN_HEADER}: not a handshake"
            return web.json_response({"error": message}, status=400)
        try:
            headers = cloudevents_handshake_headers(origin)
        except ValueError as error:
            return web.json_response({"error": str(error)}, status=400)
        self.gate.count("handshakes")
        log.warning("CloudEvents webhook validated", extra={"request_origin": origin})
        return web.Response(status=200, headers=headers)

    def _check_azure(self, request: web.Request) -> None:
        secret = self.settings.azure_secret
        assert secret
        readable_credentials(request.headers, (SECRET_HEADER,))
        verify_azure_secret(
            request.query.get(AZURE_SECRET_QUERY), request.headers.get(SECRET_HEADER), secret
        )

    # ---- the common path

    async def _receive(
        self,
        request: web.Request,
        route: str,
        parse: Parser,
        credentials: tuple[str, ...],
        *,
        check_headers: HeaderCheck | None = None,
        check_body: BodyCheck | None = None,
    ) -> web.Response:
        """Authenticate (headers before the body is read), then normalize and deliver.

        ``credentials`` are the headers the checks read: bytes that are not UTF-8
        text there are refused (403) before any check sees them."""
        try:
            readable_credentials(request.headers, credentials)
            if check_headers is not None:
                check_headers()
        except WebhookAuthError as error:
            return self._refuse(route, error)
        raw = await self.gate.read_body(request)
        if isinstance(raw, web.Response):
            return raw
        try:
            if check_body is not None:
                check_body(raw)
        except WebhookAuthError as error:
            return self._refuse(route, error)
        result = normalize_with(raw, route_origin(route), parse)
        return await self.gate.deliver(raw, route, result)

    def _refuse(self, route: str, error: WebhookAuthError) -> web.Response:
        return self.gate.refuse(route, error.status, error.message)
