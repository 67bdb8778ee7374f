"""Connections of the HTTP bridge: a limit on how many are open, and a deadline for each
request head (slow clients never hold a connection for long).

aiohttp's server bounds neither, so both live here, on the connection itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Final

from aiohttp import web
from aiohttp.typedefs import Handler
from aiohttp.web_protocol import RequestHandler

_BUSY: Final = (
    b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nContent-Length: 21\r\n"
    b"Retry-After: 1\r\nConnection: close\r\n\r\ntoo many connections\n"
)


class ConnectionGuard:
    """The connections of one server: at most ``max_connections`` at once (another is
    answered 503 and closed at once), and each closed unless a complete request head
    arrives within ``header_timeout_s`` of its accept or of its previous reply.

    aiohttp's server has no header-read timeout (its keep-alive timer, 3630 s by
    default, is the only bound on a head that never completes) nor a connection limit,
    so both live here, on the connection: :meth:`protocols` wraps aiohttp's protocol
    for ``loop.create_server``, and :meth:`middleware` tells the connection when a
    request head has arrived (the deadline stops) and when its reply is ready (it
    starts again). The body's own timeout is
    :meth:`seqgate.connectors.sources.http_server.HttpBridge.read_body`'s.
    """

    def __init__(
        self,
        max_connections: int,
        header_timeout_s: float,
        on_close: Callable[[str, str | None], None],
    ) -> None:
        self.max_connections = max_connections
        self.header_timeout_s = header_timeout_s
        self.on_close = on_close  # (reason, peer): header_timeout or over_limit
        self._open: dict[asyncio.BaseTransport, _GuardedConnection] = {}

    def protocols(self, handlers: web.Server) -> Callable[[], asyncio.Protocol]:
        """The protocol factory of ``loop.create_server``: aiohttp's ``handlers``, guarded."""
        return lambda: _GuardedConnection(self, handlers)

    @web.middleware
    async def middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        connection = self._open.get(request.transport) if request.transport else None
        if connection is not None:
            connection.disarm()
        try:
            return await handler(request)
        finally:
            if connection is not None:
                connection.arm()

    def admit(self, transport: asyncio.BaseTransport, connection: _GuardedConnection) -> bool:
        if len(self._open) >= self.max_connections:
            return False
        self._open[transport] = connection
        return True

    def release(self, transport: asyncio.BaseTransport) -> None:
        self._open.pop(transport, None)


class _GuardedConnection(asyncio.Protocol):
    """aiohttp's protocol for one connection, behind the guard's limit and deadline."""

    def __init__(self, guard: ConnectionGuard, handlers: web.Server) -> None:
        self._guard = guard
        self._handlers = handlers
        self._inner: RequestHandler | None = None
        self._transport: asyncio.Transport | None = None
        self._deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        if not self._guard.admit(transport, self):
            self._guard.on_close("over_limit", _peer(transport))
            transport.write(_BUSY)
            transport.close()
            return
        self._transport = transport
        self._inner = self._handlers()
        self._inner.connection_made(transport)
        self.arm()

    def data_received(self, data: bytes) -> None:
        if self._inner is not None:
            self._inner.data_received(data)

    def eof_received(self) -> None:  # None: the transport closes (as aiohttp's does)
        if self._inner is not None:
            self._inner.eof_received()

    def pause_writing(self) -> None:
        if self._inner is not None:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._inner is not None:
            self._inner.resume_writing()

    def connection_lost(self, exc: BaseException | None) -> None:
        self.disarm()
        if self._inner is not None and self._transport is not None:
            self._guard.release(self._transport)
            self._inner.connection_lost(exc)

    def arm(self) -> None:
        """Start the deadline for the next request head."""
        self.disarm()
        if self._transport is not None and not self._transport.is_closing():
            loop = asyncio.get_running_loop()
            timeout = self._guard.header_timeout_s
            self._deadline = loop.call_later(timeout, self._overdue)

    def disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _overdue(self) -> None:
        self._deadline = None
        if self._inner is not None and self._transport is not None:
            self._guard.on_close("header_timeout", _peer(self._transport))
            self._inner.force_close()


def _peer(transport: asyncio.BaseTransport) -> str | None:
    peer = transport.get_extra_info("peername")
    return str(peer[0]) if isinstance(peer, tuple) and peer else None
