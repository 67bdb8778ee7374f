"""Google's signing keys fetched, cached and refreshed (seqgate/connectors/auth/gcs_jwks.py),
against a real JWKS endpoint on loopback that rotates its keys during the test."""

from __future__ import annotations

import asyncio
import logging
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from seqgate.connectors.auth.gcs_jwks import (
    DEFAULT_TTL_S,
    MAX_TTL_S,
    MIN_TTL_S,
    JwksCache,
    cache_lifetime,
)
from seqgate.connectors.auth.gcs_oidc import GcsPushVerifier
from seqgate.connectors.errors import JwksFetchError, WebhookAuthError
from tests.support.clock import ManualClock
from tests.support.environment import clean_env
from tests.support.gcs_tokens import ACCOUNT, AUDIENCE, NOW, claims, jwk, sign
from tests.support.jwks_server import JwksEndpoint, jwks_endpoint
from tests.support.paths import REPO


@pytest.fixture(scope="module")
def old_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture
def endpoint(old_key: rsa.RSAPrivateKey) -> Iterator[JwksEndpoint]:
    with jwks_endpoint(jwk(old_key, kid="old")) as served:
        yield served


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(1000.0)


def loaded(endpoint: JwksEndpoint, clock: ManualClock, interval: float = 30) -> GcsPushVerifier:
    cache = JwksCache(endpoint.url, timeout_s=5, refetch_interval_s=interval, clock=clock)
    cache.load()
    return GcsPushVerifier(cache, AUDIENCE, ACCOUNT, clock=lambda: NOW)


def bearer(key: rsa.RSAPrivateKey, kid: str) -> str:
    return f"Bearer {sign(key, claims(), kid=kid)}"


async def check(verifier: GcsPushVerifier, header: str) -> dict[str, Any] | str:
    """As the route does: prepare, then verify; the claims, or the refusal's message."""
    await verifier.prepare(header)
    try:
        return verifier.verify(header)
    except WebhookAuthError as error:
        return error.message


def cache_of(verifier: GcsPushVerifier) -> JwksCache:
    assert isinstance(verifier.keys, JwksCache)
    return verifier.keys


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("public, max-age=20323, must-revalidate, no-transform", 20323),
        ("max-age=5", MIN_TTL_S),
        ("max-age=99999999", MAX_TTL_S),
        ("no-cache", MIN_TTL_S),
        ("private, no-store, max-age=600", MIN_TTL_S),
        ("max-age=soon", DEFAULT_TTL_S),
        ("", DEFAULT_TTL_S),
        (None, DEFAULT_TTL_S),
    ],
)
def test_the_cache_lifetime_is_the_bounded_max_age(header: str | None, seconds: float) -> None:
    assert cache_lifetime(header) == seconds


def test_a_rotated_key_is_fetched_when_a_token_names_it(
    endpoint: JwksEndpoint,
    clock: ManualClock,
    old_key: rsa.RSAPrivateKey,
    new_key: rsa.RSAPrivateKey,
) -> None:
    verifier = loaded(endpoint, clock)
    assert asyncio.run(check(verifier, bearer(old_key, "old")))["email"] == ACCOUNT  # type: ignore[index]
    endpoint.rotate(jwk(new_key, kid="new"))
    assert asyncio.run(check(verifier, bearer(new_key, "new")))["email"] == ACCOUNT  # type: ignore[index]
    assert endpoint.gets == 2
    clock.now += 31
    refused = asyncio.run(check(verifier, bearer(old_key, "old")))
    assert isinstance(refused, str) and '"old" is not among Google\'s keys' in refused
    assert endpoint.url in refused and endpoint.gets == 3


def test_unknown_kids_fetch_at_most_once_per_interval(
    endpoint: JwksEndpoint, clock: ManualClock, new_key: rsa.RSAPrivateKey
) -> None:
    verifier = loaded(endpoint, clock, interval=30)

    async def forged(count: int) -> list[dict[str, Any] | str]:
        return [await check(verifier, bearer(new_key, f"made-up-{n}")) for n in range(count)]

    assert all(isinstance(answer, str) for answer in asyncio.run(forged(20)))
    assert endpoint.gets == 2  # the startup fetch and one refresh
    clock.now += 29
    asyncio.run(forged(5))
    assert endpoint.gets == 2
    clock.now += 1
    asyncio.run(forged(5))
    assert endpoint.gets == 3


def test_stale_keys_are_refreshed_in_the_background(
    endpoint: JwksEndpoint,
    clock: ManualClock,
    old_key: rsa.RSAPrivateKey,
    new_key: rsa.RSAPrivateKey,
) -> None:
    endpoint.cache_control = "max-age=120"
    verifier = loaded(endpoint, clock)
    endpoint.rotate(jwk(old_key, kid="old"), jwk(new_key, kid="new"))

    async def scenario() -> None:
        clock.now += 119
        assert not isinstance(await check(verifier, bearer(old_key, "old")), str)
        await cache_of(verifier).wait_idle()
        assert endpoint.gets == 1  # fresh for 120 s
        clock.now += 1
        assert not isinstance(await check(verifier, bearer(old_key, "old")), str)
        await cache_of(verifier).wait_idle()
        assert endpoint.gets == 2
        assert sorted(cache_of(verifier).current) == ["new", "old"]

    asyncio.run(scenario())


