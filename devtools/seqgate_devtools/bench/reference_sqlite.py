"""The reference policy on SQLite (docs/benchmark.md, "The stages"), from its rules.

One SQLite file with two tables: `watermark` (the greatest accepted sequencer
per bucket and key, stored as text) and `outbox` (the accepted events' JSON
payloads). Each event is one transaction with SQLite's default durability
(rollback journal, synchronous=FULL): take the write lock, read the
watermark, compare the sequencers as integers, and if the event is newer
update the watermark and append the payload before committing. Equal is a
duplicate, lower is stale; neither writes anything.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from seqgate.schemas.codec import OBJECT_EVENT

QUEUED, DUPLICATE, STALE = "queued", "duplicate", "stale"

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS watermark"
    " (bucket TEXT, key TEXT, seq TEXT, PRIMARY KEY (bucket, key))",
    "CREATE TABLE IF NOT EXISTS outbox"
    " (bucket TEXT, key TEXT, seq TEXT, payload TEXT, PRIMARY KEY (bucket, key, seq))",
)


@dataclass(frozen=True, slots=True)
class GuideEvent:
    """What the guide's parser returns for one record (the key decoded once)."""

    bucket: str
    key: str
    seq: str  # lowercase hex without leading zeros, as the guide's parser normalizes it
    version_id: str | None
    event: str

    @classmethod
    def of(
        cls, bucket: str, key: str, sequencer: str, version_id: str | None, event: str
    ) -> GuideEvent:
        return cls(bucket, key, format(int(sequencer, 16), "x"), version_id, event)

    def payload(self) -> str:
        return json.dumps(
            {
                "bucket": self.bucket,
                "key": self.key,
                "seq": self.seq,
                "version_id": self.version_id,
                "event": self.event,
            },
            sort_keys=True,
        )


def connect(path: Path) -> sqlite3.Connection:
    """Open (creating) the reference database with SQLite's default durability."""
    db = sqlite3.connect(path, timeout=10, isolation_level=None)
    for statement in _SCHEMA:
        db.execute(statement)
    return db


def record_event(db: sqlite3.Connection, event: GuideEvent) -> str:
    """Decide one event in its own transaction: queued, duplicate or stale."""
    db.execute("BEGIN IMMEDIATE")
    try:
        row = db.execute(
            "SELECT seq FROM watermark WHERE bucket = ? AND key = ?", (event.bucket, event.key)
        ).fetchone()
        if row is not None:
            current, incoming = int(row[0], 16), int(event.seq, 16)
            if incoming <= current:
                db.execute("COMMIT")
                return DUPLICATE if incoming == current else STALE
        db.execute(
            "INSERT INTO watermark VALUES (?, ?, ?)"
            " ON CONFLICT (bucket, key) DO UPDATE SET seq = excluded.seq",
            (event.bucket, event.key, event.seq),
        )
        db.execute(
            "INSERT INTO outbox VALUES (?, ?, ?, ?)",
            (event.bucket, event.key, event.seq, event.payload()),
        )
        db.execute("COMMIT")
        return QUEUED
    except BaseException:
        db.execute("ROLLBACK")
        raise


def guide_event_from_avro(value: bytes) -> GuideEvent:
    event = OBJECT_EVENT.decode(value)
    assert event.position is not None
    return GuideEvent.of(
        event.bucket, event.key, event.position, event.version_id, event.event_name
    )


@dataclass(frozen=True, slots=True)
class ReferenceResult:
    events: int
    seconds: float
    outcomes: dict[str, int]

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else 0.0


def run_reference(
    values: Iterable[bytes],
    path: Path,
    progress: Callable[[int], None] | None = None,
) -> ReferenceResult:
    """Decode and decide each pre-serialized event against a fresh database at `path`."""
    db = connect(path)
    outcomes: Counter[str] = Counter()
    count = 0
    try:
        started = time.perf_counter()
        for value in values:
            outcomes[record_event(db, guide_event_from_avro(value))] += 1
            count += 1
            if progress is not None and count % 5000 == 0:
                progress(count)
        seconds = time.perf_counter() - started
    finally:
        db.close()
    return ReferenceResult(count, seconds, dict(outcomes))
