"""The RocksDB watermark store and the in-memory transaction overlay."""

from __future__ import annotations

from pathlib import Path

from schemas.codec import WATERMARK
from schemas.records import Watermark
from streams.state_store import PartitionStore, StateDirectory, TransactionOverlay


def test_apply_is_atomic_with_the_changelog_offset_and_survives_reopening(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "p0")
    assert store.changelog_next_offset() is None
    first = Watermark("0a", "e1", 0, 4)
    store.apply({"s3://b/k": WATERMARK.encode(first)}, 8)
    store.close()

    reopened = PartitionStore(tmp_path / "p0")
    assert reopened.get("s3://b/k") == first
    assert reopened.changelog_next_offset() == 8
    reopened.apply({"s3://b/k": None}, 9)  # a tombstone deletes
    assert reopened.get("s3://b/k") is None
    assert list(reopened.items()) == []
    reopened.close()


def test_items_lists_only_watermarks(tmp_path: Path) -> None:
    store = StateDirectory(tmp_path, "object-events").open(3)
    marks = {f"s3://b/{i}": Watermark(f"{i:02x}", f"e{i}", 3, i) for i in range(5)}
    store.apply({k: WATERMARK.encode(v) for k, v in marks.items()}, 5)
    assert dict(store.items()) == marks
    store.close()
    assert (tmp_path / "object-events" / "3").is_dir()


def test_overlay_reads_its_own_writes_per_partition() -> None:
    overlay = TransactionOverlay()
    mark = Watermark("1", "e", 0, 0)
    overlay.put(0, "s3://b/k", mark)
    assert overlay.get(0, "s3://b/k") == mark
    assert overlay.get(1, "s3://b/k") is None
    assert len(overlay) == 1
    overlay.clear()
    assert overlay.get(0, "s3://b/k") is None
