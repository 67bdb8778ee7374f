"""Object events for the worker's tests: from a normalized S3 notification, or field by field."""

from __future__ import annotations

import dataclasses

from seqgate_devtools.samples import s3_notification, s3_record, to_bytes

from seqgate.connectors.parsers.normalize import normalize
from seqgate.schemas.records import ObjectEvent


def s3_event(sequencer: str, **record: object) -> ObjectEvent:
    result = normalize(to_bytes(s3_notification(s3_record(sequencer=sequencer, **record))), "test")
    assert not result.rejections, result.rejections
    return result.events[0]


def event(key: str, sequencer: str, **fields: object) -> ObjectEvent:
    base = ObjectEvent(
        id=f"s3:{key}:{sequencer}"[:200],
        source="s3",
        bucket="bucket",
        key=key,
        kind="created",
        event_name="ObjectCreated:Put",
        position=sequencer,
        version_id=None,
        size=1,
        etag="abc",
        event_time="2026-12-01T00:00:00.000Z",
        origin="test",
    )
    return dataclasses.replace(base, **fields)  # type: ignore[arg-type]
