"""The processor against a real broker: the guide's sequence, isolation, restarts, failures."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer

from seqgate.runtime.errors import InjectedFault
from seqgate.runtime.faults import FaultPoint, RaiseAt
from seqgate.schemas.codec import OUTBOX_RECORD
from seqgate.schemas.limits import MAX_POSITION_BYTES
from seqgate.schemas.outcomes import Outcome
from seqgate.streams.state.store import StateDirectory
from seqgate.streams.worker.processor import WorkerFatalError
from tests.support.events import s3_event
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    produce_events,
    read_all,
    wait_for,
    worker_thread,
)

pytestmark = pytest.mark.kafka

GUIDE_KEY = "incoming%2FJune+report%2Bfinal.csv"


def outcomes(decisions: list) -> list[str]:  # type: ignore[type-arg]
    return [d.outcome.value for d in sorted(decisions, key=lambda d: (d.partition, d.offset))]


@pytest.mark.parametrize(
    ("ordering", "first_run", "after_restart", "outbox_count"),
    [
        ("numeric", ["accepted", "duplicate", "stale", "accepted"], "duplicate", 2),
        ("aws", ["accepted", "stale", "stale", "stale"], "stale", 1),
    ],
)
def test_guide_sequence_through_kafka(
    kafka_bootstrap: str,
    unique_name: str,
    tmp_path: Path,
    ordering: str,
    first_run: list[str],
    after_restart: str,
    outbox_count: int,
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path, ordering=ordering)
    produce_events(
        kafka_bootstrap, config.input_topic, [s3_event(s) for s in ("f", "000F", "e", "10")]
    )
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the first worker to catch up")
    assert not running.errors
    assert outcomes(running.decisions) == first_run

    # A new worker instance on the same state directory and transactional.id.
    produce_events(kafka_bootstrap, config.input_topic, [s3_event("10")])
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the restarted worker to catch up")
    assert not running.errors
    assert outcomes(running.decisions) == [after_restart]

    outbox = [OUTBOX_RECORD.decode(r.value) for r in read_all(kafka_bootstrap, config.outbox_topic)]
    assert len(outbox) == outbox_count
    assert {r.event.key for r in outbox} == {"incoming/June report+final.csv"}
    assert outbox[0].previous_position is None
    if ordering == "numeric":
        assert [r.event.position for r in outbox] == ["f", "10"]
        assert outbox[1].previous_position == "f"


def test_separate_buckets_and_keys_never_interact(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path)
    events = [
        s3_event("5", bucket="bucket-a", key="same-key"),
        s3_event("3", bucket="bucket-b", key="same-key"),
        s3_event("1", bucket="bucket-a", key="other-key"),
        s3_event("4", bucket="bucket-a", key="same-key"),  # stale for bucket-a/same-key only
    ]
    produce_events(kafka_bootstrap, config.input_topic, events)
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
    by_identity = {(d.identity, d.position): d.outcome for d in running.decisions}
    assert by_identity == {
        ("s3://bucket-a/same-key", "5"): Outcome.ACCEPTED,
        ("s3://bucket-b/same-key", "3"): Outcome.ACCEPTED,
        ("s3://bucket-a/other-key", "1"): Outcome.ACCEPTED,
        ("s3://bucket-a/same-key", "4"): Outcome.STALE,
    }


def test_long_sequencer_and_absent_version_id(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path)
    # As long as a position may be (seqgate/schemas/limits.py): compared digit by digit.
    long_low = "0" * 10 + "a" * (MAX_POSITION_BYTES - 10)
    long_high = "0" * 10 + "a" * (MAX_POSITION_BYTES - 11) + "b"
    events = [
        s3_event(long_low, version_id=None),
        s3_event(long_low, version_id=None),
        s3_event(long_high, version_id=None),
    ]
    produce_events(kafka_bootstrap, config.input_topic, events)
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
    assert outcomes(running.decisions) == ["accepted", "duplicate", "accepted"]
    outbox = [OUTBOX_RECORD.decode(r.value) for r in read_all(kafka_bootstrap, config.outbox_topic)]
    assert [r.event.version_id for r in outbox] == [None, None]
    assert outbox[1].previous_position == long_low


@pytest.mark.parametrize("point", [FaultPoint.AFTER_STATE_UPDATE, FaultPoint.BEFORE_COMMIT])
def test_failure_before_commit_leaves_nothing_and_retry_is_accepted_once(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, point: FaultPoint
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path)
    produce_events(kafka_bootstrap, config.input_topic, [s3_event("f")])
    with worker_thread(config, faults=RaiseAt(point), expect_errors=True) as running:
        wait_for(lambda: bool(running.errors), 60, "the injected failure")
    assert isinstance(running.errors[0], InjectedFault)
    assert running.decisions == []

    # Nothing committed: no outbox record, no changelog record, no RocksDB watermark.
    assert read_all(kafka_bootstrap, config.outbox_topic) == []
    assert read_all(kafka_bootstrap, config.changelog_topic) == []
    for partition in range(3):
        path = StateDirectory(config.state_dir, config.input_topic).partition_path(partition)
        if path.exists():
            store = StateDirectory(config.state_dir, config.input_topic).open(partition)
            try:
                assert list(store.items()) == []
            finally:
                store.close()

    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the retry to be committed")
    assert outcomes(running.decisions) == ["accepted"]
    assert len(read_all(kafka_bootstrap, config.outbox_topic)) == 1


def test_failure_after_commit_is_caught_up_by_restore(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """Kafka committed but RocksDB was not written: the restart restores from the changelog."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path)
    produce_events(kafka_bootstrap, config.input_topic, [s3_event("f")])
    with worker_thread(
        config, faults=RaiseAt(FaultPoint.AFTER_COMMIT), expect_errors=True
    ) as running:
        wait_for(lambda: bool(running.errors), 60, "the injected failure")
    produce_events(kafka_bootstrap, config.input_topic, [s3_event("f"), s3_event("f1")])
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the restarted worker")
    assert outcomes(running.decisions) == ["duplicate", "accepted"]
    assert len(read_all(kafka_bootstrap, config.outbox_topic)) == 2


