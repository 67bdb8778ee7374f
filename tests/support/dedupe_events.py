"""MinIO events and the dedupe window of the dedupe tests."""

from __future__ import annotations

from typing import Any

from seqgate_devtools.samples import to_bytes

from seqgate.connectors.parsers.normalize import normalize
from seqgate.schemas.records import ObjectEvent

WINDOW = 10_000


def minio_event(key: str, sequencer: str, name: str = "s3:ObjectCreated:Put") -> ObjectEvent:
    record: dict[str, Any] = {
        "eventVersion": "2.0",
        "eventSource": "minio:s3",
        "awsRegion": "",
        "eventTime": "2026-06-01T12:00:00.000Z",
        "eventName": name,
        "s3": {
            "s3SchemaVersion": "1.0",
            "bucket": {"name": "media"},
            "object": {"key": key, "size": 10, "eTag": "abc", "sequencer": sequencer},
        },
    }
    [event] = normalize(
        to_bytes({"EventName": name, "Key": f"media/{key}", "Records": [record]}), "t"
    ).events
    return event
