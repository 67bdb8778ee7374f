"""Outbox records for the dispatcher's tests, the race of dispatchers' checks and its command."""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

from seqgate.schemas.identity import event_identity
from seqgate.schemas.ordering import NUMERIC_SEQUENCER_ORDER
from seqgate.schemas.records import ObjectEvent, OutboxRecord
from seqgate.streams.dispatch.destinations import Item
from seqgate.streams.dispatch.keys import version_key
from seqgate.streams.rules.policy import Policy
from tests.support.paths import REPO

NUMERIC = Policy.build("numeric")


def event(
    bucket: str, key: str, position: str | None, *, source: str = "s3", event_id: str = ""
) -> ObjectEvent:
    return ObjectEvent(
        id=event_id or f"{bucket}/{key}@{position}",
        source=source,
        bucket=bucket,
        key=key,
        kind="created",
        event_name="ObjectCreated:Put",
        position=position,
        version_id=None,
        size=10,
        etag=None,
        event_time=None,
        origin="test",
    )


def item(record: OutboxRecord, policy: Policy = NUMERIC) -> Item:
    e = record.event
    return Item(event_identity(e.source, e.bucket, e.key), version_key(record, policy), record)


def sqlite_rows(path: Path, table: str = "objects") -> dict[str, tuple[str, str, str]]:
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute(f"SELECT identity, position, position_key, event_id FROM {table}")
        return {identity: (pos, key, eid) for identity, pos, key, eid in rows}


# ---- the atomic comparison: two dispatchers racing ---------------------------------------------


def race_records(identities: int, versions: int, seed: int) -> list[OutboxRecord]:
    """`versions` writes of each identity, positions in numeric order spelled with random
    leading zeros (so a string comparison of the positions would be wrong)."""
    rng = random.Random(seed)
    records = []
    for i in range(identities):
        for v in range(1, versions + 1):
            position = "0" * rng.randint(0, 3) + format(v * 7, "X" if v % 2 else "x")
            records.append(OutboxRecord(event(f"b{i % 3}", f"k{i}", position), None, 0, v))
    return records


def expected_newest(records: list[OutboxRecord]) -> dict[str, tuple[str, str]]:
    newest: dict[str, OutboxRecord] = {}
    for record in records:
        identity = item(record).identity
        held = newest.get(identity)
        position = record.event.position
        assert position is not None
        if held is None or NUMERIC_SEQUENCER_ORDER.compare(position, held.event.position or "") > 0:
            newest[identity] = record
    return {
        identity: (record.event.id, version_key(record, NUMERIC))
        for identity, record in newest.items()
    }


def check_newest_won(rows: dict[str, tuple[str, str, str]]) -> None:
    expected = expected_newest(race_records(identities=24, versions=20, seed=7))
    assert {identity: (eid, key) for identity, (_, key, eid) in rows.items()} == expected


def dispatch_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "seqgate.cli", "dispatch", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
    )
