"""Pub/Sub push authentication: Google's OIDC token (seqgate/connectors/auth/gcs_oidc.py)."""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from seqgate.connectors.auth.gcs_oidc import GcsPushVerifier, load_jwks
from seqgate.connectors.errors import WebhookAuthError
from seqgate.connectors.parsers.json_fields import MAX_JSON_DEPTH
from tests.support.gcs_tokens import (
    ACCOUNT,
    AUDIENCE,
    KID,
    NOW,
    b64url,
    b64url_json,
    claims,
    jwk,
    jwks_text,
    sign,
)


@pytest.fixture(scope="module")
def private_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def other_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def verifier(private_key: rsa.RSAPrivateKey) -> GcsPushVerifier:
    return GcsPushVerifier(
        keys=load_jwks(jwks_text(jwk(private_key))),
        audience=AUDIENCE,
        service_account=ACCOUNT,
        clock=lambda: NOW,
    )


def refused(verifier: GcsPushVerifier, header: str | None, status: int = 403) -> str:
    with pytest.raises(WebhookAuthError) as caught:
        verifier.verify(header)
    assert caught.value.status == status, caught.value.message
    return caught.value.message


# --------------------------------------------------------------------------- accepted


def test_valid_token_returns_its_claims(
    verifier: GcsPushVerifier, private_key: rsa.RSAPrivateKey
) -> None:
    token = sign(private_key, claims())
    assert verifier.verify(f"Bearer {token}")["email"] == ACCOUNT
    assert verifier.verify(f"bearer  {token} ")["aud"] == AUDIENCE


@pytest.mark.parametrize(
    "changes",
    [
        {"iss": "accounts.google.com"},
        {"aud": ["other", AUDIENCE]},
        {"exp": NOW - 30},  # inside the 60 s leeway
        {"iat": NOW + 30, "nbf": NOW + 30},
    ],
)
def test_tolerated_variants(
    verifier: GcsPushVerifier, private_key: rsa.RSAPrivateKey, changes: dict[str, Any]
) -> None:
    verifier.verify(f"Bearer {sign(private_key, claims(**changes))}")


def test_service_account_check_is_optional(private_key: rsa.RSAPrivateKey) -> None:
    open_verifier = GcsPushVerifier(
        keys=load_jwks(jwks_text(jwk(private_key))), audience=AUDIENCE, clock=lambda: NOW
    )
    token = sign(private_key, claims(email="someone@else.example", email_verified=False))
    open_verifier.verify(f"Bearer {token}")


# --------------------------------------------------------------------------- refused


@pytest.mark.parametrize("header", [None, "", "   ", "Basic dXNlcjpwYXNz", "Bearer", "Bearer  "])
def test_missing_credential_is_401(verifier: GcsPushVerifier, header: str | None) -> None:
    refused(verifier, header, status=401)


def test_forged_token_is_refused(verifier: GcsPushVerifier, other_key: rsa.RSAPrivateKey) -> None:
    assert "forged" in refused(verifier, f"Bearer {sign(other_key, claims())}")


def test_tampered_claims_are_refused(
    verifier: GcsPushVerifier, private_key: rsa.RSAPrivateKey
) -> None:
    header, _, signature = sign(private_key, claims()).split(".")
    tampered = b64url_json(claims(email="attacker@evil.example"))
    assert "forged" in refused(verifier, f"Bearer {header}.{tampered}.{signature}")


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"aud": "https://other.example.com/push"}, "audience"),
        ({"aud": None}, "audience"),
        ({"iss": "https://evil.example.com"}, "issuer"),
        ({"iss": ["accounts.google.com"]}, "issuer"),
        ({"exp": NOW - 61}, "expired"),  # outside the window: a replay
        ({"exp": NOW - 86400, "iat": NOW - 90000}, "expired"),
        ({"exp": None}, "exp is missing"),
        ({"iat": None}, "iat is missing"),
        ({"exp": "tomorrow"}, "exp must be"),
        ({"exp": True}, "exp must be"),
        ({"exp": 10**400}, "exp must be"),
        ({"iat": NOW + 3600}, "iat is"),
        ({"nbf": NOW + 600}, "nbf is"),
        ({"email": "other@seqgate-demo.iam.gserviceaccount.com"}, "email"),
        ({"email": None}, "email"),
        ({"email_verified": False}, "verified"),
        ({"email_verified": "true"}, "verified"),
    ],
)
def test_wrong_claims_are_refused(
    verifier: GcsPushVerifier,
    private_key: rsa.RSAPrivateKey,
    changes: dict[str, Any],
    needle: str,
) -> None:
    message = refused(verifier, f"Bearer {sign(private_key, claims(**changes))}")
    assert needle in message


