"""The processor's state: one RocksDB database per input partition.

RocksDB holds only *committed* state: it mirrors the partition's changelog
(same keys, same values). Changes of the open Kafka transaction live in an
in-memory overlay (`TransactionOverlay`) and reach RocksDB in one atomic
WriteBatch after `commit_transaction` succeeds, together with the changelog
offset they reflect. A crash before the commit leaves RocksDB untouched; a
crash after it leaves RocksDB behind the changelog, and the restore on the
next assignment catches up from the stored offset.

Changelog keys, and so state keys, are laid out in `seqgate.streams.state.keys`.

Next to them each store records its identity (`StoreIdentity`: which
application, input partition and changelog it mirrors), and every RocksDB
failure surfaces as a `StateError`: `StateDamaged` when the files are corrupt
(the cure is a rebuild from the changelog, `seqgate.streams.state.recovery`),
`StateUnavailable` when the directory cannot be used at all (disk full,
locked, not writable: a rebuild would fail the same way).
"""

from __future__ import annotations

import json
import logging
import shutil
import struct
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TypeVar

from rocksdict import Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from seqgate.schemas.codec import SEEN_EVENT, WATERMARK
from seqgate.schemas.records import SeenEvent, Watermark
from seqgate.streams.errors import NO_SPACE, StateDamaged, StateError, StateUnavailable
from seqgate.streams.state.keys import (
    SEEN_PREFIX,
    STREAM_TIME_KEY,
    decode_stream_time,
    seen_key,
    watermark_key,
)

_MIRROR = b"c:"  # changelog key -> value
_EXPIRY = b"x:"  # record time (8 bytes, big-endian) + event id -> b"" (purge index)
_CHANGELOG_OFFSET_KEY = b"m:changelog-next-offset"
_IDENTITY_KEY = b"m:identity"
_TIME = struct.Struct(">q")

log = logging.getLogger(__name__)
_T = TypeVar("_T")


# One store per input partition, many per worker: RocksDB's default memtable
# (64 MiB, up to two) per store made a worker's RSS grow with its partition count
# (627 MiB for 6 stores in `seqgate bench`), not with its data.
_WRITE_BUFFER_BYTES = 8 * 1024 * 1024


def _store_options() -> Options:
    options = Options(raw_mode=True)
    options.set_write_buffer_size(_WRITE_BUFFER_BYTES)
    options.set_max_write_buffer_number(2)
    # Both are RocksDB's defaults, stated because the rebuild of a damaged store
    # relies on them: a corrupt MANIFEST, a missing or truncated SST file fail the
    # open, and a flipped byte in a block fails the read of that block, instead
    # of serving garbage.
    options.set_paranoid_checks(True)
    return options


def _read_options() -> ReadOptions:
    options = ReadOptions()
    options.set_verify_checksums(True)
    return options


