"""SNS message signatures (versions 1 and 2) with keys and certificates made here.

``SnsSigner`` plays Amazon SNS: an RSA key, a self-signed certificate served at an
SNS-looking URL by a fake fetcher, and messages signed over AWS's string to sign.
It is in tests/support/sns_certificates.py; `tests/kafka/test_bridge_http.py` uses it too.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seqgate.connectors.auth.sns_signature import (
    DEFAULT_HOST_PATTERN,
    CertificateCache,
    SnsVerifier,
    check_sns_url,
    string_to_sign,
    verify_signature,
)
from seqgate.connectors.errors import SnsVerificationError
from tests.support.sns_certificates import (
    CERT_URL,
    NOW,
    SUBSCRIBE_URL,
    TOPIC,
    SnsSigner,
    handshake,
    new_signer,
    notification,
)


def verifier(signer: SnsSigner, **overrides: Any) -> SnsVerifier:
    settings: dict[str, Any] = {
        "topic_arns": frozenset({TOPIC}),
        "fetch_certificate": signer.fetch,
        "clock": NOW.timestamp,
    }
    settings.update(overrides)
    return SnsVerifier(**settings)


@pytest.fixture(scope="module")
def signer() -> SnsSigner:
    return new_signer()


# ---- the string to sign --------------------------------------------------------------------------


def test_string_to_sign_of_a_notification_follows_aws() -> None:
    document = notification("hello", subject="Amazon S3 Notification")
    assert (
        string_to_sign(document)
        == (
            "Message\nhello\n"
            "MessageId\n22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324\n"
            "Subject\nAmazon S3 Notification\n"
            "Timestamp\n2026-11-30T12:00:00.000Z\n"
            f"TopicArn\n{TOPIC}\n"
            "Type\nNotification\n"
        ).encode()
    )


def test_subject_is_signed_only_when_present() -> None:
    assert b"Subject" not in string_to_sign(notification("hello", subject=None))


def test_string_to_sign_of_a_subscription_confirmation_follows_aws() -> None:
    assert (
        string_to_sign(handshake())
        == (
            f"Message\nYou have chosen to subscribe to the topic {TOPIC}.\n"
            "MessageId\n165545c9-2a5c-472c-8df2-7ff2be2b3b1b\n"
            f"SubscribeURL\n{SUBSCRIBE_URL}\n"
            "Timestamp\n2026-11-30T12:00:00.000Z\n"
            "Token\n2336412f37\n"
            f"TopicArn\n{TOPIC}\n"
            "Type\nSubscriptionConfirmation\n"
        ).encode()
    )


def test_non_ascii_is_signed_as_utf8() -> None:
    assert "Message\nmañana\n".encode() in string_to_sign(notification("mañana"))


@pytest.mark.parametrize("missing", ["Message", "MessageId", "Timestamp", "TopicArn", "Type"])
def test_a_message_without_a_signed_member_is_refused(missing: str) -> None:
    document = notification("hello")
    del document[missing]
    with pytest.raises(SnsVerificationError, match=missing):
        string_to_sign(document)


def test_an_unknown_type_is_refused() -> None:
    with pytest.raises(SnsVerificationError, match="not an SNS message type"):
        string_to_sign({**notification("x"), "Type": "Other"})


# ---- signatures ----------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ["1", "2"])
def test_valid_signatures_verify(signer: SnsSigner, version: str) -> None:
    for document in (notification("hello"), notification("x", subject=None), handshake()):
        signed = signer.sign(document, version)
        verify_signature(signed, signer.certificate)
        assert verifier(signer).verify(signed) == document["Type"]


def test_version_1_is_sha1_and_version_2_is_sha256(signer: SnsSigner) -> None:
    signed = signer.sign(notification("hello"), "1")
    with pytest.raises(SnsVerificationError, match="does not verify"):
        verify_signature({**signed, "SignatureVersion": "2"}, signer.certificate)


@pytest.mark.parametrize("version", ["1", "2"])
def test_a_changed_message_does_not_verify(signer: SnsSigner, version: str) -> None:
    signed = signer.sign(notification("hello"), version)
    with pytest.raises(SnsVerificationError, match="does not verify"):
        verifier(signer).verify({**signed, "Message": "hellO"})


def test_a_signature_by_another_key_does_not_verify(signer: SnsSigner) -> None:
    forged = new_signer("forger").sign(notification("hello"))
    with pytest.raises(SnsVerificationError, match="does not verify"):
        verifier(signer).verify(forged)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"SignatureVersion": "3"}, "not 1 or 2"),
        ({"Signature": "not base64!"}, "not base64"),
        ({"Signature": None}, "Signature is missing"),
    ],
)
def test_malformed_signatures_are_refused(
    signer: SnsSigner, changes: dict[str, Any], reason: str
) -> None:
    signed = {**signer.sign(notification("hello")), **changes}
    with pytest.raises(SnsVerificationError, match=reason):
        verifier(signer).verify(signed)


def test_a_certificate_that_is_not_pem_is_refused(signer: SnsSigner) -> None:
    signed = signer.sign(notification("hello"))
    with pytest.raises(SnsVerificationError, match="not PEM"):
        verify_signature(signed, b"<html>not a certificate</html>")


# ---- certificate URL, topic, timestamp -----------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    [
        "http://sns.eu-west-1.amazonaws.com/cert.pem",
        "https://sns.eu-west-1.amazonaws.com.evil.example/cert.pem",
        "https://evil.example/sns.eu-west-1.amazonaws.com/cert.pem",
        "https://sqs.eu-west-1.amazonaws.com/cert.pem",
        "https://sns.eu_west.amazonaws.com/cert.pem",
        "https://sns.eu-west-1.amazonaws.com:8443/cert.pem",
        "https://user@sns.eu-west-1.amazonaws.com/cert.pem",
        "file:///etc/passwd",
        "",
    ],
)
def test_a_certificate_url_outside_the_sns_pattern_is_refused(signer: SnsSigner, url: str) -> None:
    signer.served[url] = signer.certificate  # even a certificate that would verify
    signed = signer.sign({**notification("hello"), "SigningCertURL": url})
    signer.fetched.clear()
    with pytest.raises(SnsVerificationError, match="SigningCertURL"):
        verifier(signer).verify(signed)
    assert signer.fetched == [], "the certificate must not even be fetched"


@pytest.mark.parametrize(
    "host",
    [
        "sns.eu-west-1.amazonaws.com",
        "sns.cn-north-1.amazonaws.com.cn",
        "sns.us-gov-west-1.amazonaws.com",
    ],
)
def test_sns_hosts_pass_the_default_pattern(host: str) -> None:
    check_sns_url(f"https://{host}/SimpleNotificationService-abc.pem", DEFAULT_HOST_PATTERN, "u")


def test_the_host_pattern_is_configurable(signer: SnsSigner) -> None:
    url = "https://certs.test.internal/sns.pem"
    signer.served[url] = signer.certificate
    signed = signer.sign({**notification("hello"), "SigningCertURL": url})
    own = verifier(signer, host_pattern=re.compile(r"^certs\.test\.internal$"))
    assert own.verify(signed) == "Notification"


def test_a_subscribe_url_outside_the_sns_pattern_is_refused(signer: SnsSigner) -> None:
    signed = signer.sign({**handshake(), "SubscribeURL": "https://evil.example/?Action=x"})
    with pytest.raises(SnsVerificationError, match="SubscribeURL"):
        verifier(signer).verify(signed)


def test_a_topic_that_is_not_configured_is_refused(signer: SnsSigner) -> None:
    other = "arn:aws:sns:eu-west-1:123456789012:someone-else"
    for document in (notification("hello", topic=other), handshake(topic=other)):
        with pytest.raises(SnsVerificationError, match="not a configured topic"):
            verifier(signer).verify(signer.sign(document))


@pytest.mark.parametrize("seconds", [-3601, 3601, -86_400 * 30])
def test_a_timestamp_outside_the_window_is_refused(signer: SnsSigner, seconds: int) -> None:
    when = NOW + dt.timedelta(seconds=seconds)
    with pytest.raises(SnsVerificationError, match="Timestamp"):
        verifier(signer).verify(signer.sign(notification("hello", when=when)))


def test_a_timestamp_inside_the_window_is_accepted(signer: SnsSigner) -> None:
    when = NOW - dt.timedelta(seconds=59)
    assert verifier(signer, max_age_seconds=60).verify(signer.sign(notification("x", when=when)))
    with pytest.raises(SnsVerificationError, match="allowed: 30s"):
        verifier(signer, max_age_seconds=30).verify(signer.sign(notification("x", when=when)))


def test_a_timestamp_that_is_not_iso_8601_is_refused(signer: SnsSigner) -> None:
    signed = signer.sign({**notification("hello"), "Timestamp": "yesterday"})
    with pytest.raises(SnsVerificationError, match="not ISO 8601"):
        verifier(signer).verify(signed)


# ---- the production fetcher ----------------------------------------------------------------------


def test_the_certificate_cache_fetches_each_url_once(tmp_path: Path, signer: SnsSigner) -> None:
    path = tmp_path / "cert.pem"
    path.write_bytes(signer.certificate)
    cache = CertificateCache(timeout_s=5)
    url = path.as_uri()
    assert cache(url) == signer.certificate
    path.unlink()
    assert cache(url) == signer.certificate  # from the cache
    with pytest.raises(SnsVerificationError, match="cannot fetch"):
        cache((tmp_path / "missing.pem").as_uri())


def test_the_verifier_takes_any_fetcher() -> None:
    calls: list[str] = []

    def refuse(url: str) -> bytes:
        calls.append(url)
        raise SnsVerificationError("offline")

    signer = new_signer()
    fetcher: Callable[[str], bytes] = refuse
    with pytest.raises(SnsVerificationError, match="offline"):
        verifier(signer, fetch_certificate=fetcher).verify(signer.sign(notification("x")))
    assert calls == [CERT_URL]
