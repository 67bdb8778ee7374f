"""The checks on SNS's signing certificate: its validity window and where it comes from.

Each refused case is otherwise a message that verifies: signed by the key of a
real (generated) certificate, served at the URL the message names. So only the
check under test stands between it and acceptance, and removing or loosening that
check makes the test fail. Every host is tried both as ``SigningCertURL`` (the
certificate would prove anything its owner signs) and as the ``SubscribeURL`` of
a confirmation (the bridge would GET an address chosen by the sender).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from seqgate.connectors.auth.sns_signature import (
    DEFAULT_HOST_PATTERN,
    SnsVerifier,
    check_sns_url,
    verify_signature,
)
from seqgate.connectors.errors import SnsVerificationError
from tests.support.sns_certificates import (
    NOW,
    TOPIC,
    SnsSigner,
    handshake,
    make_certificate,
    notification,
    rsa_key,
)

DAY = dt.timedelta(days=1)
MINUTE = dt.timedelta(minutes=1)


def signer_valid(valid_from: dt.timedelta, valid_until: dt.timedelta) -> SnsSigner:
    key = rsa_key("sns")
    return SnsSigner(key, make_certificate(key, valid_from=valid_from, valid_until=valid_until))


def verifier(signer: SnsSigner) -> SnsVerifier:
    """The production defaults (host pattern, age window), with the messages' clock."""
    return SnsVerifier(frozenset({TOPIC}), signer.fetch, clock=NOW.timestamp)


# ---- the validity window -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("valid_from", "valid_until"),
    [(-30 * DAY, -DAY), (-30 * DAY, -MINUTE), (DAY, 30 * DAY), (MINUTE, 30 * DAY)],
    ids=["expired-yesterday", "expired-a-minute-ago", "valid-from-tomorrow", "valid-in-a-minute"],
)
@pytest.mark.parametrize("version", ["1", "2"])
def test_a_certificate_outside_its_validity_window_is_refused(
    valid_from: dt.timedelta, valid_until: dt.timedelta, version: str
) -> None:
    signer = signer_valid(valid_from, valid_until)
    signed = signer.sign(notification("hello"), version)
    with pytest.raises(SnsVerificationError, match="not valid now"):
        verify_signature(signed, signer.certificate)
    with pytest.raises(SnsVerificationError, match="not valid now"):
        verifier(signer).verify(signed)


def test_an_expired_certificate_is_refused_with_that_reason() -> None:
    signer = signer_valid(-30 * DAY, -DAY)
    with pytest.raises(SnsVerificationError) as raised:
        verify_signature(signer.sign(notification("hello")), signer.certificate)
    assert str(raised.value) == "the signing certificate is not valid now"


def test_a_certificate_valid_for_a_single_instant_is_valid_at_that_instant_only() -> None:
    """X.509's validity includes both bounds: a certificate whose notBefore and notAfter are
    the same second verifies at that second, and not a microsecond either side."""
    key = rsa_key("sns")
    signer = SnsSigner(
        key, make_certificate(key, valid_from=dt.timedelta(), valid_until=dt.timedelta(), now=NOW)
    )
    signed = signer.sign(notification("hello"))
    verify_signature(signed, signer.certificate, now=NOW)
    for instant in (NOW - dt.timedelta(microseconds=1), NOW + dt.timedelta(microseconds=1)):
        with pytest.raises(SnsVerificationError, match="not valid now"):
            verify_signature(signed, signer.certificate, now=instant)


def test_a_certificate_of_an_ec_key_is_refused_as_not_rsa() -> None:
    """SNS signs with RSA only: a valid certificate of another kind of key is refused, for
    what it is, before any signature is checked against it."""
    certificate = make_certificate(ec.generate_private_key(ec.SECP256R1()))
    signed = signer_valid(-DAY, DAY).sign(notification("hello"))
    with pytest.raises(SnsVerificationError) as raised:
        verify_signature(signed, certificate)
    assert str(raised.value) == "the signing certificate's key is not RSA"


def test_a_confirmation_signed_with_an_expired_certificate_is_refused() -> None:
    signer = signer_valid(-30 * DAY, -DAY)
    with pytest.raises(SnsVerificationError, match="not valid now"):
        verifier(signer).verify(signer.sign(handshake()))


