"""The webhook server (``seqgate bridge http``): answer 2xx only after Kafka has it.

Routes (origin of what they publish: ``http:<route>``): ``/s3`` (anything the
normalizer knows), ``/sns`` (SNS HTTP(S) subscriptions), ``/eventbridge`` (EventBridge
API destinations), ``/minio`` (MinIO's webhook target) and the provider routes ``/gcs``,
``/azure``, ``/supabase``, ``/b2``, ``/box``, ``/cloudinary``, ``/appwrite``
(:mod:`seqgate.connectors.sources.webhook_routes`). Each one's path, parser and
authentication are its entry in
:data:`seqgate.connectors.sources.route_table.ROUTE_TABLE`: look there for how a route
is authenticated. A route whose secret (or, for ``/sns``, topic list) is not configured
is not served at all (404). Every check lives in :mod:`seqgate.connectors.auth`;
secrets are compared in constant time
(:func:`seqgate.connectors.auth.shared.same_secret`).

Exposure: ``/s3`` without ``s3_token`` is the one route served without any
authentication (:meth:`HttpSettings.unauthenticated_routes`). ``seqgate bridge
http`` serves it so only on a loopback address (:func:`is_loopback`; the
default host is 127.0.0.1) and otherwise refuses to start, unless
``--s3-token``, ``--no-s3`` or ``--allow-unauthenticated`` is given.

Per request: authenticate (401 when the credential is missing, 403 when it is
wrong - a credential header whose bytes are not UTF-8 text is wrong; counted,
logged, **never written to Kafka**; a signature over the body is checked once
the body is read), read the body (413 above ``max_body_bytes``; 408 and the
connection closed when it has not all arrived within ``body_timeout_s``),
normalize it, drop what the filter does not admit, and publish the events and
rejected records. The reply is 200 with a small JSON summary only after Kafka
acknowledged every record of the request; 503 when it did not (the provider
retries; records Kafka did take are published again, at least once).

Connections (:class:`seqgate.connectors.sources.http_connections.ConnectionGuard`): at most
``max_connections`` at once, another is answered 503 (``Retry-After: 1``) and
closed at once; a connection that has not sent a complete request head within
``header_timeout_s`` of its accept or of its previous reply is closed (so idle
keep-alive connections too). Each such close is counted (``header_timeouts``,
``body_timeouts``, ``connections_refused``;
``seqgate_bridge_connections_closed_total{reason}``).

Operations (no authentication, whatever routes are configured): ``GET /metrics``
(Prometheus: records by outcome, rejected records and ignored records by reason,
authentication failures by route, publish failures), ``GET /healthz`` (200 while
the server runs, 503 once it is stopping) and ``GET /readyz`` (200 when the
producer gets an answer from Kafka, else 503). They hold counts, never payloads
nor secrets; where the webhook port is exposed publicly, block them at the proxy.

Publishing: one :class:`EventPublisher` is shared, with group commit
(:class:`seqgate.connectors.sources.group_publisher.GroupPublisher`). Each request is
answered from the delivery reports of its own records
(:class:`seqgate.connectors.publish.publisher.Delivery`): 200 only when every one of its
events and rejected records was acknowledged, 503 when any was not - a partial failure
answers 503 too, and the part Kafka did take is delivered again by the sender's retry
(deduplicated downstream by event id). A request whose records were all acknowledged is
never answered 503 because of another one. A request whose records cannot be queued (a
record above the producer's ``message.max.bytes``, a queue full past the delivery
timeout) fails alone (503, one log line); an event that cannot be encoded is
rejected instead (``invalid_field``, with the encoder's message) and the request
answered 200. The counters (summary, ``/metrics``) count what was written: the records
of the requests answered 200.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Middleware
from prometheus_client import Counter as PromCounter

from seqgate.connectors.errors import PublishError, WebhookAuthError
from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.parsers.s3.native import DEFAULT_S3_PARSE_OPTIONS, S3ParseOptions
from seqgate.connectors.publish.filters import BridgeTally, EventFilter
from seqgate.connectors.publish.publisher import EventPublisher
from seqgate.connectors.sources.group_publisher import GroupPublisher
from seqgate.connectors.sources.http_connections import ConnectionGuard
from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.connectors.sources.route_table import ROUTE_TABLE, RouteContext, refusal, register
from seqgate.connectors.sources.webhook_routes import route_origin
from seqgate.runtime.failure_spell import FailureSpell
from seqgate.runtime.metrics import BridgeMetrics

log = logging.getLogger(__name__)


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
            "header_timeouts",
            "body_timeouts",
            "connections_refused",
        )
        return {name: self.counts[name] for name in names}


class HttpBridge:
    """The routes of :data:`~seqgate.connectors.sources.route_table.ROUTE_TABLE` on one
    application, and their counters (their
    :class:`~seqgate.connectors.sources.webhook_routes.Gate`)."""

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
        # Kafka refusing writes fails every request alike: one warning for the spell.
        self._unacknowledged = FailureSpell(
            log,
            "Kafka did not acknowledge the request: answering 503 so that the sender retries",
            "Kafka acknowledges the bridge's records again",
        )
        self.auth_failures: Counter[str] = Counter()
        self.metrics = BridgeMetrics(self.tally.as_dict)
        self.metrics.health.set_ready(True)
        self.closed_connections = PromCounter(
            "seqgate_bridge_connections_closed",
            "Connections the HTTP bridge closed: header_timeout, body_timeout, over_limit.",
            ["reason"],
            registry=self.metrics.registry,
        )

    # ---- the application

    def application(self, *middlewares: Middleware) -> web.Application:
        app = web.Application(
            client_max_size=self.settings.max_body_bytes, middlewares=list(middlewares)
        )
        context = RouteContext(self.settings, self._normalize_s3)
        table = {route.name: route for route in ROUTE_TABLE}
        for name in self.settings.enabled_routes():
            register(app, table[name], context, self)
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

    # ---- steps

    def _normalize_s3(self, raw: bytes, origin: str) -> ParseResult:
        """The shape-recognizing normalizer (/s3, /sns, /eventbridge, /minio)."""
        return normalize(raw, origin, self._s3_options)

    async def read_body(self, request: web.Request) -> bytes | web.Response:
        """The body of a request (counted), or the 413 answer above ``max_body_bytes``."""
        self.stats.counts["requests"] += 1
        limit = self.settings.max_body_bytes
        length = request.content_length
        try:
            if length is not None and length > limit:
                raise web.HTTPRequestEntityTooLarge(max_size=limit, actual_size=length)
            async with asyncio.timeout(self.settings.body_timeout_s):
                return await request.read()
        except web.HTTPRequestEntityTooLarge:
            self.stats.counts["too_large"] += 1
            return _json(413, {"error": f"body larger than {limit} bytes"})
        except TimeoutError:
            self.connection_closed("body_timeout", request.remote)
            seconds = self.settings.body_timeout_s
            answer = _json(408, {"error": f"the body did not arrive within {seconds:g} s"})
            return await _answer_and_close(request, answer)

    def connection_closed(self, reason: str, peer: str | None) -> None:
        """Count (and log) a connection the server closed: a timeout or over the limit."""
        self.stats.counts[_CLOSED_COUNTS[reason]] += 1
        self.closed_connections.labels(reason).inc()
        log.warning("closed a connection", extra={"reason": reason, "peer": peer})

    async def deliver(self, raw: bytes, route: str, normalized: ParseResult) -> web.Response:
        """Filter and publish one request's result; 200 after Kafka's acknowledgement, else 503."""
        origin = route_origin(route)
        admitted, filtered = self._filter.apply(normalized)
        try:
            result = await self.publisher.publish(admitted, raw, origin)
        except PublishError as error:
            self.stats.counts["publish_failures"] += 1
            self.metrics.publish_failures.inc()
            self._unacknowledged.failed(route=route, error=str(error))
            return _json(503, {"error": "Kafka did not acknowledge the records; retry"})
        self._unacknowledged.succeeded()
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

    def refuse(self, route: str, error: WebhookAuthError) -> web.Response:
        """Count and log an authentication failure; answer it (:func:`refusal`: 401 when
        the credential is missing, 403 when it is wrong)."""
        self.stats.counts["auth_failures"] += 1
        self.auth_failures[route] += 1
        self.metrics.auth_failures.labels(route).inc()
        log.warning(
            "refused an unauthenticated request: nothing written to Kafka",
            extra={"route": route, "status": error.status, "reason": error.message},
        )
        return refusal(error)

    def count(self, name: str) -> None:
        self.stats.counts[name] += 1

    async def close(self) -> None:
        await self.publisher.close()

    def summary(self) -> dict[str, int]:
        return {**self.tally.as_dict(), **self.stats.as_dict()}


def _json(status: int, body: dict[str, object]) -> web.Response:
    return web.json_response(body, status=status)


async def _answer_and_close(request: web.Request, response: web.Response) -> web.Response:
    """Send ``response`` now and close the connection: the rest of the body is not read."""
    response.force_close()
    await response.prepare(request)
    await response.write_eof()
    if request.transport is not None:
        request.transport.close()
    return response


_CLOSED_COUNTS: Final = {
    "header_timeout": "header_timeouts",
    "body_timeout": "body_timeouts",
    "over_limit": "connections_refused",
}


async def serve(
    bridge: HttpBridge,
    host: str,
    port: int,
    stop: asyncio.Event,
    *,
    shutdown_timeout_s: float = 30.0,
    on_listening: Callable[[str, int], None] | None = None,
    reuse_port: bool = False,
) -> None:
    """Serve until ``stop`` is set; then stop accepting, drain, flush and close.
    ``reuse_port``: bind with SO_REUSEPORT, beside other processes serving the address."""
    settings = bridge.settings
    guard = ConnectionGuard(
        settings.max_connections, settings.header_timeout_s, bridge.connection_closed
    )
    runner = web.AppRunner(
        bridge.application(guard.middleware), shutdown_timeout=shutdown_timeout_s, access_log=None
    )
    await runner.setup()
    assert runner.server is not None
    started = time.monotonic()
    listener: asyncio.Server | None = None
    try:
        loop = asyncio.get_running_loop()
        listener = await loop.create_server(
            guard.protocols(runner.server), host, port, reuse_port=reuse_port or None
        )
        bound_host, bound_port = _bound(listener, host, port)
        if on_listening is not None:
            on_listening(bound_host, bound_port)
        await stop.wait()
        bridge.metrics.health.stop()  # /healthz and /readyz: 503 while draining
        started = time.monotonic()
        log.info("stopping: no new connections; draining requests in flight")
    finally:
        if listener is not None:
            listener.close()  # no new connections
        # Closes idle connections, waits up to shutdown_timeout for handlers.
        await runner.cleanup()
    try:
        await bridge.close()
    finally:
        log.info("stopped", extra={"seconds": round(time.monotonic() - started, 3)})


def _bound(listener: asyncio.Server, host: str, port: int) -> tuple[str, int]:
    for sock in listener.sockets:
        address = sock.getsockname()
        if isinstance(address, tuple) and len(address) >= 2:
            return str(address[0]), int(address[1])
    return host, port
