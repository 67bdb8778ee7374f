"""Damaged, foreign and unusable local state: detected, moved aside, rebuilt (or one error line).

The store tests use a real RocksDB (the worker against a real broker is in
tests/kafka/test_state_damage.py). Damage is made deterministic: enough watermarks that
closing the store leaves one SST file of many data blocks, then bytes flipped in its middle
(found by the read of that block), the file truncated, the MANIFEST emptied or CURRENT
deleted (found by the open).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from seqgate.schemas.codec import WATERMARK
from seqgate.schemas.records import Watermark
from seqgate.streams.errors import (
    ChangelogBehind,
    StateDamaged,
    StateRecoveryError,
    StateUnavailable,
)
from seqgate.streams.state.recovery import MAX_REBUILDS, Rebuild, open_checked, restore_checked
from seqgate.streams.state.store import PartitionStore, StateDirectory, StoreIdentity, watermark_key
from tests.support.state_damage import DAMAGE, fill, flip_sst_bytes, sst_files
from tests.support.state_damage import small_disk as small_disk

TOPIC = "object-events"
WATERMARKS = 20_000  # ~360 KB of SST: dozens of 4 KiB data blocks


def identity_of(partition: int = 0, topic_id: str = "id-A") -> StoreIdentity:
    return StoreIdentity("app", TOPIC, partition, "app.changelog", partition, topic_id)


def mark(i: int) -> Watermark:
    return Watermark(f"{i:016x}", f"event-{i}", 0, i)


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


def test_a_full_disk_is_unavailable_not_damaged_and_loses_nothing_applied(
    small_disk: Path,
) -> None:
    directory = StateDirectory(small_disk, TOPIC)
    store = directory.open(0)
    store.apply({watermark_key("s3://b/kept"): WATERMARK.encode(mark(1))}, 1)
    filler = fill(small_disk)
    big: dict[bytes, bytes | None] = {
        watermark_key(f"s3://b/{i:06d}"): WATERMARK.encode(mark(i)) for i in range(500)
    }
    with pytest.raises(StateUnavailable) as raised:
        store.apply(big, 2)
    assert raised.value.disk_full and raised.value.path == directory.partition_path(0)
    store.close()  # logged, not raised: the write-ahead log has what was applied
    filler.unlink()
    store = directory.open(0)
    try:
        assert store.watermark("s3://b/kept") == mark(1) and store.changelog_next_offset() == 1
    finally:
        store.close()