def test_non_finite_times_are_refused(
    verifier: GcsPushVerifier, private_key: rsa.RSAPrivateKey
) -> None:
    header = b64url_json({"alg": "RS256", "kid": KID})
    body = json.dumps(claims()).replace(str(NOW + 3540), "Infinity")
    assert "Infinity" in body
    signing_input = f"{header}.{b64url(body.encode())}".encode()
    signature = private_key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    token = f"{signing_input.decode()}.{b64url(signature)}"
    assert "finite" in refused(verifier, f"Bearer {token}")


def test_alg_none_is_refused(verifier: GcsPushVerifier) -> None:
    token = f"{b64url_json({'alg': 'none', 'kid': KID})}.{b64url_json(claims())}."
    assert "'none'" in refused(verifier, f"Bearer {token}").replace('"', "'")


def test_hs256_signed_with_the_public_key_is_refused(
    verifier: GcsPushVerifier, private_key: rsa.RSAPrivateKey
) -> None:
    # The classic confusion attack: HMAC keyed with the (public) RSA modulus.
    secret = jwk(private_key)["n"].encode()
    signing_input = f"{b64url_json({'alg': 'HS256', 'kid': KID})}.{b64url_json(claims())}"
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    assert "HS256" in refused(verifier, f"Bearer {signing_input}.{b64url(mac)}")


def test_unknown_kid_is_refused(verifier: GcsPushVerifier, private_key: rsa.RSAPrivateKey) -> None:
    message = refused(verifier, f"Bearer {sign(private_key, claims(), kid='rotated-key')}")
    assert "rotated-key" in message and "refresh the key file" in message


def test_missing_kid_is_refused(verifier: GcsPushVerifier, private_key: rsa.RSAPrivateKey) -> None:
    assert "key id" in refused(verifier, f"Bearer {sign(private_key, claims(), kid=None)}")


@pytest.mark.parametrize(
    "token",
    [
        "abc",
        "a.b",
        "a.b.c.d",
        "!!.e30.sig",
        f"{b64url(b'not json')}.{b64url_json({})}.sig",
        f"{b64url_json([1])}.{b64url_json({})}.sig",
        f"{b64url_json({'alg': 'RS256', 'kid': KID})}.{b64url_json({})}.a=b",
        "x" * 20000,
    ],
)
def test_malformed_tokens_are_refused(verifier: GcsPushVerifier, token: str) -> None:
    refused(verifier, f"Bearer {token}")


@pytest.mark.parametrize("part", ["header", "claims"])
def test_a_token_part_nested_past_the_json_depth_limit_is_refused_unread(
    verifier: GcsPushVerifier, part: str
) -> None:
    """Held to the bridge's JSON depth limit before it is decoded, like every JSON text."""
    deep: Any = {"alg": "RS256", "kid": KID}
    for _ in range(MAX_JSON_DEPTH):
        deep = {"x": deep}
    parts = {"header": b64url_json({"alg": "RS256", "kid": KID}), "claims": b64url_json({})}
    parts[part] = b64url_json(deep)
    message = refused(verifier, f"Bearer {parts['header']}.{parts['claims']}.sig")
    assert f"token {part} is nested too deeply" in message


# --------------------------------------------------------------------------- key files


def test_load_jwks_keeps_rsa_signing_keys(
    private_key: rsa.RSAPrivateKey, other_key: rsa.RSAPrivateKey
) -> None:
    keys = load_jwks(
        jwks_text(
            jwk(private_key),
            jwk(other_key, kid="second"),
            {"kty": "EC", "kid": "ec", "crv": "P-256", "x": "AA", "y": "AA"},
            jwk(other_key, kid="encryption", use="enc"),
        )
    )
    assert sorted(keys) == sorted([KID, "second"])
    assert keys[KID].public_numbers() == private_key.public_key().public_numbers()


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("not json", "not JSON"),
        ("[]", "JWKS"),
        ('{"keys": {}}', "JWKS"),
        ('{"keys": []}', "no RSA signing key"),
        ('{"keys": [3]}', "keys[0]"),
        ('{"keys": [{"kty": "RSA", "n": "AQAB", "e": "AQAB"}]}', "kid"),
        ('{"keys": [{"kty": "RSA", "kid": "k", "e": "AQAB"}]}', '"n"'),
        ('{"keys": [{"kty": "RSA", "kid": "k", "n": "a+b/", "e": "AQAB"}]}', '"n"'),
        ('{"keys": [{"kty": "RSA", "kid": "k", "n": "AQAB", "e": "AQAB"}]}', "fewer than 2048"),
    ],
)
def test_load_jwks_refuses_bad_key_files(text: str, needle: str) -> None:
    with pytest.raises(ValueError, match=re.escape(needle)):
        load_jwks(text)


def test_load_jwks_refuses_a_repeated_kid(private_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(ValueError, match="repeats a key id"):
        load_jwks(jwks_text(jwk(private_key), jwk(private_key)))


def test_verifier_requires_an_audience(private_key: rsa.RSAPrivateKey) -> None:
    with pytest.raises(ValueError, match="audience"):
        GcsPushVerifier(keys=load_jwks(jwks_text(jwk(private_key))), audience="")
