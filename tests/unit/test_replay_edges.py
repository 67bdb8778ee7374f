"""The reference replay with a dedupe-only source: decided in record time, and no
watermark made of its state entries."""

from __future__ import annotations

from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.streams.rules.policy import Policy
from seqgate.streams.tools.replay import InputRecord, PartitionReplay
from tests.support.events import event


def test_dedupe_records_are_decided_by_their_timestamps_and_leave_no_watermark() -> None:
    minio = event("k", "0a", source="minio", id="minio-1")
    value = OBJECT_EVENT.encode(minio)
    replay = PartitionReplay(Policy.build(dedupe_window_ms=1000))
    first = replay.apply(InputRecord(0, 0, b"minio://bucket/k", value, timestamp=10_000))
    assert first is not None and first.input_offset == 0
    repeat = InputRecord(0, 1, b"minio://bucket/k", value, timestamp=10_500)
    assert replay.apply(repeat) is None
    assert replay.watermarks() == {}
