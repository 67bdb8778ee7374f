"""The pure parts of `seqgate verify` and its reference replay, without a broker: the
replay's key check, the outbox's order check and the merge of expected with found."""

from __future__ import annotations

from collections.abc import Iterator

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD
from seqgate.schemas.records import OutboxRecord
from seqgate.streams.rules.policy import Policy
from seqgate.streams.tools.replay import InputRecord, PartitionReplay, replay_partition
from seqgate.streams.tools.verify import (
    PartitionReport,
    VerifyTarget,
    _found_records,
    _merge,
    _Reader,
)
from tests.support.events import event

POLICY = Policy.build("aws")
IDENTITY = b"s3://bucket/k"


def input_record(offset: int, sequencer: str, key: bytes | None = IDENTITY) -> InputRecord:
    value = OBJECT_EVENT.encode(event("k", sequencer))
    return InputRecord(0, offset, key, value, timestamp=1_000 + offset)


# ---- the replay ---------------------------------------------------------------------------------


def test_the_replay_refuses_a_record_keyed_by_another_identity() -> None:
    """The worker rejects it (key_mismatch): deciding it would make no outbox record
    and leave no watermark, so the same write keyed right is still accepted after it."""
    replay = PartitionReplay(POLICY)
    assert replay.apply(input_record(0, "0a", key=b"s3://bucket/other")) is None
    assert replay.apply(input_record(1, "0a", key=b"\xff not utf-8")) is None
    assert replay.state == {}
    accepted = replay.apply(input_record(2, "0a"))
    assert accepted is not None and accepted.input_offset == 2
    assert replay.watermarks()["s3://bucket/k"].input_offset == 2


def test_the_replay_decides_records_keyed_by_identity_or_not_keyed() -> None:
    outbox, marks = replay_partition(
        [input_record(0, "0a"), input_record(1, "0b", key=None), input_record(2, "0b")], POLICY
    )
    assert [(r.input_offset, r.previous_position) for r in outbox] == [(0, None), (1, "0a")]
    assert marks["s3://bucket/k"].position == "0b"


# ---- the outbox as verify reads it --------------------------------------------------------------


class OutboxReader(_Reader):
    """The outbox records verify would read from Kafka, given instead."""

    def __init__(self, records: list[InputRecord]) -> None:
        self.records = records

    def read(
        self, topic: str, partitions: list[int], stop: int | None = None
    ) -> Iterator[InputRecord]:
        yield from self.records


def outbox_record(offset: int, sequencer: str, previous: str | None = None) -> OutboxRecord:
    return OutboxRecord(event("k", sequencer), previous, 0, offset)


def found(*records: OutboxRecord) -> tuple[list[OutboxRecord], PartitionReport]:
    messages = [
        InputRecord(0, index, IDENTITY, OUTBOX_RECORD.encode(record))
        for index, record in enumerate(records)
    ]
    target = VerifyTarget(KafkaSettings("127.0.0.1:1"), "app", "in", "out", "changelog", POLICY)
    report = PartitionReport(0)
    return list(_found_records(OutboxReader(messages), target, report, [0])), report


def test_the_same_position_twice_in_the_outbox_is_a_duplicate_not_a_step_back() -> None:
    records, report = found(outbox_record(0, "0a"), outbox_record(1, "0A0"))  # equal under aws
    assert len(records) == 2 and report.found == 2
    assert (report.duplicated, report.not_increasing) == (1, 0)
    assert report.examples == ["s3://bucket/k@0A0 twice in the outbox"]


def test_a_lower_position_after_a_higher_one_is_not_increasing_not_a_duplicate() -> None:
    _, report = found(outbox_record(0, "0b"), outbox_record(1, "0a"), outbox_record(2, "0c"))
    assert (report.duplicated, report.not_increasing) == (0, 1)
    assert report.examples == ["s3://bucket/k: 0a after 0b in the outbox"]


def test_increasing_positions_are_no_problem() -> None:
    _, report = found(outbox_record(0, "0a"), outbox_record(1, "0b"))
    assert report.problems() == 0 and report.found == 2


# ---- the merge ----------------------------------------------------------------------------------


def merged(expected: list[OutboxRecord], have: list[OutboxRecord]) -> PartitionReport:
    report = PartitionReport(0)
    _merge(iter(expected), iter(have), report)
    return report


def test_a_different_record_for_the_same_input_offset_is_missing_and_unexpected() -> None:
    """The worker wrote an outbox record for the right input, but not the one the replay
    says (here: another previous_position, as a lost watermark would give)."""
    want = [outbox_record(0, "0a"), outbox_record(1, "0b", previous="0a")]
    have = [outbox_record(0, "0a"), outbox_record(1, "0b", previous=None)]
    report = merged(want, have)
    assert (report.missing, report.unexpected) == (1, 1)
    assert report.examples == ["different record for input offset 1"]


def test_the_same_records_merge_without_a_problem() -> None:
    records = [outbox_record(0, "0a"), outbox_record(3, "0b", previous="0a")]
    report = merged(records, list(records))
    assert report.problems() == 0 and report.examples == []


def test_records_on_one_side_only_are_missing_or_unexpected() -> None:
    report = merged([outbox_record(0, "0a"), outbox_record(2, "0c")], [outbox_record(1, "0b")])
    assert (report.missing, report.unexpected) == (2, 1)
    assert report.examples == [
        "missing: input offset 0 (s3:k:0a)",
        "unexpected: outbox record for input offset 1",
        "missing: input offset 2 (s3:k:0c)",
    ]
