"""`seqgate dispatch`: the outbox applied to SQLite, PostgreSQL and HTTP destinations.

PostgreSQL tests use ``$SEQGATE_TEST_POSTGRES_URL`` (``scripts/test.sh`` starts a server with
``scripts/postgres.sh`` and sets it). Without it they fail under CI (``$CI`` set) and are
skipped, with the reason, otherwise.
"""

from __future__ import annotations

import contextlib
import random
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.cli import cli
from seqgate.schemas.ordering import AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER
from seqgate.schemas.records import OutboxRecord
from seqgate.streams.dispatch.destinations import (
    Destination,
    HttpDestination,
    Item,
    Outcome,
    PostgresDestination,
    Result,
    SqliteDestination,
)
from seqgate.streams.dispatch.keys import position_key
from seqgate.streams.errors import TransientError
from seqgate.streams.rules.policy import Policy
from tests.support.dispatch import (
    check_newest_won,
    dispatch_cli,
    event,
    item,
    race_records,
    sqlite_rows,
)
from tests.support.http_endpoint import endpoint
from tests.support.paths import REPO
from tests.support.postgres import pg_rows
from tests.support.postgres import postgres_table as postgres_table
from tests.support.postgres import postgres_url as postgres_url

# ---- the atomic comparison: two dispatchers racing ---------------------------------------------


def race(make: Callable[[], Destination], dispatchers: int = 2) -> dict[Outcome, int]:
    """`dispatchers` threads, each with its own destination, apply every record in its own
    shuffled order and random batch sizes, starting together."""
    records = race_records(identities=24, versions=20, seed=7)
    barrier = threading.Barrier(dispatchers)
    outcomes: list[list[Result]] = [[] for _ in range(dispatchers)]
    errors: list[BaseException] = []

    def run(index: int) -> None:
        rng = random.Random(index)
        items = [item(record) for record in records]
        rng.shuffle(items)
        destination = make()
        try:
            barrier.wait(30)
            while items:
                size = rng.randint(1, 8)
                batch, items = items[:size], items[size:]
                while True:
                    try:
                        outcomes[index].extend(destination.apply(batch))
                        break
                    except TransientError as error:  # e.g. a lock timeout: try again
                        outcomes[index].extend(error.done)
                        batch = batch[len(error.done) :]
        except BaseException as error:
            errors.append(error)
        finally:
            destination.close()

    threads = [threading.Thread(target=run, args=(index,)) for index in range(dispatchers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    counts = {outcome: 0 for outcome in Outcome}
    for results in outcomes:
        assert len(results) == len(records)
        for result in results:
            counts[result.outcome] += 1
    return counts


def test_sqlite_racing_dispatchers_keep_the_newest(tmp_path: Path) -> None:
    path = tmp_path / "objects.db"
    counts = race(lambda: SqliteDestination(path), dispatchers=3)
    check_newest_won(sqlite_rows(path))
    assert counts[Outcome.APPLIED] >= 24  # at least the first write of each identity
    assert counts[Outcome.SUPERSEDED] > 0  # older records arrived after newer ones
    assert counts[Outcome.DUPLICATE] > 0  # the same record applied twice changed nothing
    assert counts[Outcome.REJECTED] == 0


def test_postgres_racing_dispatchers_keep_the_newest(
    postgres_url: str, postgres_table: str
) -> None:
    counts = race(lambda: PostgresDestination(postgres_url, table=postgres_table), dispatchers=3)
    check_newest_won(pg_rows(postgres_url, postgres_table))
    assert counts[Outcome.SUPERSEDED] > 0
    assert counts[Outcome.DUPLICATE] > 0


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_racing_processes_keep_the_newest(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """The same race between OS processes (separate connections, no shared Python state)."""
    if backend == "postgres":
        url = request.getfixturevalue("postgres_url")
        table = request.getfixturevalue("postgres_table")
        target = f"PostgresDestination({url!r}, table={table!r})"
    else:
        target = f"SqliteDestination(Path({str(tmp_path / 'p.db')!r}))"
    script = f"""
import random, sys
from pathlib import Path
from seqgate.streams.dispatch.destinations import (
    PostgresDestination, SqliteDestination, TransientError,
)
from tests.support.dispatch import item, race_records
items = [item(r) for r in race_records(identities=24, versions=20, seed=7)]
random.Random(int(sys.argv[1])).shuffle(items)
destination = {target}
sys.stdin.readline()  # start together
while items:
    batch, items = items[:5], items[5:]
    while batch:
        try:
            destination.apply(batch)
            batch = []
        except TransientError as error:
            batch = batch[len(error.done):]
destination.close()
"""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, str(seed)], cwd=REPO, stdin=subprocess.PIPE, text=True
        )
        for seed in (1, 2)
    ]
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.close()
    assert [proc.wait(120) for proc in procs] == [0, 0]
    if backend == "postgres":
        check_newest_won(pg_rows(url, table))
    else:
        check_newest_won(sqlite_rows(tmp_path / "p.db"))


@settings(max_examples=200, deadline=None)
@given(a=st.text("0123456789abcdefABCDEF", min_size=1), b=st.text("0123456789abcdef", min_size=1))
def test_sqlite_compares_keys_like_the_orders(a: str, b: str) -> None:
    with contextlib.closing(sqlite3.connect(":memory:")) as db:
        for order in (AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER):
            ka, kb = position_key(order, a), position_key(order, b)
            (greater,) = db.execute("SELECT ? > ?", (ka, kb)).fetchone()
            assert bool(greater) == (order.compare(a, b) > 0)


