"""Damaged, foreign and unusable local state: detected, moved aside, rebuilt (or one error line).

The store tests use a real RocksDB; the worker tests a real broker. Damage is made
deterministic: enough watermarks that closing the store leaves one SST file of many
data blocks, then bytes flipped in its middle (found by the read of that block),
the file truncated, the MANIFEST emptied or CURRENT deleted (found by the open).
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient
from seqgate_devtools.samples import s3_notification, s3_record, to_bytes

from seqgate.connectors.parsers.normalize import normalize
from seqgate.runtime.topics import create_topics, pipeline_topics
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.errors import StateDamaged
from seqgate.streams.state.store import StateDirectory
from seqgate.streams.worker.processor import Worker, WorkerConfig, WorkerFatalError
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    produce_events,
    read_all,
    run_until_caught_up,
    wait_for,
    worker_thread,
)
from tests.support.state_damage import DAMAGE, fill, sst_files
from tests.support.state_damage import small_disk as small_disk
from tests.support.tier import sized

# ---- the worker, against the broker ----------------------------------------------------------

# Enough watermarks for a store of many SST data blocks; the soak tier damages a store ten
# times larger (tests/support/tier.py).
OBJECTS = sized(fast=3_000, soak=30_000)


def s3_event(key: str, sequencer: str = "10") -> ObjectEvent:
    notification = s3_notification(s3_record(key=key, sequencer=sequencer))
    result = normalize(to_bytes(notification), "test")
    assert not result.rejections, result.rejections
    return result.events[0]


def objects(count: int, prefix: str = "obj") -> list[ObjectEvent]:
    return [s3_event(f"{prefix}-{i:05d}") for i in range(count)]


def partition_path(config: WorkerConfig, partition: int) -> Path:
    return StateDirectory(config.state_dir, config.input_topic).partition_path(partition)


def rebuilds_counted(worker: Worker, reason: str, partition: int = 0) -> float | None:
    return worker.metrics.registry.get_sample_value(
        "seqgate_worker_state_rebuilds_total", {"partition": str(partition), "reason": reason}
    )


def rebuild_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and "rebuilt from the changelog" in r.getMessage()
    ]


def processed_then_stopped(
    kafka_bootstrap: str,
    unique_name: str,
    tmp_path: Path,
    *,
    partitions: int = 1,
    kafka_timeout_s: float = 30.0,
) -> WorkerConfig:
    """A pipeline whose worker has accepted OBJECTS events and stopped."""
    config = make_config(
        kafka_bootstrap,
        unique_name,
        tmp_path,
        partitions=partitions,
        kafka_timeout_s=kafka_timeout_s,
    )
    produce_events(kafka_bootstrap, config.input_topic, objects(OBJECTS))
    first = run_until_caught_up(config, "the first worker to accept every object")
    assert first == ["accepted"] * OBJECTS
    return config


def redelivered_and_one_new(kafka_bootstrap: str, config: WorkerConfig) -> None:
    produce_events(kafka_bootstrap, config.input_topic, [*objects(OBJECTS), s3_event("new")])


@pytest.mark.kafka
@pytest.mark.tier("fast", "soak")
@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_worker_rebuilds_damaged_state_from_the_changelog(
    kafka_bootstrap: str,
    unique_name: str,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    kind: str,
) -> None:
    config = processed_then_stopped(kafka_bootstrap, unique_name, tmp_path)
    path = partition_path(config, 0)
    assert sst_files(path), f"the worker's store at {path} has no SST file"
    DAMAGE[kind](path)

    redelivered_and_one_new(kafka_bootstrap, config)
    caplog.set_level(logging.INFO)
    workers: list[Worker] = []
    second = run_until_caught_up(config, "the restarted worker over damaged state", workers)
    # Every redelivery recognized: the rebuilt state is the committed one.
    assert second.count("accepted") == 1 and len(second) == OBJECTS + 1, set(second)
    assert len(read_all(kafka_bootstrap, config.outbox_topic)) == OBJECTS + 1
    (warning,) = rebuild_warnings(caplog)
    assert warning.reason == "damaged" and warning.partition == 0  # type: ignore[attr-defined]
    moved = Path(warning.moved_to)  # type: ignore[attr-defined]
    assert moved.parent == path.parent and moved.name.startswith("0.damaged-")
    assert str(moved) in warning.getMessage() and any(moved.iterdir())
    assert rebuilds_counted(workers[0], "damaged") == 1


@pytest.mark.kafka
def test_a_worker_rebuilds_a_store_copied_from_another_partition(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = processed_then_stopped(kafka_bootstrap, unique_name, tmp_path, partitions=2)
    shutil.rmtree(partition_path(config, 0))
    shutil.copytree(partition_path(config, 1), partition_path(config, 0))

    redelivered_and_one_new(kafka_bootstrap, config)
    caplog.set_level(logging.INFO)
    workers: list[Worker] = []
    second = run_until_caught_up(config, "the restarted worker over a copied store", workers)
    assert second.count("accepted") == 1 and len(second) == OBJECTS + 1, set(second)
    assert len(read_all(kafka_bootstrap, config.outbox_topic)) == OBJECTS + 1
    (warning,) = rebuild_warnings(caplog)
    assert f"mirrors partition 1 of topic {config.input_topic}, not partition 0" in (
        warning.getMessage()
    )
    assert warning.reason == "foreign"  # type: ignore[attr-defined]
    assert rebuilds_counted(workers[0], "foreign") == 1
    assert rebuilds_counted(workers[0], "foreign", partition=1) is None


def recreate_changelog(kafka_bootstrap: str, config: WorkerConfig, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    topic = config.changelog_topic
    admin.delete_topics([topic])[topic].result(30)
    (spec,) = [
        s
        for s in pipeline_topics(
            input_topic=config.input_topic,
            outbox_topic=config.outbox_topic,
            rejected_topic=config.rejected_topic,
            application_id=config.application_id,
            partitions=partitions,
        )
        if s.name == topic
    ]

    def recreated() -> bool:
        if topic in admin.list_topics(timeout=30).topics:
            return False  # the deletion is still under way
        create_topics(admin, [spec])
        return True

    wait_for(recreated, 60, f"{topic} to be deleted and created again")


def topic_id(kafka_bootstrap: str, topic: str) -> str:
    """The topic's id, once the broker describes it (a topic just created can still be
    unknown to the metadata the request reaches: CI saw UNKNOWN_TOPIC_OR_PART)."""
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    found: list[str] = []

    def described() -> bool:
        try:
            description = admin.describe_topics(TopicCollection([topic]))[topic].result(30)
        except KafkaException as error:
            if error.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
            return False
        found.append(str(description.topic_id))
        return True

    wait_for(described, 60, f"{topic} to be described")
    return found[0]


@pytest.mark.kafka
def test_a_worker_rebuilds_a_store_of_a_recreated_changelog(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = processed_then_stopped(kafka_bootstrap, unique_name, tmp_path)
    old_id = topic_id(kafka_bootstrap, config.changelog_topic)
    recreate_changelog(kafka_bootstrap, config, partitions=1)
    new_id = topic_id(kafka_bootstrap, config.changelog_topic)
    assert new_id != old_id

    produce_events(kafka_bootstrap, config.input_topic, [s3_event("new")])
    caplog.set_level(logging.INFO)
    assert run_until_caught_up(config, "the worker over a recreated changelog") == ["accepted"]
    (warning,) = rebuild_warnings(caplog)
    assert warning.reason == "recreated"  # type: ignore[attr-defined]
    assert f"(topic id {new_id}, store at {partition_path(config, 0)} recorded {old_id})" in (
        warning.getMessage()
    )
    store = StateDirectory(config.state_dir, config.input_topic).open(0)
    try:
        recorded = store.identity()
        assert recorded is not None and recorded.changelog_topic_id == new_id
        assert [identity for identity, _ in store.items()] == ["s3://example-input/new"]
    finally:
        store.close()


@pytest.mark.kafka
def test_a_worker_rebuilds_a_store_ahead_of_its_changelog(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A short Kafka timeout: the restore waits that long (at most 10 s) for the
    # changelog to reach the store's offset before calling it ahead.
    config = processed_then_stopped(kafka_bootstrap, unique_name, tmp_path, kafka_timeout_s=8.0)
    store = StateDirectory(config.state_dir, config.input_topic).open(0)
    try:
        offset = store.changelog_next_offset()
        assert offset is not None
        store.apply({}, offset + 1000)  # as if the changelog had lost its last 1000 offsets
    finally:
        store.close()

    redelivered_and_one_new(kafka_bootstrap, config)
    caplog.set_level(logging.INFO)
    second = run_until_caught_up(config, "the restarted worker over a store ahead")
    assert second.count("accepted") == 1 and len(second) == OBJECTS + 1, set(second)
    (warning,) = rebuild_warnings(caplog)
    assert warning.reason == "ahead"  # type: ignore[attr-defined]
    assert f"up to {offset + 1000} but changelog {config.changelog_topic} ends at" in (
        warning.getMessage()
    )


@pytest.mark.kafka
def test_a_full_disk_is_one_error_line_and_a_restart_recovers(
    kafka_bootstrap: str, unique_name: str, small_disk: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, small_disk, partitions=1)
    first = objects(100, "before")
    produce_events(kafka_bootstrap, config.input_topic, first)
    with worker_thread(config, expect_errors=True) as running:
        wait_for(caught_up(kafka_bootstrap, config), 120, "the worker to accept the first batch")
        filler = fill(small_disk)
        # One transaction's changes, far more than the page the store's log has left.
        produce_events(kafka_bootstrap, config.input_topic, objects(500, "after"))
        wait_for(lambda: bool(running.errors), 120, "the worker to stop on the full disk")
    error = running.errors[0]
    assert isinstance(error, WorkerFatalError), repr(error)
    message = str(error)
    assert "\n" not in message and "no space left on device" in message
    assert str(config.state_dir) in message and "--state-dir" in message
    assert caught_up(kafka_bootstrap, config)(), "the transaction was committed before the write"

    filler.unlink()
    produce_events(kafka_bootstrap, config.input_topic, [*first, s3_event("new")])
    again = run_until_caught_up(config, "the restarted worker, with space again")
    assert again == ["duplicate"] * len(first) + ["accepted"], set(again)
    assert len(read_all(kafka_bootstrap, config.outbox_topic)) == 100 + 500 + 1


@pytest.mark.kafka
def test_a_store_failing_after_the_commit_is_rebuilt_with_the_committed_transaction(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The RocksDB write after a Kafka commit fails as corrupt (injected: a real one is
    met by a read first): the rebuild must wait for that transaction in the changelog."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1)
    first = objects(50, "first")
    produce_events(kafka_bootstrap, config.input_topic, first)
    caplog.set_level(logging.INFO)
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 120, "the worker to accept the first batch")
        store = running.worker._stores.get(0)
        assert store is not None
        failures: list[int] = []

        def failing_apply(changes: Mapping[bytes, bytes | None], next_offset: int) -> None:
            failures.append(next_offset)
            raise StateDamaged(0, store.path, "Corruption: injected after the commit")

        store.apply = failing_apply  # type: ignore[method-assign,assignment]
        produce_events(kafka_bootstrap, config.input_topic, objects(50, "second"))
        wait_for(lambda: bool(failures), 60, "the write after the commit to fail")
        produce_events(kafka_bootstrap, config.input_topic, objects(50, "second"))
        wait_for(caught_up(kafka_bootstrap, config), 120, "the worker to decide the redeliveries")
    assert not running.errors, repr(running.errors[0])
    outcomes = [d.outcome.value for d in running.decisions]
    # Every committed transaction counted, and the redeliveries of the one whose
    # write failed are recognized: the rebuilt store has it.
    assert outcomes == ["accepted"] * 100 + ["duplicate"] * 50, outcomes
    (warning,) = rebuild_warnings(caplog)
    assert "Corruption: injected after the commit" in warning.getMessage()
    assert rebuilds_counted(running.worker, "damaged") == 1
    assert running.worker.aborts == 0  # nothing was open to abort
