"""The changelog's bounds at restore, asked again while the cluster is moving.

Right after two of three nodes came back, a worker's restore met librdkafka's
``_DESTROY_BROKER`` (the handle of the returned node replaced) and exited; the cluster run
is tests/torture/test_cluster_faults.py. Here with a stand-in consumer: the error cannot be
produced on demand by a real broker.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from seqgate.streams.state import restore

TP = TopicPartition("app-watermarks-changelog", 0)


class _Consumer:
    def __init__(self, *failures: int, cache: tuple[int, int] = (-1001, -1001)) -> None:
        self.failures = list(failures)
        self.cache = cache
        self.asked = 0
        self.waits: list[float] = []
        self.calls: list[str] = []

    def get_watermark_offsets(
        self, tp: TopicPartition, timeout: float = -1, cached: bool = False
    ) -> tuple[int, int]:
        self.calls.append("local" if cached else "broker")
        if cached:  # librdkafka's cache: what this consumer's last fetch of it said
            return self.cache
        self.asked += 1
        self.waits.append(timeout)
        if self.failures:
            raise KafkaException(KafkaError(self.failures.pop(0)))
        return 3, 42


def test_the_bounds_are_asked_again_while_the_cluster_moves() -> None:
    consumer = _Consumer(KafkaError._DESTROY_BROKER, KafkaError.NOT_LEADER_FOR_PARTITION)
    assert restore._bounds(consumer, TP, timeout=10.0) == (3, 42)  # type: ignore[arg-type]
    assert consumer.asked == 3


def test_metadata_that_briefly_lacks_the_partition_is_asked_again() -> None:
    """Seen in CI right after node 1 of three came back: `Failed to get watermark offsets:
    Local: Unknown partition` ended the worker."""
    consumer = _Consumer(KafkaError._UNKNOWN_PARTITION, KafkaError.UNKNOWN_TOPIC_OR_PART)
    assert restore._bounds(consumer, TP, timeout=10.0) == (3, 42)  # type: ignore[arg-type]
    assert consumer.asked == 3


def test_another_error_is_the_answer() -> None:
    consumer = _Consumer(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    with pytest.raises(KafkaException):
        restore._bounds(consumer, TP, timeout=10.0)  # type: ignore[arg-type]
    assert consumer.asked == 1


def test_a_cluster_that_keeps_moving_is_an_error_at_the_timeout() -> None:
    consumer = _Consumer(*[KafkaError._TRANSPORT] * 100)
    with pytest.raises(KafkaException):
        restore._bounds(consumer, TP, timeout=1.0)  # type: ignore[arg-type]
    assert 2 <= consumer.asked <= 4


def test_a_long_restore_logs_its_rate_and_eta(caplog: pytest.LogCaptureFixture) -> None:
    applier = restore._ChangelogApplier(None, 4, start=100, end=1_100, progress=None)  # type: ignore[arg-type]
    applier._began -= 10.0  # ten seconds in, halfway through the span
    applier.next_offset, applier.applied = 600, 480
    with caplog.at_level("INFO", logger=restore.__name__):
        applier._log_progress()
    [line] = [r for r in caplog.records if r.getMessage() == "restoring partition"]
    fields = line.__dict__
    assert (fields["partition"], fields["records"], fields["percent"]) == (4, 480, 50.0)
    assert fields["rate_per_s"] == pytest.approx(50.0, abs=0.5)  # offsets per second
    assert fields["eta_s"] == pytest.approx(10.0, abs=0.5)


def test_a_fresh_restore_asks_the_broker_at_once() -> None:
    """The first question went to librdkafka's cache, empty in a restore consumer that
    has fetched nothing: its -1001 read as a changelog behind the store and cost every
    partition's restore a recheck pause (50 ms; a third of `seqgate bench`'s restore)."""

    class _FreshStore:
        path = "unused"

        def changelog_next_offset(self) -> int | None:
            return None

    consumer = _Consumer()
    started = time.monotonic()
    span = _span(consumer, _FreshStore())
    assert span == (3, 42)
    assert consumer.asked == 1
    assert time.monotonic() - started < restore._END_RECHECK_S


def _span(consumer: _Consumer, store: object) -> tuple[int, int] | None:
    return restore._changelog_span(
        consumer,  # type: ignore[arg-type]
        TP.topic,
        0,
        store,  # type: ignore[arg-type]
        at_least=None,
        timeout=10.0,
        settle_s=10.0,
    )


class _Store:
    path = "unused"

    def __init__(self, next_offset: int | None) -> None:
        self.next_offset = next_offset

    def changelog_next_offset(self) -> int | None:
        return self.next_offset


def test_a_partition_back_from_another_worker_restores_what_that_worker_wrote() -> None:
    """This consumer restored the partition up to 3 once; another worker has since written
    the changelog up to 42. The cache still says 3 (nothing fetched it since): trusting it
    would leave the store 39 records behind."""
    consumer = _Consumer(cache=(0, 3))
    span = _span(consumer, _Store(3))
    assert span == (3, 42)


def test_a_question_left_unanswered_is_asked_again_within_the_timeout() -> None:
    consumer = _Consumer(KafkaError._TIMED_OUT)
    assert restore._bounds(consumer, TP, timeout=30.0) == (3, 42)  # type: ignore[arg-type]
    assert consumer.asked == 2
    assert max(consumer.waits) <= restore._ATTEMPT_S


def test_the_partition_is_looked_up_locally_before_the_broker_is_asked() -> None:
    """The local look-up makes librdkafka follow the partition (and ask for its metadata):
    without it, after two of three nodes were down and one returned, the broker question met
    `_UNKNOWN_PARTITION` until the timeout (tests/torture/test_cluster_faults.py
    `test_two_of_three_nodes_down`); its answer is not used."""
    consumer = _Consumer(cache=(0, 99))
    span = _span(consumer, _Store(3))
    assert consumer.calls == ["local", "broker"]
    assert span == (3, 42)
