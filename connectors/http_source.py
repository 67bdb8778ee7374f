"""The webhook server (``seqgate bridge http``): answer 2xx only after Kafka has it.

Routes (origin of what they publish: ``http:<route>``):

=================  ======================================  ==================================
route              sender                                  authentication
=================  ======================================  ==================================
``POST /s3``       anything the normalizer knows           ``Authorization: Bearer`` the
                                                           ``s3_token``, if one is configured
``POST /sns``      SNS HTTP(S) subscriptions               the SNS message signature
                                                           (:mod:`connectors.sns_signature`),
                                                           topic pinned, timestamp window
``POST /eventbridge``  EventBridge API destinations        the configured header's value
``POST /minio``    MinIO's webhook target                  ``Authorization: Bearer`` the token
``POST /gcs``      GCS notifications by Pub/Sub push       OIDC token (``Authorization:
                                                           Bearer``) from ``--gcs-jwks-file``
                                                           keys, ``--gcs-audience``
``POST /azure``    Azure Event Grid (both schemas; and     ``--azure-secret`` in query
``OPTIONS /azure`` the two validation handshakes)          ``code`` or ``X-Seqgate-Secret``
``POST /supabase`` Supabase database webhook               ``X-Seqgate-Secret`` header
``POST /b2``       Backblaze B2 event notifications        HMAC-SHA256 of the body
``POST /box``      Box webhooks V2                         HMAC-SHA256 (primary or secondary
                                                           key), 10 min timestamp window
``POST /cloudinary``  Cloudinary notifications             SHA-1/SHA-256 signature, 2 h
                                                           timestamp window
``POST /appwrite`` Appwrite storage webhooks               HMAC-SHA1 of the configured URL
                                                           and the body
=================  ======================================  ==================================

The provider routes (``/gcs`` ... ``/appwrite``) live in
:mod:`connectors.webhook_routes`, which details their headers, options and
handshakes; each decodes strictly and runs its own provider's parser
(:func:`connectors.normalize.normalize_with`). A route whose secret (or, for
``/sns``, topic list) is not configured is not served at all (404). Secrets
are compared with :func:`hmac.compare_digest`.

Per request: authenticate (401 when the credential is missing, 403 when it is
wrong; counted, logged, **never written to Kafka**; a signature over the body
is checked once the body is read), read the body (413 above
``max_body_bytes``), normalize it, drop what the filter does not admit, and
publish the events and dead letters. The reply is 200 with a small JSON
summary only after Kafka acknowledged every record of the request; 503 when it
did not (the provider retries; records Kafka did take are published again, at
least once).

Operations (no authentication, whatever routes are configured): ``GET /metrics``
(Prometheus: records by outcome, dead letters and ignored records by reason,
authentication failures by route, publish failures), ``GET /healthz`` (200 while
the server runs, 503 once it is stopping) and ``GET /readyz`` (200 when the
producer gets an answer from Kafka, else 503). They hold counts, never payloads
nor secrets; where the webhook port is exposed publicly, block them at the proxy.

Publishing: one :class:`EventPublisher` is shared. It is driven from a single
worker thread, so the event loop never blocks. Requests that arrive while a
flush is running are queued and submitted together, then one flush confirms
them all (group commit): each request's future resolves only after a flush that
started after its records were queued has succeeded, so no 200 can precede the
acknowledgement of its records. A failed flush fails every request of the
group (503), which is conservative: at worst a record Kafka did take is
delivered again.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Final

from aiohttp import web

from connectors.filters import BridgeTally, EventFilter
from connectors.kafka_publisher import EventPublisher, PublishError
from connectors.normalize import normalize
from connectors.results import ParseResult
from connectors.s3_native import DEFAULT_S3_PARSE_OPTIONS, S3ParseOptions
from connectors.sns_signature import (
    SUBSCRIPTION_CONFIRMATION,
    UNSUBSCRIBE_CONFIRMATION,
    SnsVerificationError,
    SnsVerifier,
)
from connectors.webhook_routes import WebhookRoutes, WebhookSettings, route_origin
from streams.metrics import BridgeMetrics

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES: Final = 1024 * 1024
ROUTES: Final = ("s3", "sns", "eventbridge", "minio")


@dataclass(frozen=True)
class HttpSettings:
    """What the server serves, and the secrets of each route."""

    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
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


def confirm_by_get(url: str, timeout_s: float = 10.0) -> None:
    """Confirm an SNS subscription: GET its SubscribeURL (already host-checked)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        response.read(64 * 1024)


