"""The watermark table: one RocksDB database per input partition.

RocksDB holds only *committed* state. Changes of the open Kafka transaction
live in an in-memory overlay (`TransactionOverlay`) and reach RocksDB in one
atomic WriteBatch after `commit_transaction` succeeds, together with the
changelog offset they reflect. A crash before the commit leaves RocksDB
untouched; a crash after it leaves RocksDB behind the changelog, and the
restore on the next assignment catches up from the stored offset.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path

from rocksdict import Options, Rdict, WriteBatch, WriteOptions

from schemas.codec import WATERMARK
from schemas.records import Watermark

_WATERMARK_PREFIX = b"w:"
_CHANGELOG_OFFSET_KEY = b"m:changelog-next-offset"


class PartitionStore:
    """Committed watermarks of the objects of one input partition."""

    def __init__(self, path: Path) -> None:
        path.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = Rdict(str(path), options=Options(raw_mode=True))
        self._write_options = WriteOptions()

    def get(self, identity: str) -> Watermark | None:
        value = self._db.get(_WATERMARK_PREFIX + identity.encode("utf-8"))
        return None if value is None else WATERMARK.decode(value)

    def changelog_next_offset(self) -> int | None:
        """The first changelog offset not yet reflected here (None: nothing restored yet)."""
        value = self._db.get(_CHANGELOG_OFFSET_KEY)
        return None if value is None else int(value.decode("ascii"))

    def apply(self, changes: Mapping[str, bytes | None], changelog_next_offset: int) -> None:
        """Write encoded watermarks (None deletes) and the changelog offset atomically."""
        batch = WriteBatch(raw_mode=True)
        for identity, value in changes.items():
            key = _WATERMARK_PREFIX + identity.encode("utf-8")
            if value is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        batch.put(_CHANGELOG_OFFSET_KEY, str(changelog_next_offset).encode("ascii"))
        self._db.write(batch, self._write_options)

    def items(self) -> Iterator[tuple[str, Watermark]]:
        for key, value in self._db.items(from_key=_WATERMARK_PREFIX):
            assert isinstance(key, bytes) and isinstance(value, bytes)
            if not key.startswith(_WATERMARK_PREFIX):
                break
            yield key[len(_WATERMARK_PREFIX) :].decode("utf-8"), WATERMARK.decode(value)

    def close(self) -> None:
        self._db.close()


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
    """Watermark changes of the open transaction, per partition, in memory.

    Reads see the overlay first, then the committed store.
    """

    def __init__(self) -> None:
        self._changes: dict[int, dict[str, Watermark]] = {}

    def get(self, partition: int, identity: str) -> Watermark | None:
        return self._changes.get(partition, {}).get(identity)

    def put(self, partition: int, identity: str, watermark: Watermark) -> None:
        self._changes.setdefault(partition, {})[identity] = watermark

    def partitions(self) -> dict[int, dict[str, Watermark]]:
        return self._changes

    def clear(self) -> None:
        self._changes = {}

    def __len__(self) -> int:
        return sum(len(changes) for changes in self._changes.values())
