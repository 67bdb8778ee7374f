"""The RocksDB state store and the in-memory transaction overlay."""

from __future__ import annotations

from pathlib import Path

from seqgate.schemas.codec import SEEN_EVENT, WATERMARK
from seqgate.schemas.records import SeenEvent, Watermark
from seqgate.streams.state.keys import STREAM_TIME_KEY, encode_stream_time, seen_key, watermark_key
from seqgate.streams.state.store import PartitionStore, StateDirectory, TransactionOverlay
from seqgate.streams.worker.pending import OverlayView


def test_apply_is_atomic_with_the_changelog_offset_and_survives_reopening(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "p0")
    assert store.changelog_next_offset() is None
    first = Watermark("0a", "e1", 0, 4)
    store.apply({watermark_key("s3://b/k"): WATERMARK.encode(first)}, 8)
    store.close()

    reopened = PartitionStore(tmp_path / "p0")
    assert reopened.watermark("s3://b/k") == first
    assert reopened.changelog_next_offset() == 8
    reopened.apply({watermark_key("s3://b/k"): None}, 9)  # a tombstone deletes
    assert reopened.watermark("s3://b/k") is None
    assert list(reopened.watermarks()) == []
    reopened.close()


def test_watermarks_lists_only_object_watermarks(tmp_path: Path) -> None:
    store = StateDirectory(tmp_path, "object-events").open(3)
    marks = {f"s3://b/{i}": Watermark(f"{i:02x}", f"e{i}", 3, i) for i in range(5)}
    changes: dict[bytes, bytes | None] = {
        watermark_key(k): WATERMARK.encode(v) for k, v in marks.items()
    }
    changes[seen_key("evt")] = SEEN_EVENT.encode(SeenEvent("evt", "minio://b/k", 5, 3, 9))
    changes[STREAM_TIME_KEY] = encode_stream_time(5)
    store.apply(changes, 5)
    assert dict(store.watermarks()) == marks
    assert store.stream_time() == 5
    store.close()
    assert (tmp_path / "object-events" / "3").is_dir()


def test_seen_ids_are_indexed_by_record_time_for_purging(tmp_path: Path) -> None:
    store = PartitionStore(tmp_path / "p")
    entries = [SeenEvent(f"e{t}", "minio://b/k", t, 0, t) for t in (30, 10, 20)]
    store.apply({seen_key(e.event_id): SEEN_EVENT.encode(e) for e in entries}, 3)
    assert [s.event_id for s in store.seen_older_than(25, limit=10)] == ["e10", "e20"]
    assert [s.event_id for s in store.seen_older_than(100, limit=1)] == ["e10"]
    # Re-accepting an id moves it in the index; deleting it removes it.
    store.apply({seen_key("e10"): SEEN_EVENT.encode(SeenEvent("e10", "x", 40, 0, 4))}, 4)
    assert [s.event_id for s in store.seen_older_than(35, limit=10)] == ["e20", "e30"]
    store.apply({seen_key("e20"): None}, 5)
    assert [s.event_id for s in store.seen_older_than(100, limit=10)] == ["e30", "e10"]
    store.close()


def test_overlay_reads_its_own_writes_per_partition(tmp_path: Path) -> None:
    """What a record sees (seqgate.streams.worker.pending.OverlayView): the open transaction's
    changes of its partition first, None being a deletion, then committed state."""
    store = PartitionStore(tmp_path / "0")
    store.apply({b"s3://b/k": b"committed", b"gone": b"committed", b"kept": b"old"}, 1)
    overlay = TransactionOverlay()
    overlay.put(0, b"s3://b/k", b"v")
    overlay.put(0, b"gone", None)
    view, other = OverlayView(overlay, store, 0), OverlayView(overlay, store, 1)
    assert view.get(b"s3://b/k") == b"v"
    assert view.get(b"gone") is None
    assert view.get(b"kept") == b"old"
    assert other.get(b"s3://b/k") == b"committed"  # another partition's changes are not seen
    assert len(overlay) == 2
    overlay.clear()
    assert OverlayView(overlay, store, 0).get(b"s3://b/k") == b"committed"
    store.close()
