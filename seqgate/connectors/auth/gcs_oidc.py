"""Authentication of Pub/Sub push requests: the OIDC token Google attaches.

A push subscription configured with authentication sends
``Authorization: Bearer <jwt>``: a JSON Web Token signed by Google with RS256,
whose claims name the issuer (``https://accounts.google.com``), the audience the
subscription was configured with, the service account it runs as (``email``,
``email_verified``) and its validity window (``iat``, ``exp``; Google's tokens
live one hour).

:class:`GcsPushVerifier` checks such a token against **configured** keys: a
JWKS document (Google publishes its current keys at
``https://www.googleapis.com/oauth2/v3/certs``) that the operator stores in a
file and the caller loads with :func:`load_jwks`. Nothing here touches the
network, so verification is deterministic and testable with an injected clock.
Google rotates its keys every few days; an unknown ``kid`` therefore fails with
a message that says to refresh the key file.

The header's ``alg`` must be ``RS256``: ``none`` and the HMAC algorithms are
refused outright, since accepting them would let anyone who knows a public key
forge tokens. Every failed check raises
:class:`~seqgate.connectors.auth.shared.WebhookAuthError`: 401 when the credential is
missing or not a bearer token, 403 for every token that is present but fails.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, NoReturn

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey, RSAPublicNumbers

from seqgate.connectors.auth.shared import MISSING, WRONG, WebhookAuthError
from seqgate.connectors.parsers.json_fields import nesting_exceeds, show

__all__ = [
    "GOOGLE_ISSUERS",
    "MAX_TOKEN_LENGTH",
    "MIN_KEY_BITS",
    "GcsPushVerifier",
    "JsonWebKeys",
    "load_jwks",
]

GOOGLE_ISSUERS: Final = frozenset({"accounts.google.com", "https://accounts.google.com"})
"""The ``iss`` values of Google-signed OIDC tokens."""

MAX_TOKEN_LENGTH: Final = 16 * 1024
"""Longer bearer tokens are refused before any decoding (Google's are about 1 KiB)."""

MIN_KEY_BITS: Final = 2048
"""The smallest RSA modulus :func:`load_jwks` accepts."""

JsonWebKeys = Mapping[str, RSAPublicKey]
"""Verification keys by key id (``kid``)."""

_ALGORITHM: Final = "RS256"
_BEARER: Final = "bearer"


def _b64url_decode(text: str) -> bytes:
    """Decode unpadded base64url (RFC 7515); raises ValueError for anything else."""
    if "=" in text or "+" in text or "/" in text:
        raise ValueError("not unpadded base64url")
    try:
        return base64.b64decode(
            text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4), validate=True
        )
    except binascii.Error as error:
        raise ValueError(f"not base64url: {error}") from None


# --------------------------------------------------------------------------- keys


def load_jwks(text: str) -> JsonWebKeys:
    """Read a JWKS document (``{"keys": [{"kty": "RSA", "kid", "n", "e"}, ...]}``).

    Keys of another type (``kty`` not ``RSA``), or marked for another use or
    algorithm than signing with RS256, are skipped. Raises ValueError naming
    the key and the problem for text that is not such a document, an RSA key
    without ``kid``, ``n`` or ``e``, a malformed or too short (under
    :data:`MIN_KEY_BITS`) key, a repeated ``kid``, or no usable key at all.
    """
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"the key file is not JSON: {error}") from None
    keys = document.get("keys") if isinstance(document, dict) else None
    if not isinstance(keys, list):
        raise ValueError('the key file must be a JWKS document: a JSON object with a "keys" array')
    loaded: dict[str, RSAPublicKey] = {}
    for index, entry in enumerate(keys):
        where = f"keys[{index}]"
        if not isinstance(entry, dict):
            raise ValueError(f"{where} must be a JSON object (a JSON Web Key)")
        if (
            entry.get("kty") != "RSA"
            or entry.get("use", "sig") != "sig"
            or entry.get("alg", _ALGORITHM) != _ALGORITHM
        ):
            continue
        kid = entry.get("kid")
        if not isinstance(kid, str) or not kid:
            raise ValueError(f'{where} has no "kid": tokens name their key by it')
        where = f"{where} (kid {show(kid)})"
        if kid in loaded:
            raise ValueError(f"{where} repeats a key id: each kid must name one key")
        loaded[kid] = _rsa_key(entry, where)
    if not loaded:
        raise ValueError(f'the key file holds no RSA signing key ("kty": "RSA") for {_ALGORITHM}')
    return MappingProxyType(loaded)


def _rsa_key(entry: dict[str, Any], where: str) -> RSAPublicKey:
    numbers: list[int] = []
    for name in ("n", "e"):
        value = entry.get(name)
        try:
            if not isinstance(value, str) or not value:
                raise ValueError("missing")
            numbers.append(int.from_bytes(_b64url_decode(value), "big"))
        except ValueError as error:
            raise ValueError(f'{where}: "{name}" must be a base64url integer ({error})') from None
    modulus, exponent = numbers
    if modulus.bit_length() < MIN_KEY_BITS:
        raise ValueError(
            f"{where}: the modulus has {modulus.bit_length()} bits, fewer than {MIN_KEY_BITS}"
        )
    try:
        return RSAPublicNumbers(exponent, modulus).public_key()
    except ValueError as error:
        raise ValueError(f"{where}: not a valid RSA public key ({error})") from None


# --------------------------------------------------------------------------- tokens


@dataclass(frozen=True)
class GcsPushVerifier:
    """Verifies the OIDC token of a Pub/Sub push request.

    ``audience`` is the audience configured on the push subscription (required);
    ``service_account``, when set, is the email the token must name, verified.
    Time claims are checked against ``clock()`` with ``leeway_s`` seconds of
    tolerance for clock skew.
    """

    keys: JsonWebKeys
    audience: str
    service_account: str | None = None
    leeway_s: float = 60
    clock: Callable[[], float] = field(default=time.time, compare=False)

    def __post_init__(self) -> None:
        if not self.audience:
            raise ValueError("a push audience is required: the token's aud must be checked")
        if not self.keys:
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
        key = self.keys.get(kid) if isinstance(kid, str) else None
        if key is None:
            _refuse(
                f"token key id {show(kid)} is not among the configured keys "
                f"({', '.join(sorted(self.keys))}): refresh the key file if Google rotated keys"
            )
        try:
            key.verify(signature, signing_input, padding.PKCS1v15(), hashes.SHA256())
        except InvalidSignature:
            _refuse(f"token signature does not verify with key {show(kid)}: a forged token")
        self._check_claims(claims)
        return claims

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
            text = _b64url_decode(part).decode("utf-8")
            if nesting_exceeds(text):  # bounded before it is decoded, as every JSON text is
                _refuse(f"the token {name} is nested too deeply to be a JWT {name}")
            decoded.append(json.loads(text))
        except (ValueError, UnicodeDecodeError) as error:
            _refuse(f"the token {name} is not base64url JSON: {error}")
        if not isinstance(decoded[-1], dict):
            _refuse(f"the token {name} must be a JSON object")
    try:
        signature = _b64url_decode(parts[2])
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
