"""`seqgate verify` from end to end without a broker: its reader's consumers read a cluster
in memory (tests/support/standin_cluster.py, a stand-in for the Kafka I/O only); the
records in it are encoded with the project's codecs and the outbox and changelog are what a
worker writes (the reference replay's), then damaged the way the tests say."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from confluent_kafka import KafkaError

import seqgate.streams.tools.verify as verify_module
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import RejectedRecord
from seqgate.streams.errors import VerifyError
from seqgate.streams.rules.policy import Policy
from seqgate.streams.tools.replay import InputRecord, PartitionReplay
from seqgate.streams.tools.verify import PartitionReport, VerifyTarget, _Reader, verify
from tests.support.events import event
from tests.support.memory_registry import MemoryRegistry
from tests.support.standin_cluster import Cluster, Stored

POLICY = Policy.build("aws")
TIMEOUT = 7.5
TARGET = VerifyTarget(
    KafkaSettings("127.0.0.1:1"),
    "app",
    "in",
    "out",
    "changelog",
    POLICY,
    timeout_s=TIMEOUT,
    rejected_topic="rejected",
)
# partition → (key, sequencer) of its inputs, by offset
INPUTS = {0: [("a", "0a"), ("a", "0b"), ("a", "0a"), ("b", "01")], 1: [("c", "05"), ("c", "06")]}


class Meter:
    def __init__(self) -> None:
        self.expected: list[int] = []
        self.advanced = 0

    def expect(self, records: int) -> None:
        self.expected.append(records)

    def advance(self, records: int = 1) -> None:
        self.advanced += records


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> Iterator[Cluster]:
    cluster = Cluster(TIMEOUT)
    monkeypatch.setattr(verify_module, "Consumer", cluster.consumer)
    yield cluster
    assert cluster.open_consumers == 0, "verify left a consumer open"


def processed(
    cluster: Cluster,
    outbox_partitions: int = 2,
    unwritable: int | None = None,
    framing: Framing = SINGLE_OBJECT,
) -> None:
    """The inputs of INPUTS, and the outbox and changelog a worker makes of them; the group
    committed all of partition 0 and one record of partition 1. `unwritable`: an offset of
    partition 0 the worker rejected as unwritable_record. `framing`: how the worker
    and its producers encode (the replay reads inputs with it too)."""
    cluster.committed["app"] = {0: 4, 1: 1}
    cluster.add("rejected", 0)
    cluster.add("changelog", 1, Stored(0, b"s3://bucket/gone", b"\x00"))  # then tombstoned
    cluster.add("changelog", 1, Stored(1, b"s3://bucket/gone", None))
    for partition, inputs in INPUTS.items():
        cluster.add("out", partition % outbox_partitions)
        unwritables = frozenset({unwritable} if partition == 0 else set())
        replay = PartitionReplay(POLICY, unwritables, framing)
        for offset, (key, sequencer) in enumerate(inputs):
            value = framing.writer(OBJECT_EVENT, "in")(event(key, sequencer))
            record = InputRecord(partition, offset, f"s3://bucket/{key}".encode(), value, 10)
            cluster.add("in", partition, Stored(offset, record.key, value, 10))
            if offset >= cluster.committed["app"][partition]:
                continue
            accepted = replay.apply(record)
            if accepted is not None:
                out = cluster.topics["out"][partition % outbox_partitions]
                out.append(
                    Stored(len(out), record.key, framing.writer(OUTBOX_RECORD, "out")(accepted))
                )
        changelog = cluster.topics.setdefault("changelog", {}).setdefault(partition, [])
        for key, state in replay.state.items():
            changelog.append(Stored(len(changelog), key, state))
    if unwritable is not None:
        origin = f"kafka:in:0:{unwritable}"
        dead = RejectedRecord(b"", origin, RejectReason.UNWRITABLE_RECORD, "too large", None)
        cluster.add("rejected", 0, Stored(0, None, framing.writer(REJECTED_RECORD, "dead")(dead)))


def test_a_consistent_outbox_and_changelog_verify_clean(cluster: Cluster) -> None:
    processed(cluster)
    heard: list[tuple[int, int]] = []
    meter = Meter()
    report = verify(TARGET, lambda total, r: heard.append((total, r.partition)), meter)
    assert report.ok(), report.as_dict()
    assert [(r.partition, r.committed_offset) for r in report.partitions] == [(0, 4), (1, 1)]
    assert [(r.inputs, r.expected, r.found) for r in report.partitions] == [(4, 3, 3), (1, 1, 1)]
    assert heard == [(2, 0), (2, 1)]
    # inputs to the committed offsets (4 + 1), the outbox (3 + 1), the changelog (2 + 3)
    assert meter.expected == [4 + 1 + 3 + 1 + 2 + 3] and meter.advanced == 14
    groups = [config["group.id"] for config in cluster.configs]
    assert set(groups) == {"app-verify", "app"} and groups.count("app") == 1


def test_verify_works_without_progress_or_meter(cluster: Cluster) -> None:
    processed(cluster)
    assert verify(TARGET).ok()


def test_an_outbox_record_lost_is_missing_in_its_partition(cluster: Cluster) -> None:
    processed(cluster)
    del cluster.topics["out"][0][1]  # the record of input offset 1
    report = verify(TARGET)
    assert not report.ok()
    assert (report.partitions[0].missing, report.partitions[1].problems()) == (1, 0)
    assert report.partitions[0].examples == ["missing: input offset 1 (s3:a:0b)"]


def test_an_outbox_not_partitioned_like_the_input_is_read_whole_for_each_partition(
    cluster: Cluster,
) -> None:
    processed(cluster, outbox_partitions=1)
    meter = Meter()
    report = verify(TARGET, meter=meter)
    assert report.ok(), report.as_dict()
    assert [r.found for r in report.partitions] == [3, 1]
    assert meter.expected == [4 + 1 + 2 * 4 + 2 + 3] and meter.advanced == 18


def test_an_input_rejected_as_unwritable_is_expected_nowhere(cluster: Cluster) -> None:
    processed(cluster, unwritable=1)
    report = verify(TARGET)
    assert report.ok(), report.as_dict()
    assert report.partitions[0].expected == 2
    # without the rejected records, the replay expects it
    without = verify(dataclasses.replace(TARGET, rejected_topic=None))
    assert without.partitions[0].missing >= 1


def test_records_in_the_confluent_wire_format_are_read_with_the_targets_framing(
    cluster: Cluster,
) -> None:
    framing = Framing(MemoryRegistry())
    processed(cluster, unwritable=1, framing=framing)
    report = verify(dataclasses.replace(TARGET, framing=framing))
    assert report.ok(), report.as_dict()
    assert [(r.inputs, r.expected, r.found) for r in report.partitions] == [(4, 2, 2), (1, 1, 1)]


def test_the_rejected_records_are_counted_in_the_meter(cluster: Cluster) -> None:
    processed(cluster, unwritable=1)
    meter = Meter()
    verify(TARGET, meter=meter)
    assert meter.expected == [4 + 1 + 2 + 1 + 2 + 3 + 1] and meter.advanced == 14


def _processed_without(cluster: Cluster, topic: str, how: str) -> None:
    """A processed cluster without `topic`: absent from the metadata, or there but unknown
    to the broker."""
    processed(cluster)
    del cluster.topics[topic]
    if how == "unknown":
        cluster.broken.add(topic)


@pytest.mark.parametrize("how", ["absent", "unknown"])
def test_a_rejection_topic_that_does_not_exist_is_no_error(cluster: Cluster, how: str) -> None:
    _processed_without(cluster, "rejected", how)
    meter = Meter()
    assert verify(TARGET, meter=meter).ok()
    assert meter.expected == [14]


@pytest.mark.parametrize("how", ["absent", "unknown"])
def test_an_outbox_topic_that_does_not_exist_stops_verify(cluster: Cluster, how: str) -> None:
    _processed_without(cluster, "out", how)
    with pytest.raises(VerifyError) as raised:
        verify(TARGET)
    assert str(raised.value) == "topic out does not exist: check the topic options"


def test_offsets_held_by_an_open_transaction_stop_verify_with_the_cause(cluster: Cluster) -> None:
    processed(cluster)
    cluster.committed_error = KafkaError(KafkaError.REQUEST_TIMED_OUT, "held")
    with pytest.raises(VerifyError) as raised:
        verify(TARGET)
    assert str(raised.value) == (
        "cannot read the committed offsets of group app: held (an open transaction of a"
        " stopped worker holds them until it is aborted: restart that worker or wait for"
        " transaction.timeout.ms)"
    )
    assert isinstance(raised.value.__cause__, Exception)


def test_a_partition_the_group_never_committed_is_checked_up_to_offset_zero(
    cluster: Cluster,
) -> None:
    processed(cluster)
    cluster.committed["app"] = {0: 4}
    cluster.topics["out"][1].clear()
    cluster.topics["changelog"][1].clear()
    report = verify(TARGET)
    assert report.ok(), report.as_dict()
    assert [(r.committed_offset, r.inputs) for r in report.partitions] == [(4, 4), (0, 0)]


# ---- the reader's spans and reads ----------------------------------------------------------


def reader(cluster: Cluster) -> _Reader:
    return _Reader(TARGET)


def test_a_span_counts_from_the_first_offset_kept_to_the_end_or_the_stop(cluster: Cluster) -> None:
    cluster.add("t", 0, *(Stored(offset, None, b"v") for offset in (3, 4, 7)))  # compacted
    cluster.add("t", 1)
    with_reader = reader(cluster)
    try:
        assert with_reader.span("t", [0, 1]) == 5
        assert with_reader.span("t", [0], stop=6) == 3
        assert with_reader.span("t", [0], stop=9) == 5
        assert with_reader.span("t", [0], stop=2) == 0
        assert with_reader.span("t", [0], stop=0) == 0
    finally:
        with_reader.close()


def test_a_read_gives_each_partition_in_turn_up_to_the_stop(cluster: Cluster) -> None:
    cluster.add("t", 0, Stored(3, b"k", b"v3", 30), Stored(5, None, None, 50))
    cluster.add("t", 1, Stored(0, b"k", b"w0", 1), Stored(1, b"k", b"w1", 2))
    cluster.add("t", 2)
    meter = Meter()
    with_reader = _Reader(TARGET, meter)
    try:
        got = list(with_reader.read("t", [1, 0, 2]))
        assert got == [
            InputRecord(1, 0, b"k", b"w0", 1),
            InputRecord(1, 1, b"k", b"w1", 2),
            InputRecord(0, 3, b"k", b"v3", 30),
            InputRecord(0, 5, None, None, 50),
        ]
        assert meter.advanced == 2 + 3
        assert list(with_reader.read("t", [1, 0], stop=1)) == [InputRecord(1, 0, b"k", b"w0", 1)]
        assert list(with_reader.read("t", [0], stop=3)) == []
        assert list(with_reader.read("t", [0], stop=4)) == [InputRecord(0, 3, b"k", b"v3", 30)]
    finally:
        with_reader.close()
    assert len(cluster.configs) == 1 + 4  # no consumer for a read with nothing to read
    assert all(config["group.id"] == "app-verify" for config in cluster.configs)


def test_a_partition_that_fails_or_stalls_stops_the_read_with_a_verify_error(
    cluster: Cluster,
) -> None:
    cluster.timeout = 0.05  # the stall is detected after this much time without a record
    cluster.add("t", 0, Stored(0, None, b"v"))
    cluster.add("t", 1, Stored(0, None, b"v"))
    cluster.failing[("t", 0)] = KafkaError(KafkaError._TRANSPORT, "link down")
    cluster.stalled.add(("t", 1))
    with_reader = _Reader(dataclasses.replace(TARGET, timeout_s=0.05))
    try:
        with pytest.raises(VerifyError, match=r"^reading t\[0\]: link down$"):
            list(with_reader.read("t", [0]))
        with pytest.raises(VerifyError, match=r"^reading t\[1\] made no progress for 0s$"):
            list(with_reader.read("t", [1]))
    finally:
        with_reader.close()


def test_the_committed_offsets_are_those_of_the_application_group(cluster: Cluster) -> None:
    processed(cluster)
    cluster.committed["other"] = {0: 1, 1: 1}
    with_reader = reader(cluster)
    try:
        assert with_reader.committed_offsets() == {0: 4, 1: 1}
        assert with_reader.partitions("out") == [0, 1]
        assert with_reader.exists("out") and not with_reader.exists("nothing")
    finally:
        with_reader.close()
    assert cluster.configs[-1]["group.id"] == "app"


def test_an_empty_report_has_no_problems() -> None:
    report = PartitionReport(3)
    assert report.problems() == 0 and report.committed_offset == 0
