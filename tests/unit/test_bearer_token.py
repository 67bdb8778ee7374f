"""``Authorization: Bearer`` on ``/minio`` and a token-protected ``/s3``, without a broker:
the check itself, then the routes of the HTTP bridge in process (a refused request never
reaches the publisher, so its broker address is never dialled for it)."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp.test_utils import TestClient, TestServer

from seqgate.connectors.auth.bearer_token import verify_bearer_token
from seqgate.connectors.errors import MISSING, WRONG, WebhookAuthError
from seqgate.connectors.publish.publisher import EventPublisher, Topics
from seqgate.connectors.sources.http_server import HttpBridge
from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.runtime.kafka_settings import KafkaSettings

TOKEN = "s3cr3t-token"


def status_of(headers: dict[str, str]) -> int | None:
    try:
        verify_bearer_token(headers, TOKEN)
    except WebhookAuthError as error:
        return error.status
    return None


def test_a_missing_authorization_header_is_refused_as_missing() -> None:
    assert status_of({}) == MISSING
    assert status_of({"X-Other": f"Bearer {TOKEN}"}) == MISSING


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Authorization": f"Basic {TOKEN}"}, MISSING),
        ({"Authorization": TOKEN}, MISSING),
        ({"Authorization": "Bearer"}, WRONG),
        ({"Authorization": "Bearer wrong"}, WRONG),
        ({"Authorization": f"Bearer {TOKEN}x"}, WRONG),
        ({"Authorization": f"Bearer {TOKEN}"}, None),
        ({"Authorization": f"bearer  {TOKEN} "}, None),
    ],
)
def test_only_the_configured_bearer_token_passes(
    headers: dict[str, str], status: int | None
) -> None:
    assert status_of(headers) == status


def test_the_routes_refuse_a_request_without_authorization_before_reading_it() -> None:
    publisher = EventPublisher(
        KafkaSettings("127.0.0.1:1"), Topics("e", "r"), delivery_timeout_ms=500
    )
    settings = HttpSettings(s3_token=TOKEN, minio_token=TOKEN)
    bridge = HttpBridge(settings, publisher)

    async def post_without_credentials() -> list[tuple[int, str | None]]:
        async with TestClient(TestServer(bridge.application())) as client:
            answers = []
            for route in ("minio", "s3"):
                response = await client.post(f"/{route}", data=b"{}")
                answers.append((response.status, response.headers.get("WWW-Authenticate")))
            return answers

    try:
        assert asyncio.run(post_without_credentials()) == [(401, "Bearer"), (401, "Bearer")]
    finally:
        publisher._producer.purge()
        publisher._producer.flush(0)
    assert dict(bridge.auth_failures) == {"minio": 1, "s3": 1}
    assert bridge.stats.counts["requests"] == 0  # no body read, nothing published
