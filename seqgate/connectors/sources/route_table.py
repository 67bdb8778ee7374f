"""The routes of ``seqgate bridge http``: one entry each - path, parser, authentication.

:data:`ROUTE_TABLE` is where to look for "how is route X authenticated". Each
:class:`Route` names its path, its parser and exactly one authentication:

* :class:`HeaderCheck` - the credential is in the request's headers (a bearer token, a
  shared secret, an OIDC token): checked **before the body is read**, so a refused
  request costs no body;
* :class:`BodyCheck` - a signature over the body (SNS, B2, Box, Cloudinary, Appwrite):
  checked once the body is read (413/408 first), the headers it reads being refused
  (403) before that when their bytes are not UTF-8 text.

Every check raises the one error family,
:class:`~seqgate.connectors.errors.WebhookAuthError` (SNS's
:class:`~seqgate.connectors.errors.SnsVerificationError` is one, always
403), and :func:`receive` hands every such failure to the bridge's
:meth:`~seqgate.connectors.sources.webhook_routes.Gate.refuse`, which counts and logs it
and answers :func:`refusal`: 401 ``{"error": "unauthorized"}`` with ``WWW-Authenticate:
Bearer`` for a missing credential, 403 ``{"error": "forbidden"}`` for a wrong one.
Nothing refused is ever written to Kafka.

``/s3`` is the one route whose check passes without a configured token (served so only
on a loopback address: :meth:`HttpSettings.unauthenticated_routes`). A route is served
only when :meth:`HttpSettings.enabled_routes` names it (its secret is configured).
After authentication a route is delivered (:func:`deliver`: parse, filter, publish)
unless its entry names its own ``respond`` (SNS handshakes, Event Grid validation);
``handshake`` answers ``OPTIONS`` on the path, after the same header check.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final, TypeVar

from aiohttp import web

from seqgate.connectors.auth.appwrite import APPWRITE_SIGNATURE_HEADER, verify_appwrite_signature
from seqgate.connectors.auth.b2 import B2_SIGNATURE_HEADER, verify_b2_signature
from seqgate.connectors.auth.bearer_token import AUTHORIZATION, verify_bearer_token
from seqgate.connectors.auth.box import BOX_SIGNATURE_HEADERS, verify_box_signature
from seqgate.connectors.auth.cloudinary import (
    CLOUDINARY_SIGNATURE_HEADER,
    CLOUDINARY_TIMESTAMP_HEADER,
    verify_cloudinary_signature,
)
from seqgate.connectors.auth.header_secret import verify_header_secret
from seqgate.connectors.auth.shared import readable_credentials
from seqgate.connectors.auth.supabase import verify_supabase_secret
from seqgate.connectors.errors import MISSING, WebhookAuthError
from seqgate.connectors.parsers.appwrite import APPWRITE_EVENTS_HEADER, parse_appwrite
from seqgate.connectors.parsers.b2 import parse_b2
from seqgate.connectors.parsers.box import parse_box
from seqgate.connectors.parsers.cloudinary import parse_cloudinary
from seqgate.connectors.parsers.gcs import parse_gcs
from seqgate.connectors.parsers.normalize import normalize_with
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.parsers.supabase import parse_supabase
from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.connectors.sources.sns_route import SnsMessage, answer_sns, confirm_by_get, verify_sns
from seqgate.connectors.sources.webhook_routes import (
    SECRET_HEADER,
    Gate,
    answer_azure_options,
    answer_azure_validation,
    check_azure_secret,
    parse_azure_request,
    route_origin,
)

__all__ = [
    "ROUTE_TABLE",
    "BodyCheck",
    "HeaderCheck",
    "Received",
    "Route",
    "RouteContext",
    "deliver",
    "receive",
    "refusal",
    "register",
]

T = TypeVar("T")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class RouteContext:
    """What the entries read: the bridge's settings (secrets, clock) and its S3 normalizer."""

    settings: HttpSettings
    normalize_s3: Callable[[bytes, str], ParseResult]  # shape recognition, the S3 options


Parse = Callable[[RouteContext, web.Request, bytes, str], ParseResult]
"""A route's parser: (context, request, body, origin) -> what the body holds."""


@dataclass(frozen=True)
class HeaderCheck:
    """The credential is in the headers: ``check`` raises WebhookAuthError, before the body."""

    check: Callable[[RouteContext, web.Request], object]
    reads: tuple[str, ...] = ()  # refused (403) when not UTF-8 text, before ``check``
    # Awaited first, never raises: lets the GCS key cache refresh for this token.
    prepare: Callable[[RouteContext, web.Request], Awaitable[None]] | None = None


@dataclass(frozen=True)
class BodyCheck:
    """A signature over the body: ``check`` raises WebhookAuthError once the body is read;
    what it returns is the request's ``proof`` (SNS: the verified message)."""

    check: Callable[[RouteContext, web.Request, bytes], object]
    reads: tuple[str, ...] = ()  # refused (403) when not UTF-8 text, before the body is read
    off_loop: bool = False  # may touch the network (SNS certificate): run in the executor


