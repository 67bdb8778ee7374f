"""Verifying the signature of an SNS message delivered over HTTP(S).

Amazon SNS signs every message it POSTs to an HTTP(S) subscription
(AWS's "Verifying the signatures of Amazon SNS messages"):

* ``SignatureVersion`` ``1`` is SHA1withRSA, ``2`` is SHA256withRSA (PKCS #1 v1.5),
  over the *string to sign*: for a ``Notification`` the members ``Message``,
  ``MessageId``, ``Subject`` (only if present), ``Timestamp``, ``TopicArn``,
  ``Type``; for a ``SubscriptionConfirmation`` or ``UnsubscribeConfirmation``
  ``Message``, ``MessageId``, ``SubscribeURL``, ``Timestamp``, ``Token``,
  ``TopicArn``, ``Type``; each written as ``Name\\nvalue\\n``.
* the public key is in the X.509 certificate at ``SigningCertURL``, which must be
  an ``https`` URL on an SNS host (``sns.<region>.amazonaws.com``, ``.com.cn`` in
  China): otherwise anyone could sign with a certificate of their own.

On top of the signature, :class:`SnsVerifier` pins the topic (only the configured
``TopicArn`` values are accepted) and refuses a message whose ``Timestamp`` is
outside a window around now (a replayed old message).

Certificates are fetched through an injectable callable (URL -> PEM bytes), so
tests can serve a certificate they generated; :class:`CertificateCache` is the
production fetcher (``urllib`` with a timeout, cached by URL). Everything else
here is pure. A failed check raises :class:`SnsVerificationError` with a
one-line reason: a :class:`~seqgate.connectors.errors.WebhookAuthError` whose
status is always 403 (an SNS message carries its credential, so none is "missing").
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import threading
import time
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Final
from urllib.parse import urlsplit

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from seqgate.connectors.errors import SnsVerificationError
from seqgate.connectors.parsers.json_fields import nesting_exceeds

__all__ = [
    "DEFAULT_HOST_PATTERN",
    "DEFAULT_MAX_AGE_SECONDS",
    "CertificateCache",
    "SnsVerifier",
    "check_sns_url",
    "decode_sns_message",
    "string_to_sign",
    "verify_signature",
]

DEFAULT_HOST_PATTERN: Final = re.compile(r"^sns\.[a-z0-9-]+\.amazonaws\.com(\.cn)?$")
"""Hosts that may serve SNS signing certificates and subscription URLs."""

DEFAULT_MAX_AGE_SECONDS: Final = 3600.0

NOTIFICATION: Final = "Notification"
SUBSCRIPTION_CONFIRMATION: Final = "SubscriptionConfirmation"
UNSUBSCRIBE_CONFIRMATION: Final = "UnsubscribeConfirmation"

_NOTIFICATION_FIELDS: Final = ("Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type")
_HANDSHAKE_FIELDS: Final = (
    "Message",
    "MessageId",
    "SubscribeURL",
    "Timestamp",
    "Token",
    "TopicArn",
    "Type",
)
_HASHES: Final[Mapping[str, Callable[[], hashes.HashAlgorithm]]] = {
    "1": hashes.SHA1,
    "2": hashes.SHA256,
}
_MAX_CERTIFICATE_BYTES: Final = 64 * 1024


def decode_sns_message(raw: bytes) -> dict[str, object]:
    """The JSON object of a request body, before its signature is checked; a body that
    is not one is refused (403) like a forged message."""
    if nesting_exceeds(raw):  # bounded before it is decoded, as every JSON text is
        raise SnsVerificationError("the body is not an SNS message (nested too deeply)")
    try:
        document = json.loads(raw)
    except ValueError:
        raise SnsVerificationError("the body is not an SNS message (not JSON)") from None
    if not isinstance(document, dict):
        raise SnsVerificationError("the body is not an SNS message (not an object)")
    return document


def _text(message: Mapping[str, object], name: str) -> str:
    value = message.get(name)
    if not isinstance(value, str):
        shown = "missing" if value is None else f"not a string ({type(value).__name__})"
        raise SnsVerificationError(f"{name} is {shown}")
    return value


def string_to_sign(message: Mapping[str, object]) -> bytes:
    """The bytes SNS signed for ``message`` (per its ``Type``)."""
    kind = _text(message, "Type")
    if kind == NOTIFICATION:
        names: Iterable[str] = _NOTIFICATION_FIELDS
    elif kind in (SUBSCRIPTION_CONFIRMATION, UNSUBSCRIBE_CONFIRMATION):
        names = _HANDSHAKE_FIELDS
    else:
        raise SnsVerificationError(f"Type {kind[:40]!r} is not an SNS message type")
    parts = []
    for name in names:
        if name == "Subject" and message.get(name) is None:
            continue  # signed only when present
        parts.append(f"{name}\n{_text(message, name)}\n")
    return "".join(parts).encode("utf-8")


def check_sns_url(url: str, host_pattern: re.Pattern[str], what: str) -> None:
    """Refuse a URL that is not https on a host matching ``host_pattern``."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise SnsVerificationError(f"{what} {url[:100]!r} is not a URL: {error}") from None
    host = parts.hostname or ""
    if parts.scheme != "https":
        raise SnsVerificationError(f"{what} {url[:100]!r} is not an https URL")
    if parts.username is not None or parts.password is not None or port not in (None, 443):
        raise SnsVerificationError(f"{what} {url[:100]!r} has user info or a port")
    if not host_pattern.fullmatch(host):
        raise SnsVerificationError(
            f"{what} host {host[:100]!r} is not an SNS host ({host_pattern.pattern})"
        )


