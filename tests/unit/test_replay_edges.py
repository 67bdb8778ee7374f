"""The reference replay with a dedupe-only source: decided in record time, and no
watermark made of its state entries; and input written through a schema registry."""

from __future__ import annotations

from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.framing import Framing
from seqgate.streams.rules.policy import Policy
from seqgate.streams.tools.replay import InputRecord, PartitionReplay, replay_partition
from tests.support.events import event
from tests.support.memory_registry import MemoryRegistry


def test_dedupe_records_are_decided_by_their_timestamps_and_leave_no_watermark() -> None:
    minio = event("k", "0a", source="minio", id="minio-1")
    value = OBJECT_EVENT.encode(minio)
    replay = PartitionReplay(Policy.build(dedupe_window_ms=1000))
    first = replay.apply(InputRecord(0, 0, b"minio://bucket/k", value, timestamp=10_000))
    assert first is not None and first.input_offset == 0
    repeat = InputRecord(0, 1, b"minio://bucket/k", value, timestamp=10_500)
    assert replay.apply(repeat) is None
    assert replay.watermarks() == {}


def test_a_partition_written_through_a_registry_is_replayed_with_the_framing_given() -> None:
    """The events are in the Confluent wire format, which only a framing with the registry
    reads: without it each would be skipped as undecodable, and the outbox would be empty."""
    registry = MemoryRegistry()
    write = Framing(registry).writer(OBJECT_EVENT, "input")
    records = [
        InputRecord(0, offset, b"s3://bucket/k", write(event("k", position)), timestamp=offset)
        for offset, position in enumerate(["0a", "0b"])
    ]
    assert all(record.value is not None and record.value[:1] == b"\x00" for record in records)
    outbox, watermarks = replay_partition(records, Policy.build(), Framing(registry))
    assert [(item.event.position, item.input_offset) for item in outbox] == [("0a", 0), ("0b", 1)]
    assert watermarks["s3://bucket/k"].position == "0b"
