"""What `seqgate verify` makes of what it reads for one partition, without a broker: the
rejected records it trusts, the outbox's order check, the merge and the state comparison, each
given records through a stand-in for its Kafka reader (topics in memory, encoded with the
project's codecs)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.codec import OUTBOX_RECORD, REJECTED_RECORD, SEEN_EVENT, WATERMARK
from seqgate.schemas.errors import CodecError
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import OutboxRecord, RejectedRecord, SeenEvent, Watermark
from seqgate.streams.rules.policy import Policy
from seqgate.streams.state.keys import (
    STREAM_TIME_KEY,
    encode_stream_time,
    latest_key,
    seen_key,
    watermark_key,
)
from seqgate.streams.tools.replay import InputRecord
from seqgate.streams.tools.verify import (
    PartitionReport,
    VerifyTarget,
    _check_watermarks,
    _found_records,
    _merge,
    _Reader,
    _show,
    _unwritable_offsets,
)
from tests.support.events import event

# minio is ordered here: its positions compare as numbers, unlike the default (aws) order
POLICY = Policy.build("aws", ordered_sources={"s3", "minio"}, dedupe_window_ms=1_000)
TARGET = VerifyTarget(
    KafkaSettings("127.0.0.1:1"), "app", "in", "out", "changelog", POLICY, rejected_topic="dead"
)


class Topics(_Reader):
    """The records verify would read from Kafka, given instead: topic → partition → records."""

    def __init__(self, topics: dict[str, dict[int, list[InputRecord]]]) -> None:
        self.topics = topics

    def exists(self, topic: str) -> bool:
        return topic in self.topics

    def partitions(self, topic: str) -> list[int]:
        return sorted(self.topics[topic])

    def read(
        self, topic: str, partitions: list[int], stop: int | None = None
    ) -> Iterator[InputRecord]:
        for partition in partitions:
            yield from self.topics[topic][partition]


def messages(partition: int, *values: bytes | None, key: bytes | None = b"id") -> list[InputRecord]:
    return [InputRecord(partition, offset, key, value) for offset, value in enumerate(values)]


def codec_error(data: bytes) -> str:
    try:
        OUTBOX_RECORD.decode(data)
    except CodecError as error:
        return str(error)
    raise AssertionError("decoded")


# ---- the rejected records --------------------------------------------------------------------


def rejection(origin: str, reason: str = RejectReason.UNWRITABLE_RECORD) -> bytes:
    return REJECTED_RECORD.encode(RejectedRecord(b"raw", origin, reason, "refused", None))


def test_the_inputs_rejected_as_unwritable_are_found_by_partition_and_offset() -> None:
    reader = Topics(
        {
            "dead": {
                0: messages(
                    0,
                    None,  # a tombstone
                    b"not a record",
                    rejection("kafka:in:0:7"),
                    rejection("kafka:in:0:9"),
                    rejection("kafka:in:0:8", RejectReason.KEY_MISMATCH),
                    rejection("kafka:other:0:8"),
                    rejection("kafka:in2:0:8"),
                ),
                1: messages(
                    1,
                    rejection("kafka:in:2:3"),
                    rejection("kafka:in:x:3"),
                    rejection("kafka:in:2:y"),
                    rejection("kafka:in:2"),
                    rejection("http:in:2:4"),
                ),
            }
        }
    )
    assert _unwritable_offsets(reader, TARGET) == {0: {7, 9}, 2: {3}}


def test_without_a_rejection_topic_nothing_is_unwritable() -> None:
    reader = Topics({"dead": {0: messages(0, rejection("kafka:in:0:7"))}})
    assert _unwritable_offsets(reader, dataclasses.replace(TARGET, rejected_topic=None)) == {}
    assert _unwritable_offsets(reader, dataclasses.replace(TARGET, rejected_topic="gone")) == {}


# ---- the outbox as verify reads it --------------------------------------------------------------


def outbox(partition: int, sequencer: str, *, input_partition: int = 0, **fields: object) -> bytes:
    record = OutboxRecord(event("k", sequencer, **fields), None, input_partition, partition)
    return OUTBOX_RECORD.encode(record)


def found(
    *values: bytes | None, key: bytes | None = b"id", partition: int = 0
) -> tuple[list[OutboxRecord], PartitionReport]:
    reader = Topics(
        {"out": {0: messages(0, *values[:2], key=key), 1: messages(1, *values[2:], key=key)}}
    )
    report = PartitionReport(partition)
    return list(_found_records(reader, TARGET, report, [0, 1])), report


def test_undecodable_outbox_records_are_unexpected_and_the_reading_goes_on() -> None:
    junk = b"\xc3\x01junk"
    records, report = found(None, junk, outbox(2, "0a"))
    assert [r.event.position for r in records] == ["0a"]
    assert (report.unexpected, report.found) == (2, 1)
    assert report.examples == [
        f"outbox offset 0: undecodable ({codec_error(b'')})",
        f"outbox offset 1: undecodable ({codec_error(junk)})",
    ]


def test_records_of_another_input_partition_are_skipped() -> None:
    records, report = found(outbox(0, "0a", input_partition=1), outbox(1, "0b"), outbox(2, "0c"))
    assert [r.event.position for r in records] == ["0b", "0c"]
    assert report.found == 2 and report.problems() == 0


def test_each_duplicate_and_each_step_back_counts() -> None:
    values = ["0b", "0b", "0a", "0b", "0a"]  # -, a duplicate, a step back, -, a step back
    _, report = found(*(outbox(n, s) for n, s in enumerate(values)))
    assert (report.duplicated, report.not_increasing, report.found) == (1, 2, 5)


def test_two_duplicates_count_two() -> None:
    _, report = found(*(outbox(n, "0a") for n in range(3)))
    assert (report.duplicated, report.not_increasing) == (2, 0)


def test_an_outbox_key_that_is_missing_or_not_utf8_still_names_the_object() -> None:
    _, report = found(outbox(0, "0a"), outbox(1, "0a"), key=None)
    assert report.examples == ["@0a twice in the outbox"]
    _, report = found(outbox(0, "0a"), outbox(1, "0a"), key=b"s3://b/\xff")
    assert report.examples == ["s3://b/\ufffd@0a twice in the outbox"]


def test_positions_compare_in_their_source_order() -> None:
    """minio's sequencers are numbers: ff before 100 is in order (not under aws's order)."""
    _, report = found(outbox(0, "ff", source="minio"), outbox(1, "100", source="minio"))
    assert report.problems() == 0


@pytest.mark.parametrize(
    "fields", [{"source": "gcs"}, {"origin": "reconcile:listing"}], ids=["dedupe", "repair"]
)
def test_records_without_an_ordering_position_are_not_order_checked(
    fields: dict[str, object],
) -> None:
    records, report = found(
        outbox(0, "0b", **fields), outbox(1, "0b", **fields), outbox(2, "0a", **fields)
    )
    assert len(records) == 3 and report.found == 3
    assert report.problems() == 0


def test_a_record_without_a_position_neither_orders_nor_forgets_the_last_one() -> None:
    _, report = found(outbox(0, "0a"), outbox(1, "0b", position=None), outbox(2, "0a"))
    assert (report.duplicated, report.not_increasing, report.found) == (1, 0, 3)


# ---- the merge ----------------------------------------------------------------------------------


def outbox_record(offset: int, sequencer: str, previous: str | None = None) -> OutboxRecord:
    return OutboxRecord(event("k", sequencer), previous, 0, offset)


def merged(expected: list[OutboxRecord], have: list[OutboxRecord]) -> PartitionReport:
    report = PartitionReport(0)
    _merge(iter(expected), iter(have), report)
    return report


def test_an_empty_side_makes_the_other_all_missing_or_all_unexpected() -> None:
    records = [outbox_record(0, "0a"), outbox_record(1, "0b"), outbox_record(2, "0c")]
    assert (merged([], records).unexpected, merged([], records).missing) == (3, 0)
    assert (merged(records, []).missing, merged(records, []).unexpected) == (3, 0)
    assert merged([], []).problems() == 0


def test_unexpected_records_before_an_expected_one_do_not_hide_it() -> None:
    have = [outbox_record(0, "0a"), outbox_record(1, "0b"), outbox_record(2, "0c")]
    report = merged([outbox_record(2, "0c")], have)
    assert (report.unexpected, report.missing) == (2, 0)


def test_each_different_record_counts_once_on_each_side() -> None:
    want = [outbox_record(0, "0a", "00"), outbox_record(1, "0b", "0a")]
    have = [outbox_record(0, "0a"), outbox_record(1, "0b")]
    report = merged(want, have)
    assert (report.missing, report.unexpected) == (2, 2)


# ---- the committed state against the replay's ---------------------------------------------------


def seen(record_time: int) -> bytes:
    return SEEN_EVENT.encode(SeenEvent("gcs:e", "gs://b/k", record_time, 0, 3))


def mark(position: str) -> bytes:
    return WATERMARK.encode(Watermark(position, f"s3:k:{position}", 0, 1))


def compared(
    state: dict[bytes, bytes], changelog: list[tuple[bytes | None, bytes | None]]
) -> PartitionReport:
    records = [InputRecord(0, n, key, value) for n, (key, value) in enumerate(changelog)]
    other = [InputRecord(1, 0, watermark_key("s3://b/other"), mark("0f"))]
    report = PartitionReport(0)
    _check_watermarks(Topics({"changelog": {0: records, 1: other}}), TARGET, report, state)
    return report


def test_the_last_committed_value_of_each_key_is_compared_with_the_replay() -> None:
    key = watermark_key("s3://b/k")
    changelog: list[tuple[bytes | None, bytes | None]] = [
        (key, mark("0a")),
        (key, mark("0b")),
        (b"s3://b/gone", mark("01")),
        (b"s3://b/gone", None),
        (b"s3://b/never", None),
    ]
    assert compared({key: mark("0b")}, changelog).problems() == 0


def test_a_key_on_one_side_only_or_with_another_value_is_a_mismatch() -> None:
    key, only = watermark_key("s3://b/k"), watermark_key("s3://b/only")
    report = compared(
        {key: mark("0b"), b"s3://b/replayed": mark("01")}, [(key, mark("0a")), (only, mark("02"))]
    )
    assert report.watermark_mismatches == 3
    assert sorted(report.examples) == sorted(
        [
            f"state of 's3://b/k': committed {WATERMARK.decode(mark('0a'))},"
            f" replay {WATERMARK.decode(mark('0b'))}",
            f"state of 's3://b/only': committed {WATERMARK.decode(mark('02'))}, replay nothing",
            f"state of 's3://b/replayed': committed nothing, replay {WATERMARK.decode(mark('01'))}",
        ]
    )


def test_a_committed_value_without_a_key_is_compared_under_the_empty_key() -> None:
    report = compared({}, [(None, encode_stream_time(5))])
    assert report.examples == ["state of '': committed " + repr(b"5") + ", replay nothing"]


STREAM_TIME = 10_000  # dedupe retention: 2 windows of 1000 ms


@pytest.mark.parametrize("side", ["replay", "committed"])
def test_an_expired_dedupe_id_may_be_purged_on_one_side_only(side: str) -> None:
    key = seen_key("gcs:e")
    time = (STREAM_TIME_KEY, encode_stream_time(STREAM_TIME))
    expired, kept = seen(STREAM_TIME - 2_001), seen(STREAM_TIME - 2_000)
    for value, mismatches in ((expired, 0), (kept, 1)):
        state = dict([time, (key, value)] if side == "replay" else [time])
        changelog = [time, (key, value)] if side == "committed" else [time]
        assert compared(state, changelog).watermark_mismatches == mismatches


def test_a_dedupe_id_is_a_mismatch_when_both_sides_differ_or_time_is_unknown() -> None:
    key = seen_key("gcs:e")
    time = (STREAM_TIME_KEY, encode_stream_time(STREAM_TIME))
    old, older = seen(STREAM_TIME - 5_000), seen(STREAM_TIME - 6_000)
    assert compared(dict([time, (key, old)]), [time, (key, older)]).watermark_mismatches == 1
    assert compared({key: old}, []).watermark_mismatches == 1
    report = compared({}, [(key, old)])
    assert report.examples == [
        f"state of {key.decode()!r}: committed {SEEN_EVENT.decode(old)}, replay nothing"
    ]


def test_state_values_are_shown_decoded_by_their_key() -> None:
    value = seen(7)
    assert _show(seen_key("gcs:e"), value) == str(SEEN_EVENT.decode(value))
    assert _show(latest_key("gs://b/k"), value) == str(SEEN_EVENT.decode(value))
    assert _show(STREAM_TIME_KEY, b"1234") == "1234"
    assert _show(watermark_key("s3://b/k"), mark("0a")) == str(WATERMARK.decode(mark("0a")))
    assert _show(b"s3://b/k", None) == "nothing"


def test_state_values_that_do_not_decode_are_shown_raw_and_cut() -> None:
    junk = b"\xff" * 50
    assert _show(STREAM_TIME_KEY, junk) == repr(junk[:40])
    assert _show(seen_key("gcs:e"), junk) == repr(junk[:40])
    assert _show(b"s3://b/k", junk) == repr(junk[:40])


def test_every_key_is_compared_whatever_the_set_order() -> None:
    """Equal values and expired ids only on one side are skipped, not the end of the check:
    with twenty of each and twenty mismatches, every mismatch counts in any key order."""
    time = (STREAM_TIME_KEY, encode_stream_time(STREAM_TIME))
    equal = {watermark_key(f"s3://b/same{n}"): mark("0a") for n in range(20)}
    purged = {seen_key(f"gcs:e{n}"): seen(STREAM_TIME - 5_000) for n in range(20)}
    state = {**equal, **purged, time[0]: time[1]}
    state.update({watermark_key(f"s3://b/other{n}"): mark("0b") for n in range(20)})
    changelog: list[tuple[bytes | None, bytes | None]] = [time, *equal.items()]
    changelog += [(watermark_key(f"s3://b/other{n}"), mark("0c")) for n in range(20)]
    assert compared(state, changelog).watermark_mismatches == 20


def test_a_state_key_that_is_not_utf8_is_named_with_replacement_characters() -> None:
    report = compared({b"s3://b/\xff": mark("0a")}, [])
    assert report.examples == [
        f"state of 's3://b/\ufffd': committed nothing, replay {WATERMARK.decode(mark('0a'))}"
    ]
