"""The bookkeeping that ends abort loops (seqgate/streams/worker/refused.py): pure, no broker."""

from __future__ import annotations

from confluent_kafka import KafkaError

from seqgate.streams.worker.refused import RefusedRecords

TOO_LARGE = {KafkaError.MSG_SIZE_TOO_LARGE}


def test_a_passing_fault_changes_nothing() -> None:
    refused = RefusedRecords(stall_timeout_s=10)
    assert refused.after_abort({KafkaError._MSG_TIMED_OUT}, "timed out", 50, {0: 50}) is None
    assert not refused.isolating
    assert refused.get(0, 49) is None


def test_a_refused_batch_is_isolated_then_its_one_record_rejected() -> None:
    refused = RefusedRecords(stall_timeout_s=10)
    # Step 1: a batch of 6 records (offsets 0..3 of partition 0, 10..11 of partition 1).
    assert refused.after_abort(TOO_LARGE, "too large", 6, {0: 4, 1: 12}) is None
    assert refused.isolating
    refused.committed({0: 1})  # offset 0 alone: written
    assert refused.isolating
    # Step 2: offset 1 alone is refused: it becomes a rejected record, with its bytes.
    assert refused.after_abort(TOO_LARGE, "too large", 1, {0: 2}) is None
    found = refused.get(0, 1)
    assert found is not None and not found.omit_raw and "too large" in found.why
    # Step 3: its rejected record is refused too: without the bytes.
    assert refused.after_abort(TOO_LARGE, "too large", 1, {0: 2}) is None
    found = refused.get(0, 1)
    assert found is not None and found.omit_raw
    # Step 4: even so: the caller stops, told which input.
    assert refused.after_abort(TOO_LARGE, "too large", 1, {0: 2}) == (0, 1)
    # The rejected record committed: forgotten; isolation ends past the aborted offsets.
    refused.committed({0: 2})
    assert refused.get(0, 1) is None
    refused.committed({0: 4})
    assert refused.isolating  # partition 1 still to pass offset 11
    refused.committed({1: 12})
    assert not refused.isolating


def test_a_released_partition_is_forgotten() -> None:
    refused = RefusedRecords(stall_timeout_s=10)
    refused.after_abort(TOO_LARGE, "too large", 3, {2: 30})
    refused.after_abort(TOO_LARGE, "too large", 1, {2: 28})
    refused.release(2)
    assert not refused.isolating and refused.get(2, 27) is None


def test_aborts_without_a_commit_end_after_the_stall_timeout() -> None:
    refused = RefusedRecords(stall_timeout_s=10)
    assert refused.abort_loop_seconds(100.0) is None  # the first abort: counting starts
    assert refused.abort_loop_seconds(109.9) is None
    assert refused.abort_loop_seconds(110.0) == 10.0
    refused.committed({0: 5})  # a commit in between starts the count again
    assert refused.abort_loop_seconds(200.0) is None
    assert refused.abort_loop_seconds(205.0) is None