@dataclass(frozen=True)
class Received:
    """An authenticated request with its body."""

    route: Route
    context: RouteContext
    request: web.Request
    raw: bytes
    proof: object = None


Respond = Callable[[Received, Gate], Awaitable[web.Response]]
Handshake = Callable[[Gate, web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True)
class Route:
    """One route: ``POST <path>``, parsed by ``parse``, authenticated by ``auth``."""

    path: str
    parse: Parse
    auth: HeaderCheck | BodyCheck
    respond: Respond | None = None  # instead of deliver(), once authenticated
    handshake: Handshake | None = None  # OPTIONS <path>, after the header check

    @property
    def name(self) -> str:
        """The route's name: its metrics label and its origin (``http:<name>``)."""
        return self.path.removeprefix("/")


def refusal(error: WebhookAuthError) -> web.Response:
    """The answer to every failed authentication: 401 when the credential is missing
    (``WWW-Authenticate: Bearer``), 403 when it is wrong."""
    if error.status == MISSING:
        return web.json_response(
            {"error": "unauthorized"}, status=401, headers={"WWW-Authenticate": "Bearer"}
        )
    return web.json_response({"error": "forbidden"}, status=error.status)


async def receive(
    route: Route, context: RouteContext, gate: Gate, request: web.Request
) -> web.StreamResponse:
    """Authenticate (headers before the body is read), then answer: deliver or respond."""
    try:
        await _check_headers(route.auth, context, request)
    except WebhookAuthError as error:
        return gate.refuse(route.name, error)
    raw = await gate.read_body(request)
    if isinstance(raw, web.Response):
        return raw
    proof: object = None
    if isinstance(route.auth, BodyCheck):
        try:
            proof = await _check_body(route.auth, context, request, raw)
        except WebhookAuthError as error:
            return gate.refuse(route.name, error)
    received = Received(route, context, request, raw, proof)
    return await (route.respond or deliver)(received, gate)


async def deliver(received: Received, gate: Gate) -> web.Response:
    """Parse the body with the route's parser, then filter and publish it."""
    route = received.route
    origin = route_origin(route.name)
    result = route.parse(received.context, received.request, received.raw, origin)
    return await gate.deliver(received.raw, route.name, result)


async def _check_headers(
    auth: HeaderCheck | BodyCheck, context: RouteContext, request: web.Request
) -> None:
    if isinstance(auth, BodyCheck):
        readable_credentials(request.headers, auth.reads)
        return
    if auth.prepare is not None:
        await auth.prepare(context, request)
    readable_credentials(request.headers, auth.reads)
    auth.check(context, request)


async def _check_body(
    auth: BodyCheck, context: RouteContext, request: web.Request, raw: bytes
) -> object:
    if not auth.off_loop:
        return auth.check(context, request, raw)
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, auth.check, context, request, raw)


def register(app: web.Application, route: Route, context: RouteContext, gate: Gate) -> None:
    """Serve ``route`` on ``app``: POST, and OPTIONS when it has a handshake."""

    async def post(request: web.Request) -> web.StreamResponse:
        return await receive(route, context, gate, request)

    app.router.add_post(route.path, post)
    handshake = route.handshake
    if handshake is None:
        return
    if not isinstance(route.auth, HeaderCheck):
        raise ValueError(f"{route.path}: a handshake needs a header check")

    async def options(request: web.Request) -> web.StreamResponse:
        try:
            await _check_headers(route.auth, context, request)
        except WebhookAuthError as error:
            return gate.refuse(route.name, error)
        return await handshake(gate, request)

    app.router.add_route("OPTIONS", route.path, options)


# ---- what the entries read


def _configured(value: T | None) -> T:
    assert value is not None  # a route whose secret is not configured is not served
    return value


def _s3_token(context: RouteContext, request: web.Request) -> None:
    token = context.settings.s3_token
    if token is not None:  # without one, /s3 is open (unauthenticated_routes)
        verify_bearer_token(request.headers, token)


async def _gcs_prepare(context: RouteContext, request: web.Request) -> None:
    await _configured(context.settings.webhooks.gcs).prepare(request.headers.get(AUTHORIZATION))


def _verify_sns(context: RouteContext, request: web.Request, raw: bytes) -> SnsMessage:
    return verify_sns(_configured(context.settings.sns), raw)


async def _answer_sns(received: Received, gate: Gate) -> web.Response:
    assert isinstance(received.proof, SnsMessage)
    confirm = received.context.settings.confirm_subscription or confirm_by_get
    return await answer_sns(gate, confirm, received.proof, lambda: deliver(received, gate))


async def _answer_azure(received: Received, gate: Gate) -> web.Response:
    return answer_azure_validation(gate, received.request, await deliver(received, gate))


def _s3_family(context: RouteContext, request: web.Request, raw: bytes, origin: str) -> ParseResult:
    return context.normalize_s3(raw, origin)


