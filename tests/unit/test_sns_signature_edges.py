"""SNS checks at their edges: the string to sign without a Subject, strict base64, an
explicit port 443, and the messages of the refusals."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from seqgate.connectors.auth.sns_signature import (
    DEFAULT_HOST_PATTERN,
    SnsVerificationError,
    check_sns_url,
    parse_timestamp,
    string_to_sign,
    verify_signature,
)


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
