"""A scripted HTTP endpoint (aiohttp, in a thread) for the HTTP destination of the dispatcher."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Endpoint:
    """A tiny aiohttp server: `script[event id]` lists the statuses to answer, in turn
    (the last one repeats); every request is recorded."""

    script: dict[str, list[int]]
    requests: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)
    url: str = ""


@contextlib.contextmanager
def endpoint(script: dict[str, list[int]]) -> Iterator[Endpoint]:
    state = Endpoint(script)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    runner_box: list[web.AppRunner] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        state.requests.append((dict(request.headers), body))
        statuses = state.script.get(body["event"]["id"], [200])
        status = statuses.pop(0) if len(statuses) > 1 else statuses[0]
        text = "schema mismatch" if status == 400 else ""
        return web.Response(status=status, text=text)

    async def start() -> None:
        app = web.Application()
        app.router.add_post("/objects", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runner_box.append(runner)
        port = runner.addresses[0][1]
        state.url = f"http://127.0.0.1:{port}/objects"
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop)
    assert ready.wait(30)
    try:
        yield state
    finally:
        asyncio.run_coroutine_threadsafe(runner_box[0].cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()