# The explanation is the error; the client's own warning about the transaction it
# could not abort on close must not reach stderr as well.
@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_a_fenced_worker_stops_with_a_clear_error_and_commits_nothing_more(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path)
    produce_events(kafka_bootstrap, config.input_topic, [s3_event("1")])
    with worker_thread(config, expect_errors=True) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
        # Another process claims the same transactional.id: the worker is now a zombie.
        usurper = Producer(
            {"bootstrap.servers": kafka_bootstrap, "transactional.id": config.transactional_id}
        )
        usurper.init_transactions(30)
        produce_events(kafka_bootstrap, config.input_topic, [s3_event("2")])
        wait_for(lambda: bool(running.errors), 60, "the worker to notice it was fenced")
    error = running.errors[0]
    assert isinstance(error, WorkerFatalError)
    assert "fenced" in str(error) and config.transactional_id in str(error)
    assert "--instance-id" in str(error)
    outbox = [OUTBOX_RECORD.decode(r.value) for r in read_all(kafka_bootstrap, config.outbox_topic)]
    assert [r.event.position for r in outbox] == ["1"]


def test_the_compiled_engine_decides_and_writes_what_the_python_step_does(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """The same input through a worker of each engine: the same outbox, byte for byte, and
    every record decided by the compiled core when it is the engine (a worker that fell
    back to Python for everything would pass the first check, not the second)."""
    events = [
        s3_event(sequencer, key=f"object-{index % 7}")
        for index, sequencer in enumerate(["1", "3", "2", "3", "a", "0f", "10", "b", "c"] * 9)
    ]
    outboxes, compiled = {}, {}
    for engine in ("python", "compiled"):
        name = f"{unique_name}-{engine}"
        config = make_config(kafka_bootstrap, name, tmp_path / engine, engine=engine)
        produce_events(kafka_bootstrap, config.input_topic, events)
        with worker_thread(config) as running:
            wait_for(caught_up(kafka_bootstrap, config), 60, f"the {engine} worker to catch up")
        records = read_all(kafka_bootstrap, config.outbox_topic)
        outboxes[engine] = [(r.partition, r.key, r.value) for r in records]  # offsets: markers
        compiled[engine] = (running.worker.compiled_records, running.worker.committed_records)
    assert outboxes["compiled"] == outboxes["python"]
    assert len(outboxes["python"]) > 7  # accepted events of each object, more than once
    assert compiled == {"python": (0, len(events)), "compiled": (len(events), len(events))}
