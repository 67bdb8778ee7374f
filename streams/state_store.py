"""The processor's state: one RocksDB database per input partition.

RocksDB holds only *committed* state: it mirrors the partition's changelog
(same keys, same values). Changes of the open Kafka transaction live in an
in-memory overlay (`TransactionOverlay`) and reach RocksDB in one atomic
WriteBatch after `commit_transaction` succeeds, together with the changelog
offset they reflect. A crash before the commit leaves RocksDB untouched; a
crash after it leaves RocksDB behind the changelog, and the restore on the
next assignment catches up from the stored offset.

Changelog keys (and so state keys):

* an object identity (`s3://bucket/key`) → its `Watermark` (ordered sources);
* NUL `seen` NUL <event id> → a `SeenEvent` (dedupe-only sources);
* NUL `stream-time` → the partition's highest record time of a dedupe-only
  event, as ASCII digits.

Identities never start with NUL, so the three never collide.
"""

from __future__ import annotations

import shutil
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path

from rocksdict import Options, Rdict, WriteBatch, WriteOptions

from schemas.codec import SEEN_EVENT, WATERMARK
from schemas.records import SeenEvent, Watermark

SEEN_PREFIX = b"\x00seen\x00"
STREAM_TIME_KEY = b"\x00stream-time"

_MIRROR = b"c:"  # changelog key -> value
_EXPIRY = b"x:"  # record time (8 bytes, big-endian) + event id -> b"" (purge index)
_CHANGELOG_OFFSET_KEY = b"m:changelog-next-offset"
_TIME = struct.Struct(">q")


def watermark_key(identity: str) -> bytes:
    return identity.encode("utf-8")


def seen_key(event_id: str) -> bytes:
    return SEEN_PREFIX + event_id.encode("utf-8")


def encode_stream_time(value: int) -> bytes:
    return str(value).encode("ascii")


def decode_stream_time(value: bytes) -> int:
    return int(value.decode("ascii"))


# One store per input partition, many per worker: RocksDB's default memtable
# (64 MiB, up to two) per store made a worker's RSS grow with its partition count
# (627 MiB for 6 stores in `seqgate bench`), not with its data.
_WRITE_BUFFER_BYTES = 8 * 1024 * 1024


def _store_options() -> Options:
    options = Options(raw_mode=True)
    options.set_write_buffer_size(_WRITE_BUFFER_BYTES)
    options.set_max_write_buffer_number(2)
    return options


class PartitionStore:
    """Committed state of one input partition."""

    def __init__(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = Rdict(str(path), options=_store_options())
        self._write_options = WriteOptions()

    def get(self, key: bytes) -> bytes | None:
        value = self._db.get(_MIRROR + key)
        assert value is None or isinstance(value, bytes)
        return value

    def watermark(self, identity: str) -> Watermark | None:
        value = self.get(watermark_key(identity))
        return None if value is None else WATERMARK.decode(value)

    def seen(self, event_id: str) -> SeenEvent | None:
        value = self.get(seen_key(event_id))
        return None if value is None else SEEN_EVENT.decode(value)

    def stream_time(self) -> int | None:
        value = self.get(STREAM_TIME_KEY)
        return None if value is None else decode_stream_time(value)

    def changelog_next_offset(self) -> int | None:
        """The first changelog offset not yet reflected here (None: nothing restored yet)."""
        value = self._db.get(_CHANGELOG_OFFSET_KEY)
        assert value is None or isinstance(value, bytes)
        return None if value is None else int(value.decode("ascii"))

    def apply(self, changes: Mapping[bytes, bytes | None], changelog_next_offset: int) -> None:
        """Write changelog-keyed values (None deletes) and the changelog offset atomically."""
        batch = WriteBatch(raw_mode=True)
        for key, value in changes.items():
            if key.startswith(SEEN_PREFIX):
                self._reindex(batch, key, value)
            if value is None:
                batch.delete(_MIRROR + key)
            else:
                batch.put(_MIRROR + key, value)
        batch.put(_CHANGELOG_OFFSET_KEY, str(changelog_next_offset).encode("ascii"))
        self._db.write(batch, self._write_options)

    def _reindex(self, batch: WriteBatch, key: bytes, value: bytes | None) -> None:
        old = self.get(key)
        if old is not None:
            batch.delete(_expiry_key(SEEN_EVENT.decode(old)))
        if value is not None:
            batch.put(_expiry_key(SEEN_EVENT.decode(value)), b"")

    def seen_older_than(self, record_time: int, limit: int) -> list[SeenEvent]:
        """Up to `limit` seen ids with a record time below `record_time`, oldest first."""
        found: list[SeenEvent] = []
        for key in self._db.keys(from_key=_EXPIRY):
            assert isinstance(key, bytes)
            if not key.startswith(_EXPIRY) or len(found) >= limit:
                break
            (time,) = _TIME.unpack_from(key, len(_EXPIRY))
            if time >= record_time:
                break
            seen = self.seen(key[len(_EXPIRY) + _TIME.size :].decode("utf-8"))
            if seen is not None:
                found.append(seen)
        return found

    def watermarks(self) -> Iterator[tuple[str, Watermark]]:
        for key, value in self._db.items(from_key=_MIRROR):
            assert isinstance(key, bytes) and isinstance(value, bytes)
            if not key.startswith(_MIRROR):
                break
            name = key[len(_MIRROR) :]
            if not name.startswith(b"\x00"):
                yield name.decode("utf-8"), WATERMARK.decode(value)

    def items(self) -> Iterator[tuple[str, Watermark]]:
        """The committed watermarks (ordered sources), by identity."""
        return self.watermarks()

    def close(self) -> None:
        self._db.close()


def _expiry_key(seen: SeenEvent) -> bytes:
    return _EXPIRY + _TIME.pack(seen.record_time) + seen.event_id.encode("utf-8")


class StateDirectory:
    """Layout of a worker's local state: `<root>/<input topic>/<partition>/`."""

    def __init__(self, root: Path, topic: str) -> None:
        self.root = root
        self.topic = topic

    def partition_path(self, partition: int) -> Path:
        return self.root / self.topic / str(partition)

    def open(self, partition: int) -> PartitionStore:
        return PartitionStore(self.partition_path(partition))

    def wipe(self) -> None:
        shutil.rmtree(self.root / self.topic, ignore_errors=True)


class TransactionOverlay:
    """State changes of the open transaction, per partition, as changelog key → value.

    Reads go through `streams.pending.OverlayView`: the overlay first (None is a
    deletion), then the committed store.
    """

    def __init__(self) -> None:
        self._changes: dict[int, dict[bytes, bytes | None]] = {}

    def put(self, partition: int, key: bytes, value: bytes | None) -> None:
        self._changes.setdefault(partition, {})[key] = value

    def changes_of(self, partition: int) -> dict[bytes, bytes | None]:
        """The partition's changes, as a live dict (writes to it are changes)."""
        return self._changes.setdefault(partition, {})

    def partitions(self) -> dict[int, dict[bytes, bytes | None]]:
        return self._changes

    def clear(self) -> None:
        self._changes = {}

    def __len__(self) -> int:
        return sum(len(changes) for changes in self._changes.values())
