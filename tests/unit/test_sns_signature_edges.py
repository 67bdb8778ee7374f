"""SNS checks at their edges: the string to sign without a Subject, strict base64, an
explicit port 443, and the messages of the refusals, with where they cut a long value."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from seqgate.connectors.auth.sns_signature import (
    DEFAULT_HOST_PATTERN,
    check_sns_url,
    parse_timestamp,
    string_to_sign,
    verify_signature,
)
from seqgate.connectors.errors import SnsVerificationError


def test_a_notification_without_subject_signs_every_other_member() -> None:
    message = {"Type": "Notification", "Message": "m", "MessageId": "i", "Timestamp": "t"}
    message["TopicArn"] = "a"
    assert string_to_sign(message) == (
        b"Message\nm\nMessageId\ni\nTimestamp\nt\nTopicArn\na\nType\nNotification\n"
    )


def test_an_explicit_port_443_is_https_on_its_default_port() -> None:
    check_sns_url("https://sns.us-east-1.amazonaws.com:443/c.pem", DEFAULT_HOST_PATTERN, "URL")


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (
            lambda: check_sns_url("https:///c.pem", DEFAULT_HOST_PATTERN, "SigningCertURL"),
            f"SigningCertURL host '' is not an SNS host ({DEFAULT_HOST_PATTERN.pattern})",
        ),
        (
            lambda: check_sns_url("https://h:xx/", DEFAULT_HOST_PATTERN, "SigningCertURL"),
            "SigningCertURL 'https://h:xx/' is not a URL: Port could not be cast to integer"
            " value as 'xx'",
        ),
        (lambda: string_to_sign({"Type": 5}), "Type is not a string (int)"),
        (
            lambda: parse_timestamp("2026-06-01T12:00:00"),
            "Timestamp '2026-06-01T12:00:00' has no time zone",
        ),
        (
            lambda: parse_timestamp("2026-06-01T12:00:00.000z"),
            "Timestamp '2026-06-01T12:00:00.000z' is not ISO 8601",
        ),
        (
            lambda: verify_signature({"SignatureVersion": "1", "Signature": "@@@@"}, b""),
            "Signature is not base64",
        ),
    ],
)
def test_each_refusal_says_what_is_wrong(check: Callable[[], object], message: str) -> None:
    with pytest.raises(SnsVerificationError) as raised:
        check()
    assert str(raised.value) == message


# A refusal shows the value it refuses, cut to a bound (the value comes from the sender).
# Each value here is longer than its cut: one character more would change the message.
LONG_PATH = "/" + "p" * 150
LONG_HOST = "h" * 150
NO_PORT = "https://h:xx" + LONG_PATH
HTTP = "http://sns.us-east-1.amazonaws.com" + LONG_PATH
PORT = "https://sns.us-east-1.amazonaws.com:8443" + LONG_PATH
NOT_ISO = "x" * 41 + "y" * 20
NO_ZONE = "2026-06-01T12:00:00." + "0" * 20 + "1" * 20


def _url_check(url: str) -> Callable[[], object]:
    return lambda: check_sns_url(url, DEFAULT_HOST_PATTERN, "SigningCertURL")


@pytest.mark.parametrize(
    ("check", "message"),
    [
        (
            _url_check(NO_PORT),
            f"SigningCertURL {NO_PORT[:100]!r} is not a URL: Port could not be cast to integer"
            " value as 'xx'",
        ),
        (_url_check(HTTP), f"SigningCertURL {HTTP[:100]!r} is not an https URL"),
        (_url_check(PORT), f"SigningCertURL {PORT[:100]!r} has user info or a port"),
        (
            _url_check(f"https://{LONG_HOST}/c.pem"),
            f"SigningCertURL host {LONG_HOST[:100]!r} is not an SNS host"
            f" ({DEFAULT_HOST_PATTERN.pattern})",
        ),
        (lambda: parse_timestamp(NOT_ISO), f"Timestamp {'x' * 40!r} is not ISO 8601"),
        (lambda: parse_timestamp(NO_ZONE), f"Timestamp {NO_ZONE[:40]!r} has no time zone"),
        (
            lambda: string_to_sign({"Type": "T" * 40 + "U" * 10}),
            f"Type {'T' * 40!r} is not an SNS message type",
        ),
        (
            lambda: verify_signature({"SignatureVersion": "9" * 10 + "8" * 10}, b""),
            f"SignatureVersion {'9' * 10!r} is not 1 or 2",
        ),
    ],
    ids=[
        "not-a-url-100",
        "not-https-100",
        "port-100",
        "host-100",
        "not-iso-40",
        "no-zone-40",
        "type-40",
        "version-10",
    ],
)
def test_a_refusal_shows_the_value_cut_to_its_bound(
    check: Callable[[], object], message: str
) -> None:
    with pytest.raises(SnsVerificationError) as raised:
        check()
    assert str(raised.value) == message
