"""Notifications in the providers' documented shapes, built from parameters.

Used by the demo, the benchmark and the tests, so that all three speak of
the same payloads. The shapes follow AWS's "event message structure" for
S3 (schema 2.1); values that a real notification carries but seqgate does
not use (request ids, principal ids) are plausible constants.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote_plus

_EVENTBRIDGE_ACCOUNT = "111122223333"


def s3_record(
    *,
    bucket: str = "example-input",
    key: str = "incoming%2FJune+report%2Bfinal.csv",
    sequencer: str | None = "f",
    event_name: str = "ObjectCreated:Put",
    version_id: str | None = "demo-version-1",
    size: int | None = 1024,
    etag: str | None = "d41d8cd98f00b204e9800998ecf8427e",
    event_version: str = "2.1",
    event_time: str = "2026-06-01T12:00:00.000Z",
) -> dict[str, Any]:
    """One entry of `Records`; `key` is given form-encoded, as S3 sends it.

    An optional member given as None is left out.
    """
    obj = _present(
        {"key": key, "size": size, "eTag": etag, "versionId": version_id, "sequencer": sequencer}
    )
    return {
        "eventVersion": event_version,
        "eventSource": "aws:s3",
        "awsRegion": "eu-west-1",
        "eventTime": event_time,
        "eventName": event_name,
        "userIdentity": {"principalId": "AWS:EXAMPLE"},
        "requestParameters": {"sourceIPAddress": "192.0.2.10"},
        "responseElements": {"x-amz-request-id": "EXAMPLE123456789"},
        "s3": {
            "s3SchemaVersion": "1.0",
            "configurationId": "seqgate-incoming",
            "bucket": {"name": bucket, "arn": f"arn:aws:s3:::{bucket}"},
            "object": obj,
        },
    }


def _present(members: dict[str, Any]) -> dict[str, Any]:
    """``members`` without those whose value is None (optional members left out)."""
    return {name: value for name, value in members.items() if value is not None}


def s3_notification(*records: dict[str, Any]) -> dict[str, Any]:
    return {"Records": list(records)}


def s3_test_event(bucket: str = "example-input") -> dict[str, Any]:
    return {
        "Service": "Amazon S3",
        "Event": "s3:TestEvent",
        "Time": "2026-06-01T12:00:00.000Z",
        "Bucket": bucket,
        "RequestId": "EXAMPLE123456789",
        "HostId": "EXAMPLE",
    }


def to_bytes(document: dict[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode("utf-8")


def form_encode_key(key: str, safe: str = "") -> str:
    """Encode a key as S3 does in native notifications (form encoding of UTF-8).

    Space becomes ``+``; ASCII letters, digits, ``_.-~`` and the characters in
    ``safe`` stay as they are; every other UTF-8 byte becomes ``%XX``
    (uppercase). By default ``/`` is escaped too (``%2F``); S3 may also send it
    unescaped (``safe="/"``). Both spellings decode to the same key.
    """
    return quote_plus(key, safe=safe)


def sqs_receive_response(*bodies: object) -> dict[str, Any]:
    """The JSON of an SQS ReceiveMessage response (as the AWS CLI prints it).

    Each body is normally JSON text; any other value builds an invalid message.
    """
    return {
        "Messages": [
            {
                "MessageId": f"00000000-0000-4000-8000-{index:012d}",
                "ReceiptHandle": f"receipt-{index}",
                "MD5OfBody": "0" * 32,
                "Body": body,
            }
            for index, body in enumerate(bodies)
        ]
    }


def lambda_sqs_record(body: object, index: int = 0) -> dict[str, Any]:
    """Record ``index`` of the event a Lambda function receives from an SQS trigger.

    ``body`` is normally JSON text; any other value builds an invalid record.
    """
    return {
        "messageId": f"00000000-0000-4000-8000-{index:012d}",
        "receiptHandle": f"receipt-{index}",
        "body": body,
        "attributes": {"ApproximateReceiveCount": "1"},
        "messageAttributes": {},
        "md5OfBody": "0" * 32,
        "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:eu-west-1:123456789012:incoming",
        "awsRegion": "eu-west-1",
    }


def lambda_sqs_event(*bodies: object) -> dict[str, Any]:
    """The event a Lambda function receives from an SQS trigger."""
    return {"Records": [lambda_sqs_record(body, index) for index, body in enumerate(bodies)]}


def _sns_message(message: object) -> dict[str, Any]:
    """The members that begin every SNS notification, in the order SNS writes them."""
    return {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": "arn:aws:sns:eu-west-1:123456789012:incoming",
        "Subject": "Amazon S3 Notification",
        "Message": message,
        "Timestamp": "2026-06-01T12:00:00.000Z",
    }


def sns_notification(message: object) -> dict[str, Any]:
    """An SNS HTTP(S) delivery of type Notification (also the SQS body without raw delivery).

    ``message`` is normally JSON text; any other value builds an invalid message.
    """
    return {
        **_sns_message(message),
        "SignatureVersion": "2",
        "Signature": "EXAMPLE",
        "SigningCertURL": "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0.pem",
        "UnsubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe",
    }


def lambda_sns_record(message: object) -> dict[str, Any]:
    """The record of the event a Lambda function receives from an SNS subscription.

    Note Lambda's spellings (``EventSource``, ``SigningCertUrl``, ``UnsubscribeUrl``).
    """
    return {
        "EventSource": "aws:sns",
        "EventVersion": "1.0",
        "EventSubscriptionArn": "arn:aws:sns:eu-west-1:123456789012:incoming:sub",
        "Sns": {
            **_sns_message(message),
            "SignatureVersion": "1",
            "Signature": "EXAMPLE",
            "SigningCertUrl": "https://sns.eu-west-1.amazonaws.com/cert.pem",
            "UnsubscribeUrl": "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe",
            "MessageAttributes": {},
        },
    }


def lambda_sns_event(message: object) -> dict[str, Any]:
    """The event a Lambda function receives from an SNS subscription."""
    return {"Records": [lambda_sns_record(message)]}


def eventbridge_event(
    *,
    bucket: str = "example-input",
    key: str = "incoming/June report+final.csv",
    detail_type: str = "Object Created",
    deletion_type: str | None = None,
    sequencer: str | None = "617f08299329d189",
    version_id: str | None = None,
    size: int | None = 5,
    etag: str | None = "b1946ac92492d2347c6235b4d2611184",
    event_id: str = "17793124-05d4-4198-8fde-7ededc63b103",
    reason: str | None = None,
) -> dict[str, Any]:
    """An S3 event as EventBridge delivers it to its targets.

    ``key`` is the object's real name: EventBridge does not encode it. An
    optional member given as None is left out; ``reason`` defaults to
    ``PutObject`` for ``Object Created`` and ``DeleteObject`` otherwise. The
    account, region and time are those of ``tests/fixtures/aws``, whose
    EventBridge files are written with this function.
    """
    obj = _present(
        {"key": key, "size": size, "etag": etag, "version-id": version_id, "sequencer": sequencer}
    )
    if reason is None:
        reason = "PutObject" if detail_type == "Object Created" else "DeleteObject"
    detail: dict[str, Any] = {
        "version": "0",
        "bucket": {"name": bucket},
        "object": obj,
        "request-id": "N4N7GDK58NMKJ12R",
        "requester": _EVENTBRIDGE_ACCOUNT,
        "source-ip-address": "192.0.2.10",
        "reason": reason,
    }
    if deletion_type is not None:
        detail["deletion-type"] = deletion_type
    return {
        "version": "0",
        "id": event_id,
        "detail-type": detail_type,
        "source": "aws.s3",
        "account": _EVENTBRIDGE_ACCOUNT,
        "time": "2026-11-25T10:00:00Z",
        "region": "us-west-2",
        "resources": [f"arn:aws:s3:::{bucket}"],
        "detail": detail,
    }


def to_text(document: object, *, ensure_ascii: bool = True) -> str:
    """``document`` as compact JSON text (with ``ensure_ascii=False``, non-ASCII kept as is)."""
    return json.dumps(document, ensure_ascii=ensure_ascii, separators=(",", ":"))
