"""A JWKS endpoint on loopback (http.server in a thread) whose answer a test changes: the keys it
publishes (rotation), its Cache-Control, an error status, a held answer; it counts the GETs."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from tests.support.gcs_tokens import jwks_text


@dataclass
class JwksEndpoint:
    """What the endpoint answers; change it between requests."""

    keys: list[dict[str, Any]]
    cache_control: str = "public, max-age=3600"
    status: int = 200
    body: str | None = None
    """Answered instead of the keys' document when set."""
    hold: threading.Event | None = None
    """When set, each answer waits for this event (at most 10 s)."""
    arrived: threading.Event = field(default_factory=threading.Event)
    """Set by each GET as it arrives, before any hold."""
    gets: int = 0
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def rotate(self, *keys: dict[str, Any]) -> None:
        with self.lock:
            self.keys = list(keys)

    def answer(self) -> tuple[int, str, str]:
        with self.lock:
            self.gets += 1
            text = self.body if self.body is not None else jwks_text(*self.keys)
            return self.status, self.cache_control, text


@contextmanager
def jwks_endpoint(*keys: dict[str, Any]) -> Iterator[JwksEndpoint]:
    endpoint = JwksEndpoint(list(keys))

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            endpoint.arrived.set()
            if endpoint.hold is not None:
                endpoint.hold.wait(10)
            status, cache_control, text = endpoint.answer()
            data = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Cache-Control", cache_control)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    endpoint.url = f"http://127.0.0.1:{server.server_address[1]}/oauth2/v3/certs"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield endpoint
    finally:
        if endpoint.hold is not None:
            endpoint.hold.set()
        server.shutdown()
        server.server_close()
        thread.join()
