"""The HTTP bridge for tests: fresh topics per test, the server run in this process
(`http_bridge`, `scenario`) or as the real command (`command`), and the routes' secrets."""

from __future__ import annotations

import asyncio
import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from confluent_kafka.admin import AdminClient
from seqgate_devtools.samples import s3_notification, s3_record, to_text

from seqgate.connectors.publish.filters import EventFilter
from seqgate.connectors.publish.publisher import EventPublisher, Topics
from seqgate.connectors.sources.http_server import HttpBridge, serve
from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.runtime.topics import create_topics, pipeline_topics
from seqgate.schemas.codec import OBJECT_EVENT, REJECTED_RECORD
from seqgate.schemas.records import ObjectEvent, RejectedRecord
from tests.support.environment import clean_env
from tests.support.kafka_helpers import read_all
from tests.support.paths import REPO
from tests.support.threads import sigterm_and_read_stdout

PARTITIONS = 3
MINIO_TOKEN = "minio-s3cr3t"
EB_HEADER = ("X-Seqgate-Secret", "eb-s3cr3t")
SCENARIO_TIMEOUT = 180.0


@dataclass(frozen=True)
class Topicset:
    bootstrap: str
    events: str
    rejected: str

    def published(self) -> list[tuple[int, bytes, ObjectEvent]]:
        found = []
        for record in read_all(self.bootstrap, self.events):
            assert record.key is not None
            found.append((record.partition, record.key, OBJECT_EVENT.decode(record.value)))
        return found

    def rejected_records(self) -> list[RejectedRecord]:
        return [
            REJECTED_RECORD.decode(record.value)
            for record in read_all(self.bootstrap, self.rejected)
        ]


@pytest.fixture
def topics(kafka_bootstrap: str, unique_name: str) -> Topicset:
    specs = pipeline_topics(
        input_topic=f"{unique_name}.object-events",
        outbox_topic=f"{unique_name}.object-events.outbox",
        rejected_topic=f"{unique_name}.object-events.rejected",
        application_id=f"{unique_name}-app",
        partitions=PARTITIONS,
    )
    create_topics(AdminClient({"bootstrap.servers": kafka_bootstrap}), specs)
    return Topicset(kafka_bootstrap, specs[0].name, specs[2].name)


def put(key: str, sequencer: str = "1", bucket: str = "example-input") -> bytes:
    return to_text(s3_notification(s3_record(bucket=bucket, key=key, sequencer=sequencer))).encode()


# ---- the server in this process ------------------------------------------------------------------


@dataclass
class Running:
    session: aiohttp.ClientSession
    bridge: HttpBridge
    server: asyncio.Task[None]
    stopping: asyncio.Event
    port: int

    async def stop(self) -> None:
        """Ask the server to stop (as SIGTERM does) and wait until it has."""
        self.stopping.set()
        await asyncio.wait_for(asyncio.shield(self.server), 60)

    async def post(
        self, route: str, body: bytes, headers: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]]:
        async with self.session.post(f"/{route}", data=body, headers=headers) as response:
            text = await response.text()
            return response.status, json.loads(text) if text.startswith("{") else {}

    async def post_raw(
        self, target: str, body: bytes, headers: list[tuple[str, bytes]], method: str = "POST"
    ) -> int:
        """A request whose header values are sent as these very bytes (an HTTP client
        would refuse some); the status of the answer."""
        reader, writer = await asyncio.open_connection("127.0.0.1", self.port)
        try:
            lines = [f"{method} /{target} HTTP/1.1".encode(), b"Host: 127.0.0.1"]
            lines += [name.encode() + b": " + value for name, value in headers]
            lines += [f"Content-Length: {len(body)}".encode(), b"Connection: close"]
            writer.write(b"\r\n".join(lines) + b"\r\n\r\n" + body)
            status_line = await asyncio.wait_for(reader.readline(), 30)
            await asyncio.wait_for(reader.read(), 30)
        finally:
            writer.close()
        return int(status_line.split()[1])


