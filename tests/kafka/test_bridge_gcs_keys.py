"""`seqgate bridge http` run for real with /gcs verifying under keys it fetches from a JWKS endpoint
on loopback, which rotates its keys while the bridge serves."""

from __future__ import annotations

import asyncio
import time

from cryptography.hazmat.primitives.asymmetric import rsa

from tests.support import gcs_samples
from tests.support.gcs_tokens import claims, jwk, sign
from tests.support.http_bridge import Topicset, command, post_to
from tests.support.http_bridge import topics as topics  # the fixture
from tests.support.jwks_server import jwks_endpoint
from tests.support.webhook_requests import GCS_AUDIENCE
from tests.support.webhook_samples import body_bytes


def token(key: rsa.RSAPrivateKey, kid: str) -> dict[str, str]:
    now = time.time()
    signed = sign(key, claims(aud=GCS_AUDIENCE, iat=now - 60, exp=now + 3540), kid=kid)
    return {"Authorization": f"Bearer {signed}"}


def test_the_bridge_follows_a_key_rotation(topics: Topicset) -> None:
    old, new = (rsa.generate_private_key(public_exponent=65537, key_size=2048) for _ in "on")
    body = body_bytes(gcs_samples.push_envelope(gcs_samples.notification()))
    with (
        jwks_endpoint(jwk(old, kid="old")) as endpoint,
        command(
            *("--events-topic", topics.events, "--rejected-topic", topics.rejected),
            *("--no-s3", "--gcs-audience", GCS_AUDIENCE, "--gcs-jwks-url", endpoint.url),
            bootstrap=topics.bootstrap,
        ) as process,
    ):
        gcs = f"{process.address()}/gcs"
        assert (asyncio.run(post_to(gcs, body, token(old, "old"))), endpoint.gets) == (200, 1)
        endpoint.rotate(jwk(new, kid="new"))
        assert (asyncio.run(post_to(gcs, body, token(new, "new"))), endpoint.gets) == (200, 2)
        # A forged kid right after that refresh: refused without asking the endpoint again.
        assert (asyncio.run(post_to(gcs, body, token(new, "forged"))), endpoint.gets) == (403, 2)
        status, summary, _ = process.stop()
    stderr = "".join(process.stderr)
    assert status == 0, stderr
    assert (summary["published"], summary["auth_failures"]) == (2, 1), stderr
    assert 'token key id \\"forged\\" is not among Google\'s keys' in stderr  # JSON log lines
    assert [event.source for _, _, event in topics.published()] == ["gcs", "gcs"]