def test_postgres_compares_keys_bytewise(postgres_url: str, postgres_table: str) -> None:
    """`text COLLATE "C"`: digits before letters, a prefix first, whatever the locale."""
    destination = PostgresDestination(postgres_url, table=postgres_table)
    try:
        first = OutboxRecord(event("b", "k", "F"), None, 0, 1)
        second = OutboxRecord(event("b", "k", "10"), None, 0, 2)
        older = OutboxRecord(event("b", "k", "000e"), None, 0, 3)
        results = destination.apply([item(first)])
        results += destination.apply([item(second), item(older), item(second)])
        assert [r.outcome for r in results] == [
            Outcome.APPLIED,
            Outcome.APPLIED,
            Outcome.SUPERSEDED,
            Outcome.DUPLICATE,
        ]
        rows = pg_rows(postgres_url, postgres_table)
        assert rows["s3://b/k"][0] == "10"
    finally:
        destination.close()


def test_postgres_rejects_only_the_record_it_cannot_store(
    postgres_url: str, postgres_table: str
) -> None:
    """A value PostgreSQL refuses (NUL in text) is rejected alone; the batch goes through."""
    destination = PostgresDestination(postgres_url, table=postgres_table)
    try:
        good = item(OutboxRecord(event("b", "good", "1"), None, 0, 1))
        bad = OutboxRecord(event("b", "bad", "1", event_id="id\x00nul"), None, 0, 2)
        results = destination.apply([good, Item("s3://b/bad", "1", bad)])
        assert [r.outcome for r in results] == [Outcome.APPLIED, Outcome.REJECTED]
        assert results[1].reason == "destination_rejected"
        assert set(pg_rows(postgres_url, postgres_table)) == {"s3://b/good"}
    finally:
        destination.close()


def test_dedupe_only_sources_are_versioned_by_input_offset(tmp_path: Path) -> None:
    destination = SqliteDestination(tmp_path / "d.db")
    policy = Policy.build("aws")  # minio is dedupe-only by default
    late = OutboxRecord(event("b", "k", "1", source="minio", event_id="late"), None, 0, 40)
    early = OutboxRecord(event("b", "k", "9", source="minio", event_id="early"), None, 0, 12)
    results = destination.apply([item(late, policy), item(early, policy)])
    assert [r.outcome for r in results] == [Outcome.APPLIED, Outcome.SUPERSEDED]
    assert sqlite_rows(tmp_path / "d.db")["minio://b/k"][2] == "late"
    destination.close()


# ---- HTTP ---------------------------------------------------------------------------------------


def test_http_destination_answers() -> None:
    records = {
        name: OutboxRecord(event("b", name, "a", event_id=name), None, 0, i)
        for i, name in enumerate(["ok", "flaky", "bad", "newer"])
    }
    script = {"flaky": [503, 200], "bad": [400], "newer": [409]}
    with endpoint(script) as server:
        destination = HttpDestination(server.url)
        assert destination.apply([item(records["ok"])]) == [Result(Outcome.APPLIED)]
        with pytest.raises(TransientError, match="HTTP 503") as raised:
            destination.apply([item(records["ok"]), item(records["flaky"])])
        assert raised.value.done == [Result(Outcome.APPLIED)]
        results = destination.apply([item(records[n]) for n in ("flaky", "bad", "newer")])
    assert [r.outcome for r in results] == [Outcome.APPLIED, Outcome.REJECTED, Outcome.SUPERSEDED]
    assert results[1].reason == "destination_rejected"
    assert "HTTP 400" in results[1].message and "schema mismatch" in results[1].message
    headers, body = server.requests[0]
    assert headers["Idempotency-Key"] == "ok"
    assert body["identity"] == "s3://b/ok" and body["position_key"] == item(records["ok"]).key
    assert body["event"]["id"] == "ok"


def test_http_connection_refused_is_transient() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    destination = HttpDestination(f"http://127.0.0.1:{port}/x", timeout=5)
    record = OutboxRecord(event("b", "k", "1"), None, 0, 0)
    with pytest.raises(TransientError):
        destination.apply([item(record)])


# ---- the command line ----------------------------------------------------------------------------


def test_help_has_an_example() -> None:
    result = CliRunner().invoke(cli, ["dispatch", "--help"])
    assert result.exit_code == 0
    assert "Example:" in result.output


@pytest.mark.parametrize(
    ("destination", "expected"),
    [
        ("ftp://example.com/x", "unsupported destination 'ftp://example.com/x': expected sqlite"),
        ("sqlite://", "expected sqlite:///relative/path.db"),
    ],
)
def test_unsupported_destination_is_one_error_line(destination: str, expected: str) -> None:
    done = dispatch_cli("--bootstrap-servers", "127.0.0.1:1", "--destination", destination)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: --destination: "), done.stderr
    assert expected in lines[0]


def test_bad_table_name_is_one_error_line(tmp_path: Path) -> None:
    done = dispatch_cli(
        "--bootstrap-servers",
        "127.0.0.1:1",
        "--destination",
        f"sqlite:///{tmp_path}/x.db",
        "--table",
        "x; DROP TABLE y",
    )
    assert done.returncode == 2
    assert done.stderr.strip().startswith("error: --destination: invalid table name")
