"""Google-style OIDC tokens made here: a service account, its RS256 key and JWKS, the claims of a
Pub/Sub push token and their signature."""

from __future__ import annotations

import base64
import json
from typing import Any

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

NOW = 1_764_064_800.0
AUDIENCE = "https://seqgate.example.com/gcs/push"
ACCOUNT = "pubsub-push@seqgate-demo.iam.gserviceaccount.com"
KID = "6f7254101f56e41cf35c9926de84a2d552b4c6f1"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def b64url_json(value: Any) -> str:
    return b64url(json.dumps(value).encode("utf-8"))


def b64url_int(number: int) -> str:
    return b64url(number.to_bytes((number.bit_length() + 7) // 8, "big"))


def jwk(key: rsa.RSAPrivateKey, kid: str = KID, **extra: Any) -> dict[str, Any]:
    numbers = key.public_key().public_numbers()
    return {
        "kty": "RSA",
        "alg": "RS256",
        "use": "sig",
        "kid": kid,
        "n": b64url_int(numbers.n),
        "e": b64url_int(numbers.e),
        **extra,
    }


def jwks_text(*keys: dict[str, Any]) -> str:
    return json.dumps({"keys": list(keys)})


def claims(**overrides: Any) -> dict[str, Any]:
    """The claims of a push token as Google issues it, one minute old."""
    base: dict[str, Any] = {
        "aud": AUDIENCE,
        "azp": "113774264463038321964",
        "email": ACCOUNT,
        "email_verified": True,
        "exp": NOW + 3540,
        "iat": NOW - 60,
        "iss": "https://accounts.google.com",
        "sub": "113774264463038321964",
    }
    base.update(overrides)
    return {name: value for name, value in base.items() if value is not None}


def sign(key: rsa.RSAPrivateKey, payload: dict[str, Any], **header: Any) -> str:
    head = {"alg": "RS256", "kid": KID, "typ": "JWT", **header}
    signing_input = f"{b64url_json(head)}.{b64url_json(payload)}".encode("ascii")
    signature = key.sign(signing_input, padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input.decode('ascii')}.{b64url(signature)}"
