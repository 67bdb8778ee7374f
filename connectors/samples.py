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
    """One entry of `Records`; `key` is given form-encoded, as S3 sends it."""
    obj: dict[str, Any] = {"key": key}
    if size is not None:
        obj["size"] = size
    if etag is not None:
        obj["eTag"] = etag
    if version_id is not None:
        obj["versionId"] = version_id
    if sequencer is not None:
        obj["sequencer"] = sequencer
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


def form_encode_key(key: str) -> str:
    """Encode a key as S3 does in native notifications (form encoding of UTF-8)."""
    return quote_plus(key, safe="")


def sqs_receive_response(*bodies: str) -> dict[str, Any]:
    """The JSON of an SQS ReceiveMessage response (as the AWS CLI prints it)."""
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


def lambda_sqs_event(*bodies: str) -> dict[str, Any]:
    """The event a Lambda function receives from an SQS trigger."""
    return {
        "Records": [
            {
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
            for index, body in enumerate(bodies)
        ]
    }


def sns_notification(message: str) -> dict[str, Any]:
    """An SNS HTTP(S) delivery of type Notification (also the SQS body without raw delivery)."""
    return {
        "Type": "Notification",
        "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
        "TopicArn": "arn:aws:sns:eu-west-1:123456789012:incoming",
        "Subject": "Amazon S3 Notification",
        "Message": message,
        "Timestamp": "2026-06-01T12:00:00.000Z",
        "SignatureVersion": "2",
        "Signature": "EXAMPLE",
        "SigningCertURL": "https://sns.eu-west-1.amazonaws.com/SimpleNotificationService-0.pem",
        "UnsubscribeURL": "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe",
    }


def lambda_sns_event(message: str) -> dict[str, Any]:
    """The event a Lambda function receives from an SNS subscription (note the spellings)."""
    return {
        "Records": [
            {
                "EventSource": "aws:sns",
                "EventVersion": "1.0",
                "EventSubscriptionArn": "arn:aws:sns:eu-west-1:123456789012:incoming:sub",
                "Sns": {
                    "Type": "Notification",
                    "MessageId": "22b80b92-fdea-4c2c-8f9d-bdfb0c7bf324",
                    "TopicArn": "arn:aws:sns:eu-west-1:123456789012:incoming",
                    "Subject": "Amazon S3 Notification",
                    "Message": message,
                    "Timestamp": "2026-06-01T12:00:00.000Z",
                    "SignatureVersion": "1",
                    "Signature": "EXAMPLE",
                    "SigningCertUrl": "https://sns.eu-west-1.amazonaws.com/cert.pem",
                    "UnsubscribeUrl": "https://sns.eu-west-1.amazonaws.com/?Action=Unsubscribe",
                    "MessageAttributes": {},
                },
            }
        ]
    }


def to_text(document: dict[str, Any]) -> str:
    return json.dumps(document, separators=(",", ":"))
