"""Damaged, foreign and unusable local state: detected, moved aside, rebuilt (or one error line).

The store tests use a real RocksDB; the worker tests a real broker. Damage is made
deterministic: enough watermarks that closing the store leaves one SST file of many
data blocks, then bytes flipped in its middle (found by the read of that block),
the file truncated, the MANIFEST emptied or CURRENT deleted (found by the open).
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import TopicCollection
from confluent_kafka.admin import AdminClient

from seqgate.schemas.codec import WATERMARK
from seqgate.streams.runtime.topics import create_topics, pipeline_topics
from seqgate.streams.state.recovery import (
    MAX_REBUILDS,
    Rebuild,
    StateRecoveryError,
    open_checked,
    restore_checked,
)
from seqgate.streams.state.restore import ChangelogBehind
from seqgate.streams.state.store import (
    PartitionStore,
    StateDamaged,
    StateDirectory,
    StateUnavailable,
    StoreIdentity,
    watermark_key,
)
from seqgate.streams.worker.processor import Worker, WorkerConfig
from tests.support.kafka_helpers import (
    produce_events,
    read_all,
    wait_for,
)
from tests.support.state_helpers import (
    OBJECTS,
    TOPIC,
    mark,
    partition_path,
    processed_then_stopped,
    rebuild_warnings,
    rebuilds_counted,
    redelivered_and_one_new,
    run_until_caught_up,
    s3_event,
)

WATERMARKS = 20_000  # ~360 KB of SST: dozens of 4 KiB data blocks


def identity_of(partition: int = 0, topic_id: str = "id-A") -> StoreIdentity:
    return StoreIdentity("app", TOPIC, partition, "app.changelog", partition, topic_id)


def filled_store(directory: StateDirectory, identity: StoreIdentity) -> Path:
    """A closed store with WATERMARKS watermarks, all in SST files (closing flushes)."""
    store = directory.open(identity.partition)
    store.record_identity(identity)
    changes: dict[bytes, bytes | None] = {
        watermark_key(f"s3://b/{i:06d}"): WATERMARK.encode(mark(i)) for i in range(WATERMARKS)
    }
    store.apply(changes, WATERMARKS)
    store.close()
    path = directory.partition_path(identity.partition)
    assert sst_files(path), f"no SST file in {path}"
    return path


def sst_files(path: Path) -> list[Path]:
    return sorted(path.glob("*.sst"))


# ---- kinds of damage -------------------------------------------------------------------------


def flip_sst_bytes(path: Path) -> None:
    """Invert 16 bytes in the middle of the largest SST file: inside a data block."""
    sst = max(sst_files(path), key=lambda p: p.stat().st_size)
    data = bytearray(sst.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 16] = bytes(b ^ 0xFF for b in data[middle : middle + 16])
    sst.write_bytes(bytes(data))


def truncate_sst(path: Path) -> None:
    sst = max(sst_files(path), key=lambda p: p.stat().st_size)
    os.truncate(sst, sst.stat().st_size // 2)


def empty_manifest(path: Path) -> None:
    (manifest,) = path.glob("MANIFEST-*")
    manifest.write_bytes(b"")


def delete_current(path: Path) -> None:
    (path / "CURRENT").unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "flipped-sst-bytes": flip_sst_bytes,
    "truncated-sst": truncate_sst,
    "empty-manifest": empty_manifest,
    "missing-current": delete_current,
}
FOUND_AT_OPEN = ["truncated-sst", "empty-manifest", "missing-current"]


def read_everything(store: PartitionStore) -> int:
    return sum(1 for _ in store.watermarks())


# ---- the store -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", FOUND_AT_OPEN)
def test_damage_found_by_the_open_is_a_typed_error(tmp_path: Path, kind: str) -> None:
    directory = StateDirectory(tmp_path, TOPIC)
    path = filled_store(directory, identity_of())
    DAMAGE[kind](path)
    with pytest.raises(StateDamaged) as raised:
        directory.open(0)
    assert raised.value.partition == 0 and raised.value.path == path
    assert "\n" not in str(raised.value)


def test_flipped_bytes_fail_the_read_of_their_block(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, TOPIC)
    path = filled_store(directory, identity_of())
    flip_sst_bytes(path)
    store = directory.open(0)  # the open reads no data block
    try:
        with pytest.raises(StateDamaged, match="checksum mismatch"):
            for i in range(WATERMARKS):
                store.watermark(f"s3://b/{i:06d}")
        with pytest.raises(StateDamaged, match="checksum mismatch"):
            read_everything(store)
    finally:
        store.close()


@pytest.mark.parametrize("kind", sorted(DAMAGE))
def test_a_damaged_store_is_moved_aside_and_rebuilt(tmp_path: Path, kind: str) -> None:
    directory = StateDirectory(tmp_path, TOPIC)
    path = filled_store(directory, identity_of())
    DAMAGE[kind](path)
    rebuilds: list[Rebuild] = []
    asked: list[int | None] = []

    def restore(store: PartitionStore, at_least: int | None) -> int:
        asked.append(at_least)
        return read_everything(store)  # what deciding records would read

    store, restored = restore_checked(directory, identity_of(), restore, rebuilds.append)
    try:
        assert restored == 0 and store.identity() == identity_of()
    finally:
        store.close()
    (rebuild,) = rebuilds
    assert rebuild.reason == "damaged" and rebuild.path == path
    assert rebuild.moved_to is not None and rebuild.moved_to.name.startswith("0.damaged-")
    assert rebuild.moved_to.parent == path.parent and any(rebuild.moved_to.iterdir())
    assert str(path) in rebuild.why and str(rebuild.moved_to) in rebuild.describe()
    if kind == "flipped-sst-bytes":
        # Found by the read, after the open had read the store's offset: the rebuild
        # must restore at least that far.
        assert asked == [None, WATERMARKS]


def test_a_store_copied_from_another_partition_is_moved_aside(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, TOPIC)
    filled_store(directory, identity_of(5))
    shutil.copytree(directory.partition_path(5), directory.partition_path(4))
    store, rebuild = open_checked(directory, identity_of(4))
    try:
        assert read_everything(store) == 0
    finally:
        store.close()
    assert rebuild is not None and rebuild.reason == "foreign"
    assert f"mirrors partition 5 of topic {TOPIC}, not partition 4" in rebuild.why
    assert rebuild.moved_to is not None and rebuild.moved_to.name.startswith("4.foreign-")


def test_a_store_of_a_recreated_changelog_is_moved_aside(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, TOPIC)
    filled_store(directory, identity_of(0, "id-A"))
    store, rebuild = open_checked(directory, identity_of(0, "id-B"))
    store.close()
    assert rebuild is not None and rebuild.reason == "recreated"
    assert "was recreated (topic id id-B, store at" in rebuild.why
    assert "recorded id-A" in rebuild.why


def test_a_matching_store_is_kept(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, TOPIC)
    filled_store(directory, identity_of())
    store, rebuild = open_checked(directory, identity_of())
    try:
        assert rebuild is None and read_everything(store) == WATERMARKS
    finally:
        store.close()


def test_a_store_without_identity_is_rebuilt_once_and_deleted(tmp_path: Path) -> None:
    """Written before stores recorded their identity: nothing tells whose it is."""
    directory = StateDirectory(tmp_path, TOPIC)
    legacy = directory.open(0)
    legacy.apply({watermark_key("s3://b/k"): WATERMARK.encode(mark(1))}, 1)
    legacy.close()
    store, rebuild = open_checked(directory, identity_of())
    store.close()
    assert rebuild is not None and rebuild.reason == "unrecorded" and rebuild.moved_to is None
    assert sorted(p.name for p in tmp_path.joinpath(TOPIC).iterdir()) == ["0"]
    # Now recorded: the next open keeps it.
    store, rebuild = open_checked(directory, identity_of())
    store.close()
    assert rebuild is None


def test_a_store_ahead_of_its_changelog_is_rebuilt(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, TOPIC)
    filled_store(directory, identity_of())
    rebuilds: list[Rebuild] = []

    def restore(store: PartitionStore, at_least: int | None) -> int:
        offset = store.changelog_next_offset()
        if offset is not None and offset > 100:
            raise ChangelogBehind(0, store, "app.changelog", offset, 100, 0.0)
        return 0

    store, _ = restore_checked(directory, identity_of(), restore, rebuilds.append)
    store.close()
    assert [r.reason for r in rebuilds] == ["ahead"]
    assert f"up to {WATERMARKS} but changelog app.changelog ends at 100" in rebuilds[0].why


def test_rebuilds_in_a_row_are_bounded(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, TOPIC)
    rebuilds: list[Rebuild] = []

    def restore(store: PartitionStore, at_least: int | None) -> int:
        raise StateDamaged(0, store.path, "IO error: the disk is failing")

    with pytest.raises(StateRecoveryError, match="rebuilt 3 times in a row"):
        restore_checked(directory, identity_of(), restore, rebuilds.append)
    assert len(rebuilds) == MAX_REBUILDS + 1


def test_a_locked_store_is_unavailable_not_damaged(tmp_path: Path) -> None:
    directory = StateDirectory(tmp_path, TOPIC)
    first = directory.open(0)
    try:
        with pytest.raises(StateUnavailable, match="LOCK"):
            open_checked(directory, identity_of())
    finally:
        first.close()
    assert sorted(p.name for p in tmp_path.joinpath(TOPIC).iterdir()) == ["0"]


# ---- the worker, against the broker ----------------------------------------------------------


@pytest.mark.kafka
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
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    return str(admin.describe_topics(TopicCollection([topic]))[topic].result(30).topic_id)


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
