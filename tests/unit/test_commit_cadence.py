"""When the worker commits (seqgate/streams/worker/cadence.py): a fixed cadence counted
from each commit's start, as Kafka Streams' commit.interval.ms, and every N records."""

from __future__ import annotations

import pytest

from seqgate.streams.worker.cadence import CommitCadence


def test_the_first_transaction_commits_after_its_first_batch() -> None:
    cadence = CommitCadence(interval_s=0.1, every=2000)
    assert cadence.due(records=1, now=5.0)


def test_a_transaction_is_due_an_interval_after_the_previous_commit_started() -> None:
    cadence = CommitCadence(interval_s=0.25, every=2000)
    cadence.committing(10.0)
    # The commit ran 50 ms; records read from 10.05 on are due at 10.25, not at 10.3.
    assert not cadence.due(records=500, now=10.245)
    assert cadence.due(records=500, now=10.25)


def test_a_record_read_during_a_commit_waits_at_most_one_interval_from_its_start() -> None:
    """The latency bound the cadence exists for: one interval plus one commit."""
    cadence = CommitCadence(interval_s=0.1, every=2000)
    cadence.committing(20.0)
    commit_ends = 20.07  # a slow commit: the record arrived at 20.01 and waited for it
    waited = cadence.wait_s(commit_ends, in_transaction=True)
    assert waited == pytest.approx(0.03)
    assert cadence.due(records=1, now=commit_ends + waited)


def test_every_n_records_commits_whatever_the_time() -> None:
    cadence = CommitCadence(interval_s=0.1, every=2000)
    cadence.committing(1.0)
    assert not cadence.due(records=1999, now=1.001)
    assert cadence.due(records=2000, now=1.001)


def test_a_commit_longer_than_the_interval_makes_the_next_one_due_at_once() -> None:
    cadence = CommitCadence(interval_s=0.1, every=2000)
    cadence.committing(3.0)
    assert cadence.wait_s(3.25, in_transaction=True) == 0.0
    assert cadence.due(records=1, now=3.25)


def test_outside_a_transaction_the_loop_waits_an_interval_at_most_half_a_second() -> None:
    assert CommitCadence(0.1, 10).wait_s(0.0, in_transaction=False) == pytest.approx(0.1)
    assert CommitCadence(5.0, 10).wait_s(0.0, in_transaction=False) == pytest.approx(0.5)
    cadence = CommitCadence(0.1, 10)
    cadence.committing(7.0)
    assert cadence.wait_s(7.02, in_transaction=True) == pytest.approx(0.08)
