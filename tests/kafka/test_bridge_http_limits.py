"""The connection limits of `seqgate bridge http`, with real sockets and the real broker.

Slow clients (a request head that never completes, a body that never completes) are
closed after their timeout, and connections over ``max_connections`` are answered 503
and closed at once. Timeouts are 1 s here; every wait is bounded, and what the server
did is awaited from the client side (the connection closing) rather than slept for.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import pytest

from seqgate.connectors.sources.http_settings import HttpSettings
from tests.support import http_bridge as bridge_http
from tests.support.http_bridge import Running, Topicset, http_bridge, put, scenario

pytestmark = pytest.mark.kafka

topics = bridge_http.topics  # the fixture: fresh events and rejected topics per test

TIMEOUT_S = 1.0
SLACK_S = 4.0  # how much later than its timeout a connection may be closed
SLOW_CLIENTS = 25


Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


@contextlib.asynccontextmanager
async def connections(server: Running, count: int) -> AsyncIterator[list[Connection]]:
    opened = [await asyncio.open_connection("127.0.0.1", server.port) for _ in range(count)]
    try:
        yield opened
    finally:
        for _, writer in opened:
            writer.close()


async def closed_after(reader: asyncio.StreamReader, started: float) -> tuple[bytes, float]:
    """Everything the server sent until it closed the connection, and when it closed."""
    received = await asyncio.wait_for(reader.read(), TIMEOUT_S + SLACK_S)
    return received, time.monotonic() - started


def limited() -> HttpSettings:
    return HttpSettings(header_timeout_s=TIMEOUT_S, body_timeout_s=TIMEOUT_S)


def test_a_request_head_that_does_not_arrive_in_time_is_closed(
    topics: Topicset, caplog: pytest.LogCaptureFixture
) -> None:
    async def body() -> None:
        async with http_bridge(topics, limited()) as server:
            started = time.monotonic()  # before any accept: no close may come 1 s before it
            async with connections(server, SLOW_CLIENTS) as slow:
                for index, (_, writer) in enumerate(slow):
                    if index % 5:  # and a fifth send nothing at all
                        writer.write(b"POST /s3 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
                closing = (closed_after(reader, started) for reader, _ in slow)
                results = await asyncio.gather(*closing)
            assert all(received == b"" for received, _ in results)
            seconds = [elapsed for _, elapsed in results]
            assert min(seconds) >= TIMEOUT_S * 0.99, seconds
            assert server.bridge.stats.counts["header_timeouts"] == SLOW_CLIENTS
            assert (await server.post("s3", put("prompt.txt")))[0] == 200  # still serving

    scenario(body)
    assert [event.key for _, _, event in topics.published()] == ["prompt.txt"]
    assert not [record for record in caplog.records if record.exc_info]


def test_a_body_that_does_not_arrive_in_time_is_answered_408_and_closed(
    topics: Topicset, caplog: pytest.LogCaptureFixture
) -> None:
    head = b"POST /s3 HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\n"

    async def body() -> None:
        async with (
            http_bridge(topics, limited()) as server,
            connections(server, SLOW_CLIENTS) as slow,
        ):
            started = time.monotonic()  # before any head is sent
            for _, writer in slow:
                writer.write(head + put("never.txt")[:20])
            results = await asyncio.gather(*(closed_after(reader, started) for reader, _ in slow))
            assert all(received.startswith(b"HTTP/1.1 408 ") for received, _ in results)
            assert min(elapsed for _, elapsed in results) >= TIMEOUT_S * 0.99
            assert server.bridge.stats.counts["body_timeouts"] == SLOW_CLIENTS
            assert (await server.post("s3", put("prompt.txt")))[0] == 200

    scenario(body)
    assert [event.key for _, _, event in topics.published()] == ["prompt.txt"]
    assert topics.rejected_records() == []
    assert not [record for record in caplog.records if record.exc_info]


async def healthz(connection: Connection) -> bytes:
    """One keep-alive GET /healthz on ``connection``; the status line."""
    reader, writer = connection
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    status = await asyncio.wait_for(reader.readline(), 10)
    await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    await asyncio.wait_for(reader.readline(), 10)  # the body: one line
    return status


def test_a_connection_over_the_limit_is_answered_503_and_closed(topics: Topicset) -> None:
    limit = 5

    async def body() -> None:
        settings = HttpSettings(header_timeout_s=60, max_connections=limit)
        async with http_bridge(topics, settings) as server, connections(server, limit) as held:
            # Held: each has been served once, so the server has accepted all of them.
            for connection in held:
                assert (await healthz(connection)).startswith(b"HTTP/1.1 200 ")
            started = time.monotonic()
            async with connections(server, 3) as over:
                for reader, _ in over:
                    received, elapsed = await closed_after(reader, started)
                    assert received.startswith(b"HTTP/1.1 503 "), received
                    assert elapsed < 2
            assert server.bridge.stats.counts["connections_refused"] == 3
            held[0][1].close()  # one slot free again: the next connection is served
            deadline = time.monotonic() + 10
            while (status := await server.post("s3", put("after.txt")))[0] != 200:
                assert time.monotonic() < deadline, status
                await asyncio.sleep(0.05)
            async with server.session.get("/metrics") as response:
                metrics = await response.text()
            refused = server.bridge.stats.counts["connections_refused"]  # 3, and any retry's
            assert f'_connections_closed_total{{reason="over_limit"}} {refused:.1f}' in metrics

    scenario(body)
    assert [event.key for _, _, event in topics.published()] == ["after.txt"]