def _strictly(parser: Callable[[object, str], ParseResult]) -> Parse:
    """Decode strictly, then hand the document to this provider's parser."""
    return lambda context, request, raw, origin: normalize_with(raw, origin, parser)


def _cloudinary(
    context: RouteContext, request: web.Request, raw: bytes, origin: str
) -> ParseResult:
    cloud_name = _configured(context.settings.webhooks.cloudinary).cloud_name
    return normalize_with(raw, origin, functools.partial(parse_cloudinary, cloud_name=cloud_name))


def _appwrite(context: RouteContext, request: web.Request, raw: bytes, origin: str) -> ParseResult:
    events = request.headers.get(APPWRITE_EVENTS_HEADER)
    return normalize_with(raw, origin, functools.partial(parse_appwrite, events=events))


# ---- the table

ROUTE_TABLE: Final[tuple[Route, ...]] = (
    Route(
        "/s3",
        parse=_s3_family,
        auth=HeaderCheck(check=_s3_token),  # Authorization: Bearer --s3-token, if configured
    ),
    Route(
        "/sns",
        parse=_s3_family,
        # The message signature, topic pinned, timestamp window (auth.sns_signature).
        auth=BodyCheck(check=_verify_sns, off_loop=True),
        respond=_answer_sns,  # confirms subscriptions, notes unsubscriptions
    ),
    Route(
        "/eventbridge",
        parse=_s3_family,
        auth=HeaderCheck(
            check=lambda c, r: verify_header_secret(
                r.headers, *_configured(c.settings.eventbridge_header)
            )
        ),
    ),
    Route(
        "/minio",
        parse=_s3_family,
        auth=HeaderCheck(
            check=lambda c, r: verify_bearer_token(r.headers, _configured(c.settings.minio_token))
        ),
    ),
    Route(
        "/gcs",
        parse=_strictly(parse_gcs),
        auth=HeaderCheck(
            check=lambda c, r: _configured(c.settings.webhooks.gcs).verify(
                r.headers.get(AUTHORIZATION)
            ),
            reads=(AUTHORIZATION,),
            prepare=_gcs_prepare,
        ),
    ),
    Route(
        "/azure",
        parse=parse_azure_request,  # notes a validation event for _answer_azure
        auth=HeaderCheck(
            check=lambda c, r: check_azure_secret(r, _configured(c.settings.webhooks.azure_secret)),
            reads=(SECRET_HEADER,),
        ),
        respond=_answer_azure,
        handshake=answer_azure_options,  # CloudEvents' validation
    ),
    Route(
        "/supabase",
        parse=_strictly(parse_supabase),
        auth=HeaderCheck(
            check=lambda c, r: verify_supabase_secret(
                r.headers.get(SECRET_HEADER), _configured(c.settings.webhooks.supabase_secret)
            ),
            reads=(SECRET_HEADER,),
        ),
    ),
    Route(
        "/b2",
        parse=_strictly(parse_b2),
        auth=BodyCheck(
            check=lambda c, r, raw: verify_b2_signature(
                raw,
                r.headers.get(B2_SIGNATURE_HEADER),
                _configured(c.settings.webhooks.b2_signing_secret),
            ),
            reads=(B2_SIGNATURE_HEADER,),
        ),
    ),
    Route(
        "/box",
        parse=_strictly(parse_box),
        auth=BodyCheck(
            check=lambda c, r, raw: verify_box_signature(
                raw,
                r.headers,
                c.settings.webhooks.box_primary_key or None,
                c.settings.webhooks.box_secondary_key or None,
                c.settings.clock(),
            ),
            reads=BOX_SIGNATURE_HEADERS,
        ),
    ),
    Route(
        "/cloudinary",
        parse=_cloudinary,
        auth=BodyCheck(
            check=lambda c, r, raw: verify_cloudinary_signature(
                raw,
                r.headers.get(CLOUDINARY_TIMESTAMP_HEADER),
                r.headers.get(CLOUDINARY_SIGNATURE_HEADER),
                _configured(c.settings.webhooks.cloudinary).api_secret,
                c.settings.clock(),
                algorithm=_configured(c.settings.webhooks.cloudinary).algorithm,
            ),
            reads=(CLOUDINARY_TIMESTAMP_HEADER, CLOUDINARY_SIGNATURE_HEADER),
        ),
    ),
    Route(
        "/appwrite",
        parse=_appwrite,
        auth=BodyCheck(
            check=lambda c, r, raw: verify_appwrite_signature(
                _configured(c.settings.webhooks.appwrite).webhook_url,
                raw,
                r.headers.get(APPWRITE_SIGNATURE_HEADER),
                _configured(c.settings.webhooks.appwrite).signature_key,
            ),
            reads=(APPWRITE_SIGNATURE_HEADER,),
        ),
    ),
)
"""Every route the bridge can serve, in :data:`HttpSettings.enabled_routes` order."""