@pytest.mark.parametrize(
    ("status", "body", "logged"),
    [
        (503, None, "answered HTTP 503"),
        (200, '{"keys": []}', "the answer holds no RSA signing key"),
        (200, "<html>", "the answer is not JSON"),
    ],
)
def test_a_failing_refresh_keeps_the_cached_keys(
    endpoint: JwksEndpoint,
    clock: ManualClock,
    old_key: rsa.RSAPrivateKey,
    caplog: pytest.LogCaptureFixture,
    status: int,
    body: str | None,
    logged: str,
) -> None:
    verifier = loaded(endpoint, clock)
    endpoint.status, endpoint.body = status, body

    async def scenario() -> None:
        clock.now += DEFAULT_TTL_S
        assert not isinstance(await check(verifier, bearer(old_key, "old")), str)
        await cache_of(verifier).wait_idle()
        assert endpoint.gets == 2
        assert not isinstance(await check(verifier, bearer(old_key, "old")), str)
        assert endpoint.gets == 2  # the failed attempt counts against the interval
        clock.now += 30
        assert isinstance(await check(verifier, bearer(old_key, "other")), str)
        assert endpoint.gets == 3

    with caplog.at_level(logging.WARNING, logger="seqgate.connectors.auth.gcs_jwks"):
        asyncio.run(scenario())
    warnings = [record.getMessage() for record in caplog.records]
    assert len(warnings) == 2, warnings
    assert all(logged in line and "verifying with the 1 held (old)" in line for line in warnings)
    assert sorted(cache_of(verifier).current) == ["old"]


def test_a_fetch_never_holds_the_event_loop(
    endpoint: JwksEndpoint, clock: ManualClock, new_key: rsa.RSAPrivateKey
) -> None:
    verifier = loaded(endpoint, clock)
    endpoint.rotate(jwk(new_key, kid="new"))
    endpoint.hold = threading.Event()
    endpoint.arrived.clear()

    async def scenario() -> dict[str, Any] | str:
        waiting = asyncio.create_task(check(verifier, bearer(new_key, "new")))
        while not endpoint.arrived.is_set():
            await asyncio.sleep(0.01)  # the loop turns while the fetch waits for its answer
        assert not waiting.done()
        assert endpoint.hold is not None
        endpoint.hold.set()
        return await waiting

    assert not isinstance(asyncio.run(scenario()), str)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.mark.parametrize(
    ("status", "body", "message"),
    [(None, None, "could not be fetched"), (500, None, "HTTP 500"), (200, "[]", "JWKS document")],
)
def test_a_failed_first_fetch_is_one_error(
    endpoint: JwksEndpoint, status: int | None, body: str | None, message: str
) -> None:
    url = endpoint.url if status else f"http://127.0.0.1:{free_port()}/certs"
    endpoint.status, endpoint.body = status or 200, body
    with pytest.raises(JwksFetchError) as caught:
        JwksCache(url, timeout_s=5).load()
    assert url in str(caught.value) and message in str(caught.value)
    assert "\n" not in str(caught.value)


def bridge(*options: str) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "seqgate.cli", "bridge", "http"]
    return subprocess.run(
        [*command, "--bootstrap-servers", "127.0.0.1:1", *options],
        capture_output=True,
        env=clean_env(),
        cwd=REPO,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    ("options", "line"),
    [
        (
            ["--gcs-audience", AUDIENCE, "--gcs-jwks-url", "UNREACHABLE"],
            "error: --gcs-jwks-url: Google's signing keys could not be fetched at startup:"
            " UNREACHABLE could not be fetched (",
        ),
        (
            ["--gcs-audience", AUDIENCE, "--gcs-jwks-url", "file:///etc/passwd"],
            "error: --gcs-jwks-url 'file:///etc/passwd': must be an http(s) URL",
        ),
        (
            ["--gcs-audience", AUDIENCE, "--gcs-jwks-url", "URL", "--gcs-jwks-file", "k.json"],
            "error: --gcs-jwks-url: give it or --gcs-jwks-file, not both",
        ),
        (["--gcs-jwks-url", "URL"], "error: --gcs-jwks-url: requires --gcs-audience"),
        (["--gcs-jwks-file", "k.json"], "error: --gcs-jwks-file: requires --gcs-audience"),
    ],
)
def test_the_command_refuses_keys_it_cannot_use_in_one_line(
    endpoint: JwksEndpoint, options: list[str], line: str
) -> None:
    unreachable = f"http://127.0.0.1:{free_port()}/certs"
    options = [
        unreachable if o == "UNREACHABLE" else endpoint.url if o == "URL" else o for o in options
    ]
    done = bridge(*options)
    lines = done.stderr.decode().splitlines()
    assert (done.returncode, len(lines)) == (2, 1), lines
    assert lines[0].startswith(line.replace("UNREACHABLE", unreachable)), lines
