"""Authentication of Pub/Sub push requests: the OIDC token Google attaches.

A push subscription configured with authentication sends
``Authorization: Bearer <jwt>``: a JSON Web Token signed by Google with RS256,
whose claims name the issuer (``https://accounts.google.com``), the audience the
subscription was configured with, the service account it runs as (``email``,
``email_verified``) and its validity window (``iat``, ``exp``; Google's tokens
live one hour).

:class:`GcsPushVerifier` checks such a token against Google's keys (JWKS, see
:mod:`seqgate.connectors.auth.gcs_jwks`): either a fixed set the operator saved to a
file (:func:`load_jwks`), where an unknown ``kid`` fails with a message that says to
refresh the file, or a :class:`~seqgate.connectors.auth.gcs_jwks.JwksCache` fetched
from Google's URL and refreshed by it; :meth:`GcsPushVerifier.prepare` lets the cache
refresh before :meth:`GcsPushVerifier.verify`, which itself never touches the network
and is deterministic under an injected clock.

The header's ``alg`` must be ``RS256``: ``none`` and the HMAC algorithms are
refused outright, since accepting them would let anyone who knows a public key
forge tokens. Every failed check raises
:class:`~seqgate.connectors.errors.WebhookAuthError`: 401 when the credential is
missing or not a bearer token, 403 for every token that is present but fails.
"""

from __future__ import annotations

import contextlib
import json
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, NoReturn

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding

from seqgate.connectors.auth.gcs_jwks import (
    MIN_KEY_BITS,
    RS256,
    JsonWebKeys,
    JwksCache,
    b64url_decode,
    load_jwks,
)
from seqgate.connectors.errors import MISSING, WRONG, WebhookAuthError
from seqgate.connectors.parsers.json_fields import nesting_exceeds, show

__all__ = [
    "GOOGLE_ISSUERS",
    "MAX_TOKEN_LENGTH",
    "MIN_KEY_BITS",
    "GcsPushVerifier",
    "JsonWebKeys",
    "JwksCache",
    "load_jwks",
]

GOOGLE_ISSUERS: Final = frozenset({"accounts.google.com", "https://accounts.google.com"})
"""The ``iss`` values of Google-signed OIDC tokens."""

MAX_TOKEN_LENGTH: Final = 16 * 1024
"""Longer bearer tokens are refused before any decoding (Google's are about 1 KiB)."""

_ALGORITHM: Final = RS256
_BEARER: Final = "bearer"


# --------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class GcsPushVerifier:
    """Verifies the OIDC token of a Pub/Sub push request.

    ``audience`` is the audience configured on the push subscription (required);
    ``service_account``, when set, is the email the token must name, verified.
    Time claims are checked against ``clock()`` with ``leeway_s`` seconds of
    tolerance for clock skew. ``keys`` is a fixed set (a key file) or a loaded
    :class:`JwksCache`.
    """

    keys: JsonWebKeys | JwksCache
    audience: str
    service_account: str | None = None
    leeway_s: float = 60
    clock: Callable[[], float] = field(default=time.time, compare=False)

    def __post_init__(self) -> None:
        if not self.audience:
            raise ValueError("a push audience is required: the token's aud must be checked")
        if not self._keys():
            raise ValueError("at least one verification key is required")
        if self.leeway_s < 0:
            raise ValueError(f"the leeway must not be negative, got {self.leeway_s}")

    def verify(self, authorization_header: str | None) -> dict[str, Any]:
        """Check ``Authorization: Bearer <jwt>``; return the token's claims.

        Raises WebhookAuthError: 401 when the header is missing or not a bearer
        token, 403 when the token is malformed, forged, signed with an unknown
        key or refused algorithm, meant for another audience or issuer, outside
        its validity window, or names another service account.
        """
        token = _bearer_token(authorization_header)
        signing_input, header, claims, signature = _split_token(token)
        algorithm = header.get("alg")
        if algorithm != _ALGORITHM:
            _refuse(f"token algorithm {show(algorithm)} is refused: only {_ALGORITHM} is accepted")
        kid = header.get("kid")
        keys = self._keys()
        key = keys.get(kid) if isinstance(kid, str) else None
        if key is None:
            _refuse(f"token key id {show(kid)} {self._unknown(keys)}")
        try:
            key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            _refuse(f"token signature does not verify with key {show(kid)}: a forged token")
        self._check_claims(claims)
        return claims

    async def prepare(self, authorization_header: str | None) -> None:
        """Let fetched keys refresh for this request's token (see :meth:`JwksCache.ensure`):
        awaited only when its RS256 token names a key id not held; never raises."""
        if isinstance(self.keys, JwksCache):
            await self.keys.ensure(_unverified_kid(authorization_header))

    def _keys(self) -> JsonWebKeys:
        return self.keys.current if isinstance(self.keys, JwksCache) else self.keys

    def _unknown(self, keys: JsonWebKeys) -> str:
        held = ", ".join(sorted(keys))
        if isinstance(self.keys, JwksCache):
            return (
                f"is not among Google's keys fetched from {self.keys.url} ({held}): a forged"
                " token, or the keys could not be refreshed (see the bridge's warnings)"
            )
        return (
            f"is not among the configured keys ({held}):"
            " refresh the key file if Google rotated keys"
        )

    def _check_claims(self, claims: dict[str, Any]) -> None:
        issuer = claims.get("iss")
        if not isinstance(issuer, str) or issuer not in GOOGLE_ISSUERS:
            _refuse(f"token issuer {show(issuer)} is not Google's (https://accounts.google.com)")
        audience = claims.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.audience not in audiences:
            _refuse(f"token audience {show(audience)} is not the configured {self.audience!r}")
        now = self.clock()
        expires = _required_time_claim(claims, "exp")
        issued = _required_time_claim(claims, "iat")
        not_before = _time_claim(claims, "nbf")
        if now > expires + self.leeway_s:
            _refuse(
                f"token expired {now - expires:.0f} s ago (leeway {self.leeway_s:.0f} s): "
                "a replayed or delayed request, or a clock off"
            )
        for name, start in (("iat", issued), ("nbf", not_before)):
            if start is not None and start > now + self.leeway_s:
                _refuse(
                    f"token {name} is {start - now:.0f} s in the future (leeway "
                    f"{self.leeway_s:.0f} s): not valid yet, or a clock off"
                )
        if self.service_account is not None:
            email = claims.get("email")
            if email != self.service_account:
                _refuse(f"token email {show(email)} is not the configured {self.service_account!r}")
            if claims.get("email_verified") is not True:
                _refuse(f"token email {show(email)} is not marked verified (email_verified)")


