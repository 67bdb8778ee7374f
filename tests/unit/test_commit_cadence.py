"""When the worker commits (seqgate/streams/worker/cadence.py): as soon as it has caught up,
and at the latest every N records or an interval counted from each commit's start, as
Kafka Streams' commit.interval.ms."""

from __future__ import annotations

import pytest

from seqgate.streams.worker.cadence import DEFAULT_COMMIT_EVERY, CommitCadence


def test_a_worker_that_has_caught_up_commits_whatever_the_count_and_the_time() -> None:
    cadence = CommitCadence(interval_s=60.0, every=10_000)
    cadence.committing(10.0)
    assert cadence.due(records=1, now=10.001, caught_up=True)


def test_reading_a_backlog_commits_every_n_records_whatever_the_time() -> None:
    cadence = CommitCadence(interval_s=0.1, every=2000)
    cadence.committing(1.0)
    assert not cadence.due(records=1999, now=1.001, caught_up=False)
    assert cadence.due(records=2000, now=1.001, caught_up=False)


def test_a_backlog_commits_an_interval_after_the_previous_commit_started() -> None:
    cadence = CommitCadence(interval_s=0.25, every=10_000)
    cadence.committing(10.0)
    # The commit ran 50 ms; full batches read from 10.05 on are due at 10.25, not at 10.3.
    assert not cadence.due(records=500, now=10.245, caught_up=False)
    assert cadence.due(records=500, now=10.25, caught_up=False)


def test_the_first_transaction_is_due_after_its_first_batch() -> None:
    cadence = CommitCadence(interval_s=0.1, every=2000)
    assert cadence.due(records=1, now=5.0, caught_up=False)


def test_an_idle_worker_waits_an_interval_at_most_half_a_second() -> None:
    assert CommitCadence(0.1, 10).idle_wait_s() == pytest.approx(0.1)
    assert CommitCadence(5.0, 10).idle_wait_s() == pytest.approx(0.5)


def test_the_default_count_is_the_backlog_bound_measured() -> None:
    # docs/benchmark.md, "Committing when caught up": the count only bounds a backlog's
    # transactions; the README and docs/processor.md give this default.
    assert DEFAULT_COMMIT_EVERY == 10_000
