"""Notifications in the providers' documented shapes, built from parameters.

Used by the demo, the benchmark and the tests, so that all three speak of
the same payloads. The shapes follow AWS's "event message structure" for
S3 (schema 2.1); values that a real notification carries but seqgate does
not use (request ids, principal ids) are plausible constants.
"""

from __future__ import annotations

import json
from typing import Any


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
