"""Prometheus metrics, /healthz and /readyz of the worker and the HTTP bridge, without a broker
(against the real broker: tests/kafka/test_metrics.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.runtime.metrics import HealthState, MetricsServer, WorkerMetrics
from tests.support.metrics_scrape import get, samples

# ---- without a broker ----------------------------------------------------------------------------


def test_health_state_alive_and_ready() -> None:
    now = [100.0]
    health = HealthState(10.0, clock=lambda: now[0])
    assert health.alive() == (True, "alive")
    assert health.ready() == (False, "starting")
    health.set_ready(True)
    assert health.ready() == (True, "ready")
    now[0] = 111.0
    assert health.alive()[0] is False
    health.beat()
    assert health.alive()[0] is True
    health.stop()
    assert health.alive() == (False, "stopped")
    assert health.ready() == (False, "stopped")


def test_every_worker_has_a_registry_of_its_own() -> None:
    first, second = WorkerMetrics("a"), WorkerMetrics("b")
    first.aborts.inc()
    assert first.registry.get_sample_value("seqgate_worker_transaction_aborts_total") == 1
    assert second.registry.get_sample_value("seqgate_worker_transaction_aborts_total") == 0


def test_metrics_server_serves_the_three_endpoints() -> None:
    metrics = WorkerMetrics("w")
    server = MetricsServer(metrics.registry, metrics.health, "127.0.0.1", 0)
    try:
        base = f"http://127.0.0.1:{server.port}"
        status, text = get(f"{base}/metrics")
        assert status == 200
        assert samples(text)[("seqgate_worker_info", (("instance_id", "w"),))] == 1
        assert get(f"{base}/healthz")[0] == 200
        assert get(f"{base}/readyz") == (503, "starting\n")
        metrics.restore_started(2)
        assert get(f"{base}/readyz") == (503, "restoring 2 partition(s)\n")
        metrics.restore_finished()
        metrics.restore_finished()
        assert get(f"{base}/readyz") == (200, "ready\n")
        assert get(f"{base}/nothing")[0] == 404
    finally:
        server.close()


def test_http_bridge_is_not_ready_without_kafka(tmp_path: Path) -> None:
    """An unreachable broker: /readyz answers 503, /healthz 200."""
    from seqgate.connectors.publish.publisher import EventPublisher, Topics
    from seqgate.connectors.sources.http_server import HttpBridge

    publisher = EventPublisher("127.0.0.1:1", Topics("e", "r"), delivery_timeout_ms=1000)
    bridge = HttpBridge(HttpSettings(), publisher)

    async def body() -> tuple[int, int]:
        from aiohttp.test_utils import TestClient, TestServer

        async with TestClient(TestServer(bridge.application())) as client:
            health = await client.get("/healthz")
            ready = await client.get("/readyz")
            return health.status, ready.status

    try:
        assert asyncio.run(body()) == (200, 503)
    finally:
        publisher._producer.purge()
        publisher._producer.flush(0)