def verify_signature(
    message: Mapping[str, object], certificate_pem: bytes, *, now: datetime | None = None
) -> None:
    """Check ``Signature`` against the certificate's RSA key (versions 1 and 2), and the
    certificate's validity (both bounds included) at ``now``, by default the current time."""
    version = _text(message, "SignatureVersion")
    algorithm = _HASHES.get(version)
    if algorithm is None:
        raise SnsVerificationError(f"SignatureVersion {version[:10]!r} is not 1 or 2")
    try:
        signature = base64.b64decode(_text(message, "Signature"), validate=True)
    except (binascii.Error, ValueError):
        raise SnsVerificationError("Signature is not base64") from None
    try:
        certificate = x509.load_pem_x509_certificate(certificate_pem)
    except ValueError as error:
        raise SnsVerificationError(f"the signing certificate is not PEM X.509: {error}") from None
    if now is None:
        now = datetime.now(UTC)
    if not certificate.not_valid_before_utc <= now <= certificate.not_valid_after_utc:
        raise SnsVerificationError("the signing certificate is not valid now")
    key = certificate.public_key()
    if not isinstance(key, rsa.RSAPublicKey):
        raise SnsVerificationError("the signing certificate's key is not RSA")
    try:
        key.verify(signature, string_to_sign(message), padding.PKCS1v15(), algorithm())
    except InvalidSignature:
        raise SnsVerificationError(f"the signature (version {version}) does not verify") from None


def parse_timestamp(text: str) -> datetime:
    """SNS's ``Timestamp`` (ISO 8601, UTC, e.g. ``2026-06-01T12:00:00.000Z``)."""
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise SnsVerificationError(f"Timestamp {text[:40]!r} is not ISO 8601") from None
    if when.tzinfo is None:
        raise SnsVerificationError(f"Timestamp {text[:40]!r} has no time zone")
    return when


@dataclass
class CertificateCache:
    """Production certificate fetcher: https GET with a timeout, cached by URL.

    Call only with URLs that passed :func:`check_sns_url`.
    """

    timeout_s: float = 5.0
    _cache: dict[str, bytes] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, url: str) -> bytes:
        with self._lock:
            cached = self._cache.get(url)
        if cached is not None:
            return cached
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as response:
                pem: bytes = response.read(_MAX_CERTIFICATE_BYTES + 1)
        except OSError as error:
            raise SnsVerificationError(f"cannot fetch the signing certificate: {error}") from None
        if len(pem) > _MAX_CERTIFICATE_BYTES:
            raise SnsVerificationError("the signing certificate is implausibly large")
        with self._lock:
            self._cache[url] = pem
        return pem


@dataclass(frozen=True)
class SnsVerifier:
    """All the checks of one SNS message: URL, signature, topic, timestamp."""

    topic_arns: frozenset[str]
    fetch_certificate: Callable[[str], bytes]
    max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS
    host_pattern: re.Pattern[str] = DEFAULT_HOST_PATTERN
    clock: Callable[[], float] = time.time

    def verify(self, message: Mapping[str, object]) -> str:
        """Raise SnsVerificationError unless ``message`` is authentic and current; its Type."""
        kind = _text(message, "Type")
        string_to_sign(message)  # the members it needs are there
        topic = _text(message, "TopicArn")
        if topic not in self.topic_arns:
            raise SnsVerificationError(f"TopicArn {topic[:200]!r} is not a configured topic")
        when = parse_timestamp(_text(message, "Timestamp"))
        age = self.clock() - when.timestamp()
        if abs(age) > self.max_age_seconds:
            raise SnsVerificationError(
                f"Timestamp {when.isoformat()} is {age:.0f}s from now"
                f" (allowed: {self.max_age_seconds:.0f}s)"
            )
        url = _text(message, "SigningCertURL")
        check_sns_url(url, self.host_pattern, "SigningCertURL")
        verify_signature(message, self.fetch_certificate(url))
        if kind == SUBSCRIPTION_CONFIRMATION:
            check_sns_url(_text(message, "SubscribeURL"), self.host_pattern, "SubscribeURL")
        return kind