@contextlib.asynccontextmanager
async def http_bridge(
    topics: Topicset,
    settings: HttpSettings,
    event_filter: EventFilter | None = None,
    *,
    bootstrap: str | None = None,
    delivery_timeout_ms: int = 30_000,
) -> AsyncIterator[Running]:
    publisher = EventPublisher(
        bootstrap or topics.bootstrap,
        Topics(topics.events, topics.rejected),
        delivery_timeout_ms=delivery_timeout_ms,
    )
    bridge = HttpBridge(settings, publisher, event_filter)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    bound: asyncio.Future[int] = loop.create_future()
    server = asyncio.create_task(
        serve(
            bridge,
            "127.0.0.1",
            0,
            stop,
            shutdown_timeout_s=10,
            on_listening=lambda host, port: bound.set_result(port),
        )
    )
    done, _ = await asyncio.wait({server, bound}, timeout=30, return_when="FIRST_COMPLETED")
    if server in done:
        server.result()  # raises what stopped it
    assert bound.done(), "the server did not start listening within 30s"
    try:
        async with aiohttp.ClientSession(f"http://127.0.0.1:{bound.result()}") as session:
            yield Running(session, bridge, server, stop, bound.result())
    finally:
        stop.set()
        await asyncio.wait_for(server, 60)


def scenario(body: Callable[[], Awaitable[None]]) -> None:
    asyncio.run(asyncio.wait_for(body(), SCENARIO_TIMEOUT))


async def in_thread(function: Callable[[], Any]) -> Any:
    return await asyncio.to_thread(function)


MINIO_AUTH = {"Authorization": f"Bearer {MINIO_TOKEN}"}
EB_AUTH = {EB_HEADER[0]: EB_HEADER[1]}


NOT_UTF8 = b"\xff\xfe\xc3("  # bytes no UTF-8 text holds


# ---- the command ---------------------------------------------------------------------------------


class Process:
    """`seqgate bridge http` as a subprocess; its stderr read line by line in a thread."""

    def __init__(self, *options: str, bootstrap: str) -> None:
        self.popen = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "seqgate.cli",
                "bridge",
                "http",
                "--port",
                "0",
                "--bootstrap-servers",
                bootstrap,
                *options,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=clean_env(),
            cwd=REPO,
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            text = line.decode("utf-8", "replace")
            self.stderr.append(text)
            self.lines.put(text)
        self.lines.put(None)

    def address(self, timeout: float = 60) -> str:
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no `listening on` line within {timeout:.0f}s") from None
            assert line is not None, f"the server exited: {''.join(self.stderr)}"
            if line.startswith("listening on "):
                return line.removeprefix("listening on ").strip()

    def stop(self, timeout: float = 30) -> tuple[int, dict[str, int], float]:
        """SIGTERM; (exit status, JSON summary, seconds it took). ``stderr`` is whole after it:
        only the reader thread reads stderr, and it is joined once the pipe closes."""
        started = time.monotonic()
        stdout = sigterm_and_read_stdout(self.popen, timeout)
        self._reader.join(timeout)
        assert not self._reader.is_alive(), f"the bridge's stderr was not closed in {timeout}s"
        return self.popen.returncode, json.loads(stdout), time.monotonic() - started

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(30)


@contextlib.contextmanager
def command(*options: str, bootstrap: str) -> Iterator[Process]:
    process = Process(*options, bootstrap=bootstrap)
    try:
        yield process
    finally:
        process.kill()


async def post_to(url: str, body: bytes, headers: dict[str, str] | None = None) -> int:
    timeout = aiohttp.ClientTimeout(total=60)
    async with (
        aiohttp.ClientSession(timeout=timeout) as session,
        session.post(url, data=body, headers=headers) as response,
    ):
        await response.read()
        return response.status
