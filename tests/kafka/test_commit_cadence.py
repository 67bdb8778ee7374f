"""When the worker commits, on a real broker (seqgate/streams/worker/cadence.py): as soon as
it has read everything fetched, and reading a backlog, in transactions of --commit-every
records rather than one per batch."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from tests.support.events import event
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    produce_events,
    read_all,
    wait_for,
    worker_thread,
)

pytestmark = pytest.mark.kafka

# Longer than any wait below: a commit these tests see is never the interval's.
_NEVER_MS = 600_000


def test_a_worker_that_has_caught_up_commits_without_waiting_for_the_count_or_the_interval(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path, commit_every=10_000)
    config = dataclasses.replace(config, commit_interval_ms=_NEVER_MS)
    events = [event(f"trickle-{n}.txt", str(10 + n)) for n in range(7)]
    with worker_thread(config) as run:
        produce_events(kafka_bootstrap, config.input_topic, events)
        # 7 records, far below the count, and the interval is ten minutes away.
        wait_for(caught_up(kafka_bootstrap, config), 30, "the worker's commit once caught up")
        assert run.worker.committed_records == 7
    assert len(read_all(kafka_bootstrap, config.outbox_topic)) == 7


def test_a_backlog_is_committed_by_the_count_not_batch_by_batch(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    backlog, every, batch = 6_000, 2_000, 500
    config = make_config(
        kafka_bootstrap, unique_name, tmp_path, commit_every=every, batch_size=batch
    )
    config = dataclasses.replace(config, commit_interval_ms=_NEVER_MS)
    events = [event(f"backlog-{n % 900}.txt", str(10 + n)) for n in range(backlog)]
    produce_events(kafka_bootstrap, config.input_topic, events)
    with worker_thread(config) as run:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker through the backlog")
        commits = run.worker.commits
        assert run.worker.committed_records == backlog
    # Full batches keep the transaction open up to the count: a handful of commits (the
    # count's three, and one wherever the worker outran what was fetched so far), far fewer
    # than the twelve batches a commit per batch would make.
    assert backlog // every <= commits < backlog // batch, commits
