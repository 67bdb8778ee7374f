"""The HTTP bridge's route table (seqgate/connectors/sources/route_table.py), without a broker:
every route has one entry with a parser and an authentication, and every authentication
failure - of every route, of either kind - is answered through the one status mapping
(401 missing, 403 wrong), counted under the route's name and never read further than its
kind of check needs."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import time
from datetime import UTC, datetime
from typing import Any

import pytest
from aiohttp.test_utils import BaseTestServer, TestClient, TestServer
from cryptography.hazmat.primitives.asymmetric import rsa

from seqgate.connectors.auth.header_secret import verify_header_secret
from seqgate.connectors.auth.sns_signature import SnsVerifier, decode_sns_message
from seqgate.connectors.errors import MISSING, WRONG, SnsVerificationError, WebhookAuthError
from seqgate.connectors.publish.publisher import EventPublisher, Topics
from seqgate.connectors.sources.http_server import HttpBridge
from seqgate.connectors.sources.http_settings import ROUTES, HttpSettings
from seqgate.connectors.sources.route_table import (
    ROUTE_TABLE,
    BodyCheck,
    HeaderCheck,
    refusal,
)
from seqgate.connectors.sources.webhook_routes import WEBHOOK_ROUTES
from seqgate.runtime.kafka_settings import KafkaSettings
from tests.support.webhook_requests import Secrets

TOKEN = "s3cr3t-token"
API_KEY = ("X-Api-Key", "api-key-value")
TOPIC = "arn:aws:sns:eu-west-1:123456789012:uploads"

# Checked before the body is read (a refused request is not counted as a request) ...
HEADER_CHECKED = ("s3", "eventbridge", "minio", "gcs", "azure", "supabase")
# ... or once it is read (a signature over the body).
BODY_CHECKED = ("sns", "b2", "box", "cloudinary", "appwrite")


def _now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


# route -> (headers without the credential: 401, headers with a wrong one: 403). SNS has
# no missing credential (the body is the message): both of its requests are 403.
REFUSED: dict[str, tuple[dict[str, str], dict[str, str]]] = {
    "s3": ({}, {"Authorization": "Bearer wrong"}),
    "eventbridge": ({}, {API_KEY[0]: "wrong"}),
    "minio": ({"Authorization": f"Basic {TOKEN}"}, {"Authorization": "Bearer wrong"}),
    "gcs": ({}, {"Authorization": "Bearer not.a.token"}),
    "azure": ({}, {"X-Seqgate-Secret": "wrong"}),
    "supabase": ({}, {"X-Seqgate-Secret": "wrong"}),
    "b2": ({}, {"x-bz-event-notification-signature": "v1=00"}),
    "box": (
        {"box-delivery-timestamp": _now_iso()},
        {"box-signature-primary": "Zm9yZ2Vk", "box-delivery-timestamp": _now_iso()},
    ),
    "cloudinary": ({}, {"X-Cld-Signature": "00", "X-Cld-Timestamp": str(int(time.time()))}),
    "appwrite": ({}, {"X-Appwrite-Webhook-Signature": "Zm9yZ2Vk"}),
}


def test_every_servable_route_has_one_entry_with_a_parser_and_an_authentication() -> None:
    names = [route.name for route in ROUTE_TABLE]
    assert names == [*ROUTES, *WEBHOOK_ROUTES]  # each once, in enabled_routes() order
    for route in ROUTE_TABLE:
        assert route.path == f"/{route.name}"
        assert callable(route.parse), route.path
        assert isinstance(route.auth, HeaderCheck | BodyCheck), route.path
        assert callable(route.auth.check), route.path
    kinds = {route.name: type(route.auth) for route in ROUTE_TABLE}
    assert {name for name, kind in kinds.items() if kind is HeaderCheck} == set(HEADER_CHECKED)
    assert {name for name, kind in kinds.items() if kind is BodyCheck} == set(BODY_CHECKED)


def test_a_handshake_belongs_to_a_route_checked_by_its_headers() -> None:
    # OPTIONS carries no body: only a header check can authenticate it.
    with_handshake = [route for route in ROUTE_TABLE if route.handshake is not None]
    assert [route.name for route in with_handshake] == ["azure"]
    assert all(isinstance(route.auth, HeaderCheck) for route in with_handshake)


def _answer(error: WebhookAuthError) -> tuple[int, Any, str | None]:
    response = refusal(error)
    assert response.text is not None
    return response.status, json.loads(response.text), response.headers.get("WWW-Authenticate")


def test_a_missing_credential_is_401_with_a_bearer_challenge() -> None:
    assert _answer(WebhookAuthError(MISSING, "no header")) == (
        401,
        {"error": "unauthorized"},
        "Bearer",
    )


def test_a_wrong_credential_is_403_without_a_challenge() -> None:
    assert _answer(WebhookAuthError(WRONG, "bad")) == (403, {"error": "forbidden"}, None)


def test_an_sns_refusal_is_a_403_of_the_same_family() -> None:
    error = SnsVerificationError("the signature (version 2) does not verify")
    assert isinstance(error, WebhookAuthError)
    assert (error.status, error.message, str(error)) == (WRONG, str(error), str(error))
    assert _answer(error) == (403, {"error": "forbidden"}, None)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"[" * 1000 + b"]" * 1000, "nested too deeply"),
        (b"{", "not JSON"),
        (b"[]", "not an object"),
    ],
)
def test_a_body_that_is_not_an_sns_message_is_refused_as_wrong(body: bytes, why: str) -> None:
    with pytest.raises(SnsVerificationError) as raised:
        decode_sns_message(body)
    assert raised.value.status == WRONG
    assert raised.value.message == f"the body is not an SNS message ({why})"


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({}, MISSING),
        ({"x-api-key": "wrong"}, WRONG),
        ({"X-Api-Key": "api-key-value\udcff"}, WRONG),  # not UTF-8 text
        ({"X-API-KEY": "api-key-value"}, None),
    ],
)
def test_the_header_secret_is_checked_by_its_configured_name(
    headers: dict[str, str], status: int | None
) -> None:
    from multidict import CIMultiDict

    try:
        verify_header_secret(CIMultiDict(headers), *API_KEY)
    except WebhookAuthError as error:
        assert error.status == status
    else:
        assert status is None


@pytest.fixture(scope="module")
def settings() -> HttpSettings:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    every_webhook = Secrets(google=key, forger=key).settings()

    def no_certificate(url: str) -> bytes:
        raise SnsVerificationError(f"no certificate at {url}")

    return dataclasses.replace(
        every_webhook,
        s3_enabled=True,
        s3_token=TOKEN,
        minio_token=TOKEN,
        eventbridge_header=API_KEY,
        sns=SnsVerifier(frozenset({TOPIC}), no_certificate),
    )


def _serve_refused(settings: HttpSettings) -> tuple[HttpBridge, dict[str, list[Any]]]:
    """POST every route its two refused requests; the bridge and (route -> answers)."""
    publisher = EventPublisher(
        KafkaSettings("127.0.0.1:1"), Topics("e", "r"), delivery_timeout_ms=500
    )
    bridge = HttpBridge(settings, publisher)

    async def post_all() -> dict[str, list[Any]]:
        answers: dict[str, list[Any]] = {}
        async with TestClient(TestServer(bridge.application())) as client:
            for route, (missing, wrong) in REFUSED.items():
                for headers in (missing, wrong):
                    response = await client.post(f"/{route}", data=b"{}", headers=headers)
                    body = await response.json()
                    challenge = response.headers.get("WWW-Authenticate")
                    answers.setdefault(route, []).append((response.status, body, challenge))
            sns = [await client.post("/sns", data=body) for body in (b"{", b"{}")]
            answers["sns"] = [
                (r.status, await r.json(), r.headers.get("WWW-Authenticate")) for r in sns
            ]
            options = await client.options("/azure")
            answers["azure OPTIONS"] = [
                (options.status, await options.json(), options.headers.get("WWW-Authenticate"))
            ]
        return answers

    try:
        return bridge, asyncio.run(post_all())
    finally:
        publisher._producer.purge()
        publisher._producer.flush(0)


async def _post_raw(server: BaseTestServer, path: str, header: tuple[str, bytes]) -> int:
    """POST with a header whose bytes are not UTF-8 text (a client library would refuse it)."""
    reader, writer = await asyncio.open_connection(server.host, server.port)
    writer.write(
        f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n".encode()
        + header[0].encode()
        + b": "
        + header[1]
        + b"\r\n\r\n{}"
    )
    await writer.drain()
    status_line = await reader.readline()
    writer.close()
    return int(status_line.split()[1])


def test_a_body_check_refuses_an_unreadable_credential_before_reading_the_body(
    settings: HttpSettings,
) -> None:
    publisher = EventPublisher(
        KafkaSettings("127.0.0.1:1"), Topics("e", "r"), delivery_timeout_ms=500
    )
    bridge = HttpBridge(settings, publisher)
    signed = [route for route in ROUTE_TABLE if isinstance(route.auth, BodyCheck)]
    headers = {route.path: header for route in signed for header in route.auth.reads}
    assert set(headers) == {f"/{name}" for name in BODY_CHECKED if name != "sns"}

    async def post_all() -> list[int]:
        async with TestServer(bridge.application()) as server:
            return [
                await _post_raw(server, route.path, (header, b"\xff\xfe\xc3("))
                for route in signed
                for header in route.auth.reads
            ]

    try:
        statuses = asyncio.run(post_all())
    finally:
        publisher._producer.purge()
        publisher._producer.flush(0)
    assert statuses == [403] * len(statuses)
    assert bridge.stats.counts["auth_failures"] == len(statuses)
    assert bridge.stats.counts["requests"] == 0  # refused before the body was read


UNAUTHORIZED = (401, {"error": "unauthorized"}, "Bearer")
FORBIDDEN = (403, {"error": "forbidden"}, None)


def test_every_route_answers_a_missing_credential_401_and_a_wrong_one_403(
    settings: HttpSettings,
) -> None:
    bridge, answers = _serve_refused(settings)
    expected = {route: [UNAUTHORIZED, FORBIDDEN] for route in REFUSED}
    expected["sns"] = [FORBIDDEN, FORBIDDEN]
    expected["azure OPTIONS"] = [UNAUTHORIZED]
    assert answers == expected
    # Counted under the route's name, OPTIONS /azure under azure's.
    failures = {route: 2 for route in [*REFUSED, "sns"]}
    failures["azure"] = 3
    assert dict(bridge.auth_failures) == failures
    assert bridge.stats.counts["auth_failures"] == sum(failures.values())
    # A header check refuses before the body is read; a body check after (a request).
    assert bridge.stats.counts["requests"] == 2 * len(BODY_CHECKED)
    assert bridge.tally.as_dict()["published"] == 0


def test_the_family_holds_only_the_two_statuses_the_mapping_knows() -> None:
    with pytest.raises(ValueError, match="401 or 403"):
        WebhookAuthError(400, "neither missing nor wrong")