@dataclass
class HttpStats:
    """What the server did besides publishing (auth failures per route, ...)."""

    counts: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, int]:
        names = (
            "requests",
            "auth_failures",
            "too_large",
            "publish_failures",
            "subscriptions_confirmed",
            "confirm_failures",
            "handshakes",
        )
        return {name: self.counts[name] for name in names}


class _Pending:
    __slots__ = ("future", "origin", "raw", "result")

    def __init__(
        self, result: ParseResult, raw: bytes, origin: str, future: asyncio.Future[None]
    ) -> None:
        self.result = result
        self.raw = raw
        self.origin = origin
        self.future = future


class GroupPublisher:
    """Submit and flush from one thread; concurrent requests share a flush."""

    def __init__(self, publisher: EventPublisher) -> None:
        self.publisher = publisher
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seqgate-publish")
        self._pending: list[_Pending] = []
        self._drainer: asyncio.Task[None] | None = None

    async def publish(self, result: ParseResult, raw: bytes, origin: str) -> None:
        """Return once Kafka acknowledged the records; raise PublishError otherwise."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._pending.append(_Pending(result, raw, origin, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        # Shielded: a client that hangs up does not cancel the group's flush.
        await asyncio.shield(future)

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            group, self._pending = self._pending, []
            try:
                await loop.run_in_executor(self._executor, self._submit_and_flush, group)
            except PublishError as error:
                outcome: BaseException | None = error
            except Exception as error:  # never leave a request waiting
                log.exception("publishing failed unexpectedly")
                outcome = PublishError(str(error))
            else:
                outcome = None
            for pending in group:
                if pending.future.done():
                    continue
                if outcome is None:
                    pending.future.set_result(None)
                else:
                    pending.future.set_exception(outcome)

    def _submit_and_flush(self, group: list[_Pending]) -> None:
        for pending in group:
            self.publisher.submit(pending.result, pending.raw, pending.origin)
        self.publisher.flush()

    async def close(self) -> None:
        """Wait for the requests in hand, then flush and close the producer."""
        if self._drainer is not None:
            await self._drainer
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self.publisher.close)
        finally:
            self._executor.shutdown(wait=True)


class HttpBridge:
    """The routes' handlers and their counters (the :class:`~connectors.webhook_routes.Gate`
    of the provider routes)."""

    def __init__(
        self,
        settings: HttpSettings,
        publisher: EventPublisher,
        event_filter: EventFilter | None = None,
        *,
        s3_options: S3ParseOptions = DEFAULT_S3_PARSE_OPTIONS,
    ) -> None:
        self.settings = settings
        self._s3_options = s3_options
        self.publisher = GroupPublisher(publisher)
        self._filter = event_filter or EventFilter()
        self.tally = BridgeTally()
        self.stats = HttpStats()
        self.auth_failures: Counter[str] = Counter()
        self.metrics = BridgeMetrics(self.tally.as_dict)
        self.metrics.health.set_ready(True)

    # ---- the application

    def application(self) -> web.Application:
        app = web.Application(client_max_size=self.settings.max_body_bytes)
        handlers = {
            "s3": self._s3,
            "sns": self._sns,
            "eventbridge": self._eventbridge,
            "minio": self._minio,
        }
        for route in self.settings.enabled_routes():
            if route in handlers:
                app.router.add_post(f"/{route}", handlers[route])
        WebhookRoutes(self.settings.webhooks, self, self.settings.clock).register(app)
        app.router.add_get("/metrics", self._metrics)
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        return app

    # ---- operations (unauthenticated: counts only)

    async def _metrics(self, request: web.Request) -> web.StreamResponse:
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        body = generate_latest(self.metrics.registry)
        return web.Response(body=body, headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def _healthz(self, request: web.Request) -> web.StreamResponse:
        self.metrics.health.beat()  # the event loop answers
        alive, why = self.metrics.health.alive()
        return web.Response(status=200 if alive else 503, text=why + "\n")

    async def _readyz(self, request: web.Request) -> web.StreamResponse:
        ready, why = self.metrics.health.ready()
        if ready:
            loop = asyncio.get_running_loop()
            reachable = await loop.run_in_executor(None, self.publisher.publisher.reachable, 2.0)
            ready, why = (True, "ready") if reachable else (False, "Kafka does not answer")
        return web.Response(status=200 if ready else 503, text=why + "\n")

    # ---- handlers

    async def _s3(self, request: web.Request) -> web.StreamResponse:
        token = self.settings.s3_token
        if token is not None and (refused := self._check_bearer(request, "s3", token)):
            return refused
        return await self._forward(request, "s3")

    async def _minio(self, request: web.Request) -> web.StreamResponse:
        token = self.settings.minio_token
        assert token is not None
        if refused := self._check_bearer(request, "minio", token):
            return refused
        return await self._forward(request, "minio")

    async def _eventbridge(self, request: web.Request) -> web.StreamResponse:
        assert self.settings.eventbridge_header is not None
        name, expected = self.settings.eventbridge_header
        given = request.headers.get(name)
        if given is None:
            return self.refuse("eventbridge", 401, f"header {name} missing")
        if not _same_secret(given, expected):
            return self.refuse("eventbridge", 403, f"header {name} does not match")
        return await self._forward(request, "eventbridge")

    async def _sns(self, request: web.Request) -> web.StreamResponse:
        verifier = self.settings.sns
        assert verifier is not None
        raw = await self.read_body(request)
        if isinstance(raw, web.Response):
            return raw
        try:
            document = json.loads(raw)
        except (ValueError, RecursionError):
            return self.refuse("sns", 403, "the body is not an SNS message (not JSON)")
        if not isinstance(document, dict):
            return self.refuse("sns", 403, "the body is not an SNS message (not an object)")
        loop = asyncio.get_running_loop()
        try:
            # The certificate may be fetched over the network: not on the loop.
            kind = await loop.run_in_executor(None, verifier.verify, document)
        except SnsVerificationError as error:
            return self.refuse("sns", 403, str(error))
        if kind == SUBSCRIPTION_CONFIRMATION:
            return await self._confirm(document)
        if kind == UNSUBSCRIBE_CONFIRMATION:
            log.warning(
                "SNS unsubscribed this endpoint", extra={"topic_arn": document.get("TopicArn")}
            )
            return _json(200, {"status": "unsubscribe_noted"})
        return await self.deliver(raw, "sns", normalize(raw, route_origin("sns"), self._s3_options))

    async def _confirm(self, document: dict[str, object]) -> web.Response:
        url = str(document["SubscribeURL"])
        confirm = self.settings.confirm_subscription or confirm_by_get
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, confirm, url)
        except Exception as error:
            self.stats.counts["confirm_failures"] += 1
            log.warning(
                "SNS subscription confirmation failed; SNS will retry",
                extra={"topic_arn": document.get("TopicArn"), "error": str(error)},
            )
            return _json(503, {"status": "confirmation_failed"})
        self.stats.counts["subscriptions_confirmed"] += 1
        log.warning("SNS subscription confirmed", extra={"topic_arn": document.get("TopicArn")})
        return _json(200, {"status": "subscription_confirmed"})

    # ---- steps

    async def _forward(self, request: web.Request, route: str) -> web.StreamResponse:
        raw = await self.read_body(request)
        if isinstance(raw, web.Response):
            return raw
        return await self.deliver(raw, route, normalize(raw, route_origin(route), self._s3_options))

    async def read_body(self, request: web.Request) -> bytes | web.Response:
        """The body of a request (counted), or the 413 answer above ``max_body_bytes``."""
        self.stats.counts["requests"] += 1
        limit = self.settings.max_body_bytes
        length = request.content_length
        try:
            if length is not None and length > limit:
                raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=length)
            return await request.read()
        except web.HTTPRequestEntityTooLarge:
            self.stats.counts["too_large"] += 1
            return _json(413, {"error": f"body larger than {limit} bytes"})

    async def deliver(self, raw: bytes, route: str, normalized: ParseResult) -> web.Response:
        """Filter and publish one request's result; 200 after Kafka's acknowledgement, else 503."""
        origin = route_origin(route)
        result, filtered = self._filter.apply(normalized)
        try:
            await self.publisher.publish(result, raw, origin)
        except PublishError as error:
            self.stats.counts["publish_failures"] += 1
            self.metrics.publish_failures.inc()
            log.warning(
                "Kafka did not acknowledge the request: answering 503 so that the sender retries",
                extra={"route": route, "error": str(error)},
            )
            return _json(503, {"error": "Kafka did not acknowledge the records; retry"})
        self.tally.add(result, filtered)
        for rejection in result.rejections:
            self.metrics.rejected.labels(str(rejection.reason)).inc()
        for ignored in result.ignored:
            self.metrics.ignored.labels(str(ignored.reason)).inc()
        return _json(
            200,
            {
                "published": len(result.events),
                "filtered": filtered,
                "ignored": len(result.ignored),
                "rejected": len(result.rejections),
            },
        )

    def _check_bearer(self, request: web.Request, route: str, token: str) -> web.Response | None:
        header = request.headers.get("Authorization")
        if header is None:
            return self.refuse(route, 401, "Authorization header missing")
        scheme, _, given = header.partition(" ")
        if scheme.lower() != "bearer":
            return self.refuse(route, 401, "Authorization is not a Bearer token")
        if not _same_secret(given.strip(), token):
            return self.refuse(route, 403, "Bearer token does not match")
        return None

    def refuse(self, route: str, status: int, reason: str) -> web.Response:
        """Count and log an authentication failure; answer 401 (missing) or 403 (wrong)."""
        self.stats.counts["auth_failures"] += 1
        self.auth_failures[route] += 1
        self.metrics.auth_failures.labels(route).inc()
        log.warning(
            "refused an unauthenticated request: nothing written to Kafka",
            extra={"route": route, "status": status, "reason": reason},
        )
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        body = {"error": "unauthorized" if status == 401 else "forbidden"}
        return web.json_response(body, status=status, headers=headers)

    def count(self, name: str) -> None:
        self.stats.counts[name] += 1

    async def close(self) -> None:
        await self.publisher.close()

    def summary(self) -> dict[str, int]:
        return {**self.tally.as_dict(), **self.stats.as_dict()}


def _same_secret(given: str, expected: str) -> bool:
    """Constant-time comparison (of the UTF-8 bytes: compare_digest wants ASCII for str)."""
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


def _json(status: int, body: dict[str, object]) -> web.Response:
    return web.json_response(body, status=status)


async def serve(
    bridge: HttpBridge,
    host: str,
    port: int,
    stop: asyncio.Event,
    *,
    shutdown_timeout_s: float = 30.0,
    on_listening: Callable[[str, int], None] | None = None,
) -> None:
    """Serve until ``stop`` is set; then stop accepting, drain, flush and close."""
    runner = web.AppRunner(
        bridge.application(), shutdown_timeout=shutdown_timeout_s, access_log=None
    )
    await runner.setup()
    started = time.monotonic()
    try:
        site = web.TCPSite(runner, host, port)
        await site.start()
        bound_host, bound_port = _bound(runner, host, port)
        if on_listening is not None:
            on_listening(bound_host, bound_port)
        await stop.wait()
        bridge.metrics.health.stop()  # /healthz and /readyz: 503 while draining
        started = time.monotonic()
        log.info("stopping: no new connections; draining requests in flight")
    finally:
        # Closes the listening socket, waits up to shutdown_timeout for handlers.
        await runner.cleanup()
    try:
        await bridge.close()
    finally:
        log.info("stopped", extra={"seconds": round(time.monotonic() - started, 3)})


def _bound(runner: web.AppRunner, host: str, port: int) -> tuple[str, int]:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return str(address[0]), int(address[1])
    return host, port
