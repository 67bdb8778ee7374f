"""Requests to the HTTP bridge's provider routes: the routes' generated secrets and Google's
signing key (`keys`), a request, and sending it to a running bridge."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from seqgate.connectors.auth.gcs_oidc import GcsPushVerifier, load_jwks
from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.connectors.sources.webhook_routes import (
    AppwriteSettings,
    CloudinarySettings,
    WebhookSettings,
)
from tests.support.gcs_tokens import ACCOUNT, jwk, jwks_text
from tests.support.http_bridge import Running
from tests.support.webhook_samples import (
    APPWRITE_URL,
    CLOUD_NAME,
    new_key,
)

GCS_AUDIENCE = "https://hooks.example.com/gcs"
SECRET_HEADER = "X-Seqgate-Secret"


@dataclass(frozen=True)
class Secrets:
    """Everything the routes are configured with, generated for this module."""

    google: rsa.RSAPrivateKey
    forger: rsa.RSAPrivateKey
    azure: str = field(default_factory=new_key)
    supabase: str = field(default_factory=new_key)
    b2: str = field(default_factory=new_key)
    box_primary: str = field(default_factory=new_key)
    box_secondary: str = field(default_factory=new_key)
    cloudinary: str = field(default_factory=new_key)
    appwrite: str = field(default_factory=new_key)

    def jwks(self) -> str:
        return jwks_text(jwk(self.google))

    def settings(self, **extra: Any) -> HttpSettings:
        webhooks = WebhookSettings(
            gcs=GcsPushVerifier(load_jwks(self.jwks()), GCS_AUDIENCE, ACCOUNT),
            azure_secret=self.azure,
            supabase_secret=self.supabase,
            b2_signing_secret=self.b2,
            box_primary_key=self.box_primary,
            box_secondary_key=self.box_secondary,
            cloudinary=CloudinarySettings(self.cloudinary, CLOUD_NAME),
            appwrite=AppwriteSettings(self.appwrite, APPWRITE_URL),
        )
        return HttpSettings(s3_enabled=False, webhooks=webhooks, **extra)


@pytest.fixture(scope="module")
def keys() -> Secrets:
    def rsa_key() -> rsa.RSAPrivateKey:
        return rsa.generate_private_key(public_exponent=65537, key_size=2048)

    return Secrets(google=rsa_key(), forger=rsa_key())


@dataclass(frozen=True)
class Request:
    body: bytes
    headers: dict[str, str] = field(default_factory=dict)
    query: str = ""


async def send(server: Running, route: str, request: Request) -> tuple[int, dict[str, Any]]:
    return await server.post(f"{route}{request.query}", request.body, request.headers)
