"""SNS messages signed here as Amazon SNS signs them (versions 1 and 2).

``SnsSigner`` plays Amazon SNS: an RSA key, a self-signed certificate served at an
SNS-looking URL by a fake fetcher, and messages signed over AWS's string to sign.
"""

from __future__ import annotations

import base64
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificateIssuerPrivateKeyTypes
from cryptography.x509.oid import NameOID

from seqgate.connectors.auth.sns_signature import string_to_sign
from seqgate.connectors.errors import SnsVerificationError

TOPIC = "arn:aws:sns:eu-west-1:123456789012:uploads"
CERT_URL = "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-seqgate-test.pem"
SUBSCRIBE_URL = (
    "https://sns.eu-west-1.amazonaws.com/?Action=ConfirmSubscription"
    f"&TopicArn={TOPIC}&Token=2336412f37"
)
NOW = dt.datetime(2026, 11, 30, 12, 0, 0, tzinfo=dt.UTC)


def make_certificate(
    key: CertificateIssuerPrivateKeyTypes,
    *,
    valid_from: dt.timedelta = dt.timedelta(days=-1),
    valid_until: dt.timedelta = dt.timedelta(days=30),
    now: dt.datetime | None = None,
) -> bytes:
    """A self-signed certificate of ``key`` (RSA, or another kind SNS never uses), valid
    from now + ``valid_from`` to now + ``valid_until``; by default the real now, which the
    verifier checks the window against unless it is given another."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "sns.amazonaws.com")])
    now = dt.datetime.now(dt.UTC) if now is None else now
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + valid_from)
        .not_valid_after(now + valid_until)
        .sign(key, hashes.SHA256())
    )
    return certificate.public_bytes(serialization.Encoding.PEM)


@dataclass
class SnsSigner:
    """Signs SNS messages; `fetch` serves its certificate at CERT_URL (and at any URL added)."""

    key: rsa.RSAPrivateKey
    certificate: bytes
    served: dict[str, bytes] = field(default_factory=dict)
    fetched: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.served.setdefault(CERT_URL, self.certificate)

    def fetch(self, url: str) -> bytes:
        self.fetched.append(url)
        try:
            return self.served[url]
        except KeyError:
            raise SnsVerificationError(f"no certificate at {url}") from None

    def sign(self, message: dict[str, Any], version: str = "2") -> dict[str, Any]:
        message = {**message, "SignatureVersion": version}
        message.setdefault("SigningCertURL", CERT_URL)
        algorithm = hashes.SHA1() if version == "1" else hashes.SHA256()
        signature = self.key.sign(string_to_sign(message), padding.PKCS1v15(), algorithm)
        message["Signature"] = base64.b64encode(signature).decode("ascii")
        return message


_KEYS: dict[str, rsa.RSAPrivateKey] = {}


def rsa_key(name: str) -> rsa.RSAPrivateKey:
    """One 2048-bit key per name for the whole session (generation takes a while)."""
    if name not in _KEYS:
        _KEYS[name] = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return _KEYS[name]


def new_signer(name: str = "sns") -> SnsSigner:
    key = rsa_key(name)
    return SnsSigner(key, make_certificate(key))


def iso(when: dt.datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def notification(
    message: str, *, topic: str = TOPIC, when: dt.datetime = NOW, subject: str | None = "S3"
) -> dict[str, Any]:
    document: dict[str, Any] = {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": topic,
        "Message": message,
        "Timestamp": iso(when),
        "UnsubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe",
    }
    if subject is not None:
        document["Subject"] = subject
    return document


def handshake(
    kind: str = "SubscriptionConfirmation", *, topic: str = TOPIC, when: dt.datetime = NOW
) -> dict[str, Any]:
    return {
        "Type": kind,
        "MessageId": "165545c9-2a5c-472c-8df2-7ff2be2b3b1b",
        "Token": "2336412f37",
        "TopicArn": topic,
        "Message": f"You have chosen to subscribe to the topic {topic}.",
        "SubscribeURL": SUBSCRIBE_URL,
        "Timestamp": iso(when),
    }