def _refuse(message: str) -> NoReturn:
    raise WebhookAuthError(WRONG, message)


def _unverified_kid(authorization_header: str | None) -> str | None:
    """The ``kid`` an RS256 token names, before any check of its signature; else None."""
    try:
        _, header, _, _ = _split_token(_bearer_token(authorization_header))
    except WebhookAuthError:
        return None
    kid = header.get("kid")
    return kid if header.get("alg") == _ALGORITHM and isinstance(kid, str) else None


def _bearer_token(header: str | None) -> str:
    if header is None or not header.strip():
        raise WebhookAuthError(
            MISSING, "the Authorization header is missing: expected a bearer token"
        )
    scheme, _, token = header.strip().partition(" ")
    if scheme.lower() != _BEARER or not token.strip():
        raise WebhookAuthError(
            MISSING, f"the Authorization header is not 'Bearer <token>' (scheme {scheme[:20]!r})"
        )
    token = token.strip()
    if len(token) > MAX_TOKEN_LENGTH:
        _refuse(f"the bearer token has {len(token)} characters, more than {MAX_TOKEN_LENGTH}")
    return token


def _split_token(token: str) -> tuple[bytes, dict[str, Any], dict[str, Any], bytes]:
    """``(signing input, header, claims, signature)`` of a compact JWS."""
    parts = token.split(".")
    if len(parts) != 3:
        _refuse(f"the bearer token is not a JWT: {len(parts)} dot-separated parts instead of 3")
    decoded: list[object] = []
    for name, part in zip(("header", "claims"), parts[:2], strict=True):
        try:
            text = b64url_decode(part).decode("utf-8")
            if nesting_exceeds(text):  # bounded before it is decoded, as every JSON text is
                _refuse(f"the token {name} is nested too deeply to be a JWT {name}")
            decoded.append(json.loads(text))
        except (ValueError, UnicodeDecodeError) as error:
            _refuse(f"the token {name} is not base64url JSON: {error}")
        if not isinstance(decoded[-1], dict):
            _refuse(f"the token {name} must be a JSON object")
    try:
        signature = b64url_decode(parts[2])
    except ValueError as error:
        _refuse(f"the token signature is not base64url: {error}")
    header, claims = decoded
    assert isinstance(header, dict) and isinstance(claims, dict)
    return f"{parts[0]}.{parts[1]}".encode("ascii"), header, claims, signature


def _time_claim(claims: dict[str, Any], name: str) -> float | None:
    """A time claim in seconds since the epoch, or None when absent."""
    value = claims.get(name)
    if value is None:
        return None
    seconds = math.nan
    if isinstance(value, int | float) and not isinstance(value, bool):
        with contextlib.suppress(OverflowError):
            seconds = float(value)
    # json.loads accepts NaN and Infinity, which would pass every time comparison.
    if not math.isfinite(seconds):
        _refuse(f"token claim {name} must be a finite number of seconds since the epoch")
    return seconds


def _required_time_claim(claims: dict[str, Any], name: str) -> float:
    seconds = _time_claim(claims, name)
    if seconds is None:
        _refuse(f"token claim {name} is missing: Google's tokens always carry it")
    return seconds
