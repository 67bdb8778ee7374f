"""Google's signing keys for the OIDC tokens of Pub/Sub push: a JWKS document.

Either read once from a file the operator saved (:func:`load_jwks`; offline and
air-gapped deployments), or fetched from a URL (:data:`GOOGLE_JWKS_URL`, Google's
documented one, by default) and kept fresh by a :class:`JwksCache`:

* the first fetch happens at startup (:meth:`JwksCache.load`) and a failure
  there is the caller's error: a bridge without keys would refuse every push;
* the keys are kept for the ``Cache-Control: max-age`` of the answer, bounded
  to [:data:`MIN_TTL_S`, :data:`MAX_TTL_S`]; once stale they are refreshed in
  the background while requests go on being verified with them;
* a token naming a key id the cache does not hold triggers a refresh that the
  request awaits (at most ``timeout_s``): Google publishes a new key before it
  signs with it, so this only happens when the refresh by age was missed;
* whatever triggers it, at most one fetch starts per ``refetch_interval_s``,
  so forged tokens with made-up key ids cannot make the bridge hammer Google;
* a failed refresh (network, HTTP status, not a usable JWKS) keeps the keys
  held and logs one warning per attempt.

Fetches run in a worker thread (:func:`asyncio.to_thread`), never on the
event loop that serves the other requests.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import http.client
import json
import logging
import math
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey, RSAPublicNumbers

from seqgate.connectors.errors import JwksFetchError
from seqgate.connectors.parsers.json_fields import show

__all__ = [
    "GOOGLE_JWKS_URL",
    "MAX_TTL_S",
    "MIN_KEY_BITS",
    "MIN_TTL_S",
    "JsonWebKeys",
    "JwksCache",
    "b64url_decode",
    "cache_lifetime",
    "load_jwks",
]

GOOGLE_JWKS_URL: Final = "https://www.googleapis.com/oauth2/v3/certs"
"""Where Google publishes the keys that sign its OIDC tokens."""

MIN_KEY_BITS: Final = 2048
"""The smallest RSA modulus :func:`load_jwks` accepts."""

MIN_TTL_S: Final = 60.0
MAX_TTL_S: Final = 86_400.0
DEFAULT_TTL_S: Final = 3_600.0
"""How long fetched keys are kept without ``max-age`` in the answer."""

MAX_JWKS_BYTES: Final = 1024 * 1024
"""A larger answer is refused unread (Google's is about 2 KiB)."""

JsonWebKeys = Mapping[str, RSAPublicKey]
"""Verification keys by key id (``kid``)."""

RS256: Final = "RS256"

log = logging.getLogger(__name__)


def b64url_decode(text: str) -> bytes:
    """Decode unpadded base64url (RFC 7515); raises ValueError for anything else."""
    if "=" in text or "+" in text or "/" in text:
        raise ValueError("not unpadded base64url")
    try:
        return base64.b64decode(
            text.replace("-", "+").replace("_", "/") + "=" * (-len(text) % 4), validate=True
        )
    except binascii.Error as error:
        raise ValueError(f"not base64url: {error}") from None


# --------------------------------------------------------------------------- documents


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
            or entry.get("alg", RS256) != RS256
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
        raise ValueError(f'the key file holds no RSA signing key ("kty": "RSA") for {RS256}')
    return MappingProxyType(loaded)


def _rsa_key(entry: dict[str, Any], where: str) -> RSAPublicKey:
    numbers: list[int] = []
    for name in ("n", "e"):
        value = entry.get(name)
        try:
            if not isinstance(value, str) or not value:
                raise ValueError("missing")
            numbers.append(int.from_bytes(b64url_decode(value), "big"))
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


def cache_lifetime(cache_control: str | None) -> float:
    """Seconds to keep an answer with this ``Cache-Control``: its ``max-age`` bounded to
    [MIN_TTL_S, MAX_TTL_S], the minimum for ``no-cache``/``no-store``, else DEFAULT_TTL_S."""
    ttl = DEFAULT_TTL_S
    for directive in (cache_control or "").lower().split(","):
        name, _, value = directive.strip().partition("=")
        if name in ("no-cache", "no-store"):
            return MIN_TTL_S
        if name == "max-age":
            try:
                ttl = float(int(value.strip().strip('"')))
            except ValueError:
                continue
    return min(max(ttl, MIN_TTL_S), MAX_TTL_S)


# --------------------------------------------------------------------------- fetching


Fetcher = Callable[[str, float], tuple[str, str | None]]
"""``(url, timeout_s) -> (body, Cache-Control)``; raises JwksFetchError."""


def fetch_jwks(url: str, timeout_s: float) -> tuple[str, str | None]:
    """GET ``url``: the body as text and its ``Cache-Control`` header."""
    request = urllib.request.Request(url, headers={"Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read(MAX_JWKS_BYTES + 1)
            cache_control = response.headers.get("Cache-Control")
    except urllib.error.HTTPError as error:
        raise JwksFetchError(f"{url} answered HTTP {error.code} {error.reason}") from None
    except (urllib.error.URLError, http.client.HTTPException, OSError, ValueError) as error:
        reason = getattr(error, "reason", None) or error
        raise JwksFetchError(f"{url} could not be fetched ({reason})") from None
    if len(body) > MAX_JWKS_BYTES:
        raise JwksFetchError(f"{url} answered more than {MAX_JWKS_BYTES} bytes: not a JWKS")
    try:
        return body.decode("utf-8"), cache_control
    except UnicodeDecodeError:
        raise JwksFetchError(f"{url} answered bytes that are not UTF-8 text") from None


def _fetch_keys(fetch: Fetcher, url: str, timeout_s: float) -> tuple[JsonWebKeys, float]:
    text, cache_control = fetch(url, timeout_s)
    try:
        keys = load_jwks(text)
    except ValueError as error:
        raise JwksFetchError(f"{url}: {error}".replace("the key file", "the answer")) from None
    return keys, cache_lifetime(cache_control)


class JwksCache:
    """Keys fetched from ``url``, refreshed by age and on unknown key ids (module doc).

    ``clock`` is monotonic seconds; ``fetch`` the HTTP GET (a test may count calls).
    """

    def __init__(
        self,
        url: str = GOOGLE_JWKS_URL,
        *,
        timeout_s: float = 5.0,
        refetch_interval_s: float = 30.0,
        clock: Callable[[], float] = time.monotonic,
        fetch: Fetcher = fetch_jwks,
    ) -> None:
        self.url = url
        self.timeout_s = timeout_s
        self.refetch_interval_s = refetch_interval_s
        self.clock = clock
        self._fetch = fetch
        self._keys: JsonWebKeys = MappingProxyType({})
        self._expires = -math.inf
        self._last_attempt = -math.inf
        self._inflight: asyncio.Task[None] | None = None

    @property
    def current(self) -> JsonWebKeys:
        """The keys held now (empty before :meth:`load`)."""
        return self._keys

    def load(self) -> None:
        """Fetch the keys now, in this thread (at startup); raises JwksFetchError. Not
        counted against ``refetch_interval_s``: a rotation seen by the first requests
        is fetched at once."""
        self._apply(*_fetch_keys(self._fetch, self.url, self.timeout_s))

    async def ensure(self, kid: str | None) -> None:
        """Make the keys fit for a token naming ``kid``: start a refresh when they are
        stale (not awaited), and await one (bounded) when ``kid`` is not among them."""
        unknown = kid is not None and kid not in self._keys
        if self._inflight is None and (unknown or self.clock() >= self._expires):
            if self.clock() - self._last_attempt < self.refetch_interval_s:
                return
            self._last_attempt = self.clock()
            self._inflight = asyncio.create_task(self._refresh())
        if unknown and self._inflight is not None:
            try:
                await asyncio.wait_for(asyncio.shield(self._inflight), self.timeout_s + 1)
            except TimeoutError:
                return

    async def wait_idle(self) -> None:
        """Return once no refresh is running (tests, shutdown)."""
        if self._inflight is not None:
            await asyncio.shield(self._inflight)

    async def _refresh(self) -> None:
        try:
            fetched = await asyncio.to_thread(_fetch_keys, self._fetch, self.url, self.timeout_s)
        except JwksFetchError as error:
            log.warning(
                "GCS signing keys not refreshed, verifying with the %d held (%s): %s;"
                " next attempt in %.0f s at the earliest",
                len(self._keys),
                ", ".join(sorted(self._keys)),
                error,
                self.refetch_interval_s,
            )
        else:
            self._apply(*fetched)
        finally:
            self._inflight = None

    def _apply(self, keys: JsonWebKeys, ttl: float) -> None:
        if set(keys) != set(self._keys):
            log.info("GCS signing keys from %s: %s", self.url, ", ".join(sorted(keys)))
        self._keys = keys
        self._expires = self.clock() + ttl