@pytest.mark.parametrize(
    ("valid_from", "valid_until"),
    [(-DAY, DAY), (-MINUTE, MINUTE)],
    ids=["a-day-either-side", "a-minute-either-side"],
)
def test_a_certificate_valid_now_verifies(
    valid_from: dt.timedelta, valid_until: dt.timedelta
) -> None:
    """The same key and message as the refusals above: only the window differs."""
    signer = signer_valid(valid_from, valid_until)
    signed = signer.sign(notification("hello"))
    verify_signature(signed, signer.certificate)
    assert verifier(signer).verify(signed) == "Notification"


# ---- where the certificate (and the subscribe URL) may come from ---------------------------------

PATH = "/SimpleNotificationService-01d088a6f77103d0fe307c0069e40ed6.pem"

VALID_HOSTS = [
    "sns.us-east-1.amazonaws.com",
    "sns.eu-west-1.amazonaws.com",
    "sns.ap-southeast-2.amazonaws.com",
    "sns.us-gov-west-1.amazonaws.com",
    "sns.cn-north-1.amazonaws.com.cn",
    "sns.cn-northwest-1.amazonaws.com.cn",
]

EXTRA_LABELS = [
    # S3 serves a bucket at <bucket>.s3.amazonaws.com, and a bucket's name may
    # contain dots: anyone can serve a certificate at these.
    "sns.evil.s3.amazonaws.com",
    "sns.us-east-1.s3.amazonaws.com",
    "sns.evil.s3.us-east-1.amazonaws.com",
    "sns.evil.s3.cn-north-1.amazonaws.com.cn",
    "sns.us-east-1.evil.amazonaws.com",
]

LOOK_ALIKES = [
    "sns.us-east-1.amazonaws.com.evil.com",
    "sns.us-east-1.amazonaws.com.cn.evil.com",
    "sns-us-east-1.amazonaws.com",
    "snsxus-east-1.amazonaws.com",
    "sns.us-east-1.amazonaws.co",
    "sns.us-east-1.amazonaws.cn",
    "sns.us-east-1.amazonaws.com-cn",
    "sns.us-east-1.amazonaws-com",
    "sns.us-east-1.amazonaws.com.c",
    "xsns.us-east-1.amazonaws.com",
    "sns..amazonaws.com",
]


def url_signer(url: str) -> SnsSigner:
    """A signer with a valid certificate, served at ``url`` as well."""
    signer = signer_valid(-DAY, 30 * DAY)
    signer.served[url] = signer.certificate
    return signer


def refused_as_certificate_url(url: str) -> None:
    signer = url_signer(url)
    signed = signer.sign({**notification("hello"), "SigningCertURL": url})
    with pytest.raises(SnsVerificationError, match="SigningCertURL"):
        verifier(signer).verify(signed)
    assert signer.fetched == [], "a certificate from there must not even be fetched"


def refused_as_subscribe_url(url: str) -> None:
    signer = url_signer(url)
    signed = signer.sign({**handshake(), "SubscribeURL": url})
    with pytest.raises(SnsVerificationError, match="SubscribeURL"):
        verifier(signer).verify(signed)


@pytest.mark.parametrize("host", VALID_HOSTS)
def test_a_certificate_from_an_sns_host_is_accepted(host: str) -> None:
    url = f"https://{host}{PATH}"
    check_sns_url(url, DEFAULT_HOST_PATTERN, "SigningCertURL")
    signer = url_signer(url)
    signed = signer.sign({**notification("hello"), "SigningCertURL": url})
    assert verifier(signer).verify(signed) == "Notification"
    assert signer.fetched == [url]
    confirmation: dict[str, Any] = {**handshake(), "SubscribeURL": f"https://{host}/?Action=x"}
    assert verifier(signer).verify(signer.sign(confirmation)) == "SubscriptionConfirmation"


@pytest.mark.parametrize("host", EXTRA_LABELS)
def test_a_host_with_extra_labels_is_refused(host: str) -> None:
    refused_as_certificate_url(f"https://{host}{PATH}")
    refused_as_subscribe_url(f"https://{host}/?Action=ConfirmSubscription")


@pytest.mark.parametrize("host", LOOK_ALIKES)
def test_a_look_alike_host_is_refused(host: str) -> None:
    refused_as_certificate_url(f"https://{host}{PATH}")
    refused_as_subscribe_url(f"https://{host}/?Action=ConfirmSubscription")


@pytest.mark.parametrize("host", ["sns.us-east-1.amazonaws.com", "sns.cn-north-1.amazonaws.com.cn"])
def test_http_is_refused_even_on_an_sns_host(host: str) -> None:
    refused_as_certificate_url(f"http://{host}{PATH}")
    refused_as_subscribe_url(f"http://{host}/?Action=ConfirmSubscription")