@dataclass(frozen=True, slots=True)
class StoreIdentity:
    """What a store mirrors. Recorded in it, so that a directory copied to the wrong
    place or outliving its changelog topic is recognized instead of used."""

    application_id: str
    input_topic: str
    partition: int
    changelog_topic: str
    changelog_partition: int
    # Changes when the changelog topic is deleted and created again under the same name.
    changelog_topic_id: str

    def encode(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode("utf-8")

    @classmethod
    def decode(cls, raw: bytes) -> StoreIdentity:
        fields = json.loads(raw.decode("utf-8"))
        return cls(
            application_id=str(fields["application_id"]),
            input_topic=str(fields["input_topic"]),
            partition=int(fields["partition"]),
            changelog_topic=str(fields["changelog_topic"]),
            changelog_partition=int(fields["changelog_partition"]),
            changelog_topic_id=str(fields["changelog_topic_id"]),
        )


# Failures of the directory, not of the files in it (RocksDB's status texts).
_UNAVAILABLE = (NO_SPACE, "/LOCK:", "Permission denied", "Read-only file system")


def _state_error(partition: int | None, path: Path, error: Exception) -> StateError:
    # rocksdict raises a bare Exception carrying RocksDB's status ("Corruption: ...",
    # "IO error: ..."): the text is all there is to tell the failures apart.
    cause = " ".join(str(error).split())
    if any(marker in cause for marker in _UNAVAILABLE):
        return StateUnavailable(partition, path, cause)
    return StateDamaged(partition, path, cause)


class PartitionStore:
    """Committed state of one input partition.

    Every RocksDB failure raises a `StateError` (from None: RocksDB's text is in it).
    """

    def __init__(self, path: Path, *, partition: int | None = None) -> None:
        self.path = path
        self.partition = partition
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as error:
            raise StateUnavailable(partition, path, f"{error.strerror}: {path}") from None
        if any(path.iterdir()) and not (path / "CURRENT").exists():
            # RocksDB would start an empty database over the old files (or fail on
            # the first leftover it trips on): either way, what was here is lost.
            raise StateDamaged(partition, path, "the CURRENT file is missing")
        self._db = self._call(lambda: Rdict(str(path), options=_store_options()))
        self._db.set_read_options(_read_options())
        self._write_options = WriteOptions()
        # The offset of the last successful apply (or read): a rebuild must reach it.
        self.known_next_offset: int | None = None

    def _call(self, operation: Callable[..., _T], *args: object) -> _T:
        try:
            return operation(*args)
        except Exception as error:  # rocksdict's errors are bare Exceptions
            failure = _state_error(self.partition, self.path, error)
        # Raised out here, without the original as context, and without `operation`:
        # whatever the traceback keeps alive (an iterator) keeps the database open
        # after close(), its LOCK taken, and the rebuild could not open a new one.
        del operation, args
        raise failure

    def get(self, key: bytes) -> bytes | None:
        try:  # inline, not _call: one read per input record
            value = self._db.get(_MIRROR + key)
        except Exception as error:
            raise _state_error(self.partition, self.path, error) from None
        assert value is None or isinstance(value, bytes)
        return value

    @property
    def raw_reader(self) -> tuple[Callable[[bytes], object], bytes]:
        """What `get` reads, for the compiled record step: RocksDB's own `get` and the key
        prefix of the changelog's mirror. A failure comes unwrapped from it: the caller
        hands the record to `get`, which words it."""
        return self._db.get, _MIRROR

    def identity(self) -> StoreIdentity | None:
        """What this store records it mirrors (None: nothing recorded)."""
        raw = self._call(lambda: self._db.get(_IDENTITY_KEY))
        if raw is None:
            return None
        assert isinstance(raw, bytes)
        try:
            return StoreIdentity.decode(raw)
        except (ValueError, KeyError, TypeError) as error:
            raise StateDamaged(
                self.partition, self.path, f"unreadable identity record ({error})"
            ) from None

    def record_identity(self, identity: StoreIdentity) -> None:
        self._call(lambda: self._db.put(_IDENTITY_KEY, identity.encode(), self._write_options))

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
        value = self._call(lambda: self._db.get(_CHANGELOG_OFFSET_KEY))
        assert value is None or isinstance(value, bytes)
        if value is None:
            return None
        try:
            offset = int(value.decode("ascii"))
        except ValueError:
            raise StateDamaged(
                self.partition, self.path, f"unreadable changelog offset {value!r}"
            ) from None
        self.known_next_offset = offset
        return offset

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
        self._call(lambda: self._db.write(batch, self._write_options))
        self.known_next_offset = changelog_next_offset

    def _reindex(self, batch: WriteBatch, key: bytes, value: bytes | None) -> None:
        old = self.get(key)
        if old is not None:
            batch.delete(_expiry_key(SEEN_EVENT.decode(old)))
        if value is not None:
            batch.put(_expiry_key(SEEN_EVENT.decode(value)), b"")

    def seen_older_than(self, record_time: int, limit: int) -> list[SeenEvent]:
        """Up to `limit` seen ids with a record time below `record_time`, oldest first."""
        found: list[SeenEvent] = []
        for key, _ in self._scan(_EXPIRY):
            if not key.startswith(_EXPIRY) or len(found) >= limit:
                break
            (time,) = _TIME.unpack_from(key, len(_EXPIRY))
            if time >= record_time:
                break
            seen = self.seen(key[len(_EXPIRY) + _TIME.size :].decode("utf-8"))
            if seen is not None:
                found.append(seen)
        return found

    def _scan(self, from_key: bytes) -> Iterator[tuple[bytes, bytes]]:
        """(key, value) from `from_key` on. A raw iterator, not Rdict.items(): that one
        ends quietly at a corrupt block; the iterator's status says why it ended."""
        iterator = self._call(self._db.iter)
        try:
            self._call(iterator.seek, from_key)
            while iterator.valid():
                key, value = iterator.key(), iterator.value()
                assert isinstance(key, bytes) and isinstance(value, bytes)
                yield key, value
                self._call(iterator.next)
            self._call(iterator.status)  # raises what ended the scan, if anything did
        finally:
            # A live iterator keeps the database open after close() (and its LOCK
            # taken); an error's traceback would keep this frame, and it, alive.
            del iterator

    def watermarks(self) -> Iterator[tuple[str, Watermark]]:
        for key, value in self._scan(_MIRROR):
            if not key.startswith(_MIRROR):
                break
            name = key[len(_MIRROR) :]
            if not name.startswith(b"\x00"):
                yield name.decode("utf-8"), WATERMARK.decode(value)

    def items(self) -> Iterator[tuple[str, Watermark]]:
        """The committed watermarks (ordered sources), by identity."""
        return self.watermarks()

    def close(self) -> None:
        """Close; a failure (the final flush on a full disk) is logged, never raised:
        every applied batch is in the write-ahead log, replayed on the next open,
        and the changelog holds it too. At info level: it needs nothing done, and
        after a full disk the one error line is what the operator must read."""
        try:
            self._db.close()
        except Exception as error:
            log.info(
                "state store not closed cleanly",
                extra={"partition": self.partition, "path": str(self.path), "error": str(error)},
            )


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
        return PartitionStore(self.partition_path(partition), partition=partition)

    def wipe(self) -> None:
        shutil.rmtree(self.root / self.topic, ignore_errors=True)


class TransactionOverlay:
    """State changes of the open transaction, per partition, as changelog key → value.

    Reads go through `seqgate.streams.worker.pending.OverlayView`: the overlay first (None is a
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
