"""A stuck consumer is told from an idle one (seqgate/streams/worker/liveness.py): the pure
rules, tested directly (the worker against the real broker is in tests/kafka/test_liveness.py).
"""

from __future__ import annotations

from seqgate.streams.worker.liveness import PartitionProgress, StallWatch, readable_partitions


def test_a_partition_read_to_its_stable_end_is_not_readable() -> None:
    assert not PartitionProgress(0, 10, 0, 10).readable()


def test_records_below_the_stable_end_are_readable() -> None:
    assert PartitionProgress(0, 9, 0, 10).readable()


def test_records_above_the_stable_end_are_not_readable_yet() -> None:
    # Held back by another producer's open transaction: a bounded wait, not a stall.
    assert not PartitionProgress(0, 10, 0, 10).readable()
    assert readable_partitions([PartitionProgress(0, 10, 0, 10)]) == []


def test_no_position_yet_counts_from_the_log_start() -> None:
    assert PartitionProgress(0, None, 5, 7).readable()
    assert not PartitionProgress(0, None, 7, 7).readable()


def test_a_position_below_the_log_start_counts_from_the_log_start() -> None:
    assert not PartitionProgress(0, 2, 7, 7).readable()


def test_the_watch_is_due_only_after_the_timeout_and_not_on_every_call() -> None:
    watch = StallWatch(timeout_s=10, last_progress=100.0)
    assert not watch.due(109.9)
    assert watch.due(110.0)
    assert not watch.due(111.0)  # checked at most once per timeout/4
    assert watch.due(112.6)
    watch.progressed(112.7)
    assert not watch.due(120.0)


def test_a_stall_needs_unread_records_for_a_whole_timeout() -> None:
    watch = StallWatch(timeout_s=10, last_progress=0.0)
    assert not watch.observed(20.0, readable=True)  # just arrived: not yet a stall
    assert not watch.observed(29.9, readable=True)
    assert watch.observed(30.0, readable=True)


def test_progress_or_nothing_to_read_clears_the_suspicion() -> None:
    watch = StallWatch(timeout_s=10, last_progress=0.0)
    assert not watch.observed(20.0, readable=True)
    watch.progressed(25.0)
    assert not watch.observed(31.0, readable=True)
    assert not watch.observed(32.0, readable=False)
    assert not watch.observed(40.0, readable=True)
    assert watch.observed(50.0, readable=True)
