"""`seqgate dispatch`: the outbox applied to SQLite, PostgreSQL and HTTP destinations.

PostgreSQL tests use ``$SEQGATE_TEST_POSTGRES_URL`` (``scripts/test.sh`` starts a server with
``scripts/postgres.sh`` and sets it). Without it they fail under CI (``$CI`` set) and are
skipped, with the reason, otherwise.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from click.testing import CliRunner
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.schemas.codec import OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.identity import event_identity
from seqgate.schemas.ordering import AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER
from seqgate.schemas.records import ObjectEvent, OutboxRecord
from seqgate.streams.cli import cli
from seqgate.streams.dispatch.destinations import (
    Destination,
    HttpDestination,
    Item,
    Outcome,
    PostgresDestination,
    Result,
    SqliteDestination,
    TransientError,
)
from seqgate.streams.dispatch.keys import position_key, version_key
from seqgate.streams.dispatch.runner import DispatchConfig, Dispatcher
from seqgate.streams.rules.policy import Policy
from seqgate.streams.runtime.kafka_settings import KafkaSettings
from seqgate.streams.runtime.topics import TopicSpec, create_topics
from tests.support.kafka_helpers import (
    caught_up,
    committed_offsets,
    make_config,
    produce_events,
    read_all,
    wait_for,
    worker_thread,
)
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


# ---- PostgreSQL --------------------------------------------------------------------------------


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture(scope="session")
def postgres_url() -> str:
    import psycopg

    url = os.environ.get("SEQGATE_TEST_POSTGRES_URL", "").strip()
    if not url:
        reason = (
            "SEQGATE_TEST_POSTGRES_URL is not set"
            " (`bash scripts/postgres.sh` starts a server and prints its URL)"
        )
        if _in_ci():
            pytest.fail(f"no PostgreSQL in CI: {reason}", pytrace=False)
        pytest.skip(f"no PostgreSQL: {reason}")
    try:
        psycopg.connect(url, connect_timeout=10).close()
    except psycopg.Error as error:
        pytest.fail(f"SEQGATE_TEST_POSTGRES_URL={url} does not answer: {error}", pytrace=False)
    return url


@pytest.fixture
def postgres_table(postgres_url: str) -> Iterator[str]:
    import psycopg

    table = f"objects_{uuid.uuid4().hex[:12]}"
    yield table
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}")


def pg_rows(url: str, table: str) -> dict[str, tuple[str, str, str]]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(f"SELECT identity, position, position_key, event_id FROM {table}")
        return {identity: (pos, key, eid) for identity, pos, key, eid in rows}


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
from tests.kafka.test_dispatch import item, race_records
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


# ---- end to end: a real worker's outbox into SQLite, killed between apply and commit -------------


def dispatch_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "seqgate.streams.cli", "dispatch", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, **(env or {})},
    )


@pytest.mark.kafka
def test_worker_outbox_into_sqlite_with_a_crash_before_commit(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path / "state", ordering="numeric")
    rng = random.Random(3)
    events = []
    for i in range(12):
        positions = [format(v, "x") for v in range(1, 6)]
        rng.shuffle(positions)  # out of order: the worker drops the stale ones
        events += [event("bucket", f"key-{i}", p) for p in positions]
    with worker_thread(config) as running:
        produce_events(kafka_bootstrap, config.input_topic, events)
        wait_for(caught_up(kafka_bootstrap, config), 120, "the worker to consume the input")
        assert not running.errors
    outbox = read_all(kafka_bootstrap, config.outbox_topic)
    assert len(outbox) > 12
    records = {OUTBOX_RECORD.decode(r.value).event.id: r for r in outbox}
    db = tmp_path / "objects.db"
    common = [
        "--bootstrap-servers",
        kafka_bootstrap,
        "--outbox-topic",
        config.outbox_topic,
        "--group-id",
        f"{unique_name}-dispatch",
        "--destination",
        f"sqlite:///{db}",
        "--ordering",
        "numeric",
        "--batch-size",
        "4",
        "--idle-exit-seconds",
        "1",
        "--session-timeout-ms",
        "6000",  # the killed dispatcher's partitions move on quickly
    ]
    # Killed after the destination confirmed its second batch, before committing it.
    killed = dispatch_cli(*common, env={"SEQGATE_DISPATCH_FAULT": "kill:after_apply:1"})
    assert killed.returncode == -9, killed.stderr
    committed = committed_offsets(kafka_bootstrap, f"{unique_name}-dispatch", config.outbox_topic)
    rows = sqlite_rows(db)
    assert rows, "the first batches were applied"
    applied_not_committed = [
        eid
        for _, _, eid in rows.values()
        if records[eid].offset >= committed.get(records[eid].partition, -1)
    ]
    assert applied_not_committed, (rows, committed)

    done = dispatch_cli(*common)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["duplicate"] >= 1  # the redelivered batch found its results in place
    assert summary["dead_lettered"] == 0
    assert summary["consumed"] == summary["applied"] + summary["superseded"] + summary["duplicate"]
    assert summary["consumed"] < len(outbox)  # the committed batch was not read again
    # Each object holds its highest position: 5.
    final = sqlite_rows(db)
    assert {identity: row[0] for identity, row in final.items()} == {
        f"s3://bucket/key-{i}": "5" for i in range(12)
    }
    ends = committed_offsets(kafka_bootstrap, f"{unique_name}-dispatch", config.outbox_topic)
    for partition in {r.partition for r in outbox}:
        last = max(r.offset for r in outbox if r.partition == partition)
        assert ends[partition] > last


def produce_outbox(bootstrap: str, topic: str, records: list[OutboxRecord]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for record in records:
        key = item(record).identity.encode("utf-8")
        producer.produce(topic, key=key, value=OUTBOX_RECORD.encode(record))
    assert producer.flush(30) == 0


@pytest.mark.kafka
def test_dispatch_into_postgres_keeps_the_newest(
    kafka_bootstrap: str, unique_name: str, postgres_url: str, postgres_table: str
) -> None:
    """Older records after newer ones in the outbox (work finishing out of order upstream):
    the command keeps each object's highest position."""
    topic = f"{unique_name}.outbox"
    create_topics(AdminClient({"bootstrap.servers": kafka_bootstrap}), [TopicSpec(topic, 2)])
    records = race_records(identities=24, versions=20, seed=7)
    random.Random(5).shuffle(records)
    produce_outbox(kafka_bootstrap, topic, records)
    done = dispatch_cli(
        "--bootstrap-servers",
        kafka_bootstrap,
        "--outbox-topic",
        topic,
        "--group-id",
        f"{unique_name}-dispatch",
        "--destination",
        postgres_url,
        "--table",
        postgres_table,
        "--ordering",
        "numeric",
        "--idle-exit-seconds",
        "1",
    )
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert summary["consumed"] == len(records)
    assert summary["applied"] + summary["superseded"] == len(records)
    assert summary["superseded"] > 0
    check_newest_won(pg_rows(postgres_url, postgres_table))


@pytest.mark.kafka
def test_sigterm_stops_gracefully_with_a_summary(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    topic = f"{unique_name}.outbox"
    create_topics(AdminClient({"bootstrap.servers": kafka_bootstrap}), [TopicSpec(topic, 1)])
    records = race_records(identities=3, versions=4, seed=1)
    produce_outbox(kafka_bootstrap, topic, records)
    db = tmp_path / "objects.db"
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "seqgate.streams.cli", "dispatch", "--outbox-topic", topic),
            *("--bootstrap-servers", kafka_bootstrap, "--group-id", f"{unique_name}-d"),
            *("--destination", f"sqlite:///{db}", "--ordering", "numeric"),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def all_committed() -> bool:
            return committed_offsets(kafka_bootstrap, f"{unique_name}-d", topic).get(0) == 12

        wait_for(all_committed, 60, "the dispatcher to commit the outbox")
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    summary = json.loads(out)
    assert summary["stopped"] is True
    assert summary["consumed"] == 12 and summary["applied"] + summary["superseded"] == 12
    assert len(sqlite_rows(db)) == 3


# ---- HTTP ---------------------------------------------------------------------------------------


@dataclass
class Endpoint:
    """A tiny aiohttp server: `script[event id]` lists the statuses to answer, in turn
    (the last one repeats); every request is recorded."""

    script: dict[str, list[int]]
    requests: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)
    url: str = ""


@contextlib.contextmanager
def endpoint(script: dict[str, list[int]]) -> Iterator[Endpoint]:
    state = Endpoint(script)
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    runner_box: list[web.AppRunner] = []

    async def handle(request: web.Request) -> web.Response:
        body = await request.json()
        state.requests.append((dict(request.headers), body))
        statuses = state.script.get(body["event"]["id"], [200])
        status = statuses.pop(0) if len(statuses) > 1 else statuses[0]
        text = "schema mismatch" if status == 400 else ""
        return web.Response(status=status, text=text)

    async def start() -> None:
        app = web.Application()
        app.router.add_post("/objects", handle)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runner_box.append(runner)
        port = runner.addresses[0][1]
        state.url = f"http://127.0.0.1:{port}/objects"
        ready.set()

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(start(), loop)
    assert ready.wait(30)
    try:
        yield state
    finally:
        asyncio.run_coroutine_threadsafe(runner_box[0].cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(30)
        loop.close()


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


@pytest.mark.kafka
def test_dispatch_to_http_retries_dead_letters_and_commits(
    kafka_bootstrap: str, unique_name: str
) -> None:
    outbox_topic = f"{unique_name}.outbox"
    dlq = f"{unique_name}.outbox.dlq"
    create_topics(AdminClient({"bootstrap.servers": kafka_bootstrap}), [TopicSpec(outbox_topic, 1)])
    names = ["ok", "flaky", "bad", "newer"]
    records = [
        OutboxRecord(event("b", n, "a", event_id=n), None, 0, i) for i, n in enumerate(names)
    ]
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    for record in records:
        producer.produce(
            outbox_topic, key=item(record).identity, value=OUTBOX_RECORD.encode(record)
        )
    producer.produce(outbox_topic, key=b"s3://b/garbage", value=b"not avro")
    assert producer.flush(30) == 0
    script = {"flaky": [503, 502, 200], "bad": [400], "newer": [409]}
    with endpoint(script) as server:
        config = DispatchConfig(
            kafka=KafkaSettings(kafka_bootstrap),
            outbox_topic=outbox_topic,
            group_id=f"{unique_name}-dispatch",
            dead_letter_topic=dlq,
            policy=NUMERIC,
            idle_exit_seconds=1.0,
            retry_initial_s=0.01,
        )
        dispatcher = Dispatcher(config, HttpDestination(server.url))
        dispatcher.run(threading.Event())
    counters = dispatcher.counters.as_dict()
    assert counters["applied"] == 2  # ok, flaky (after two 5xx)
    assert counters["superseded"] == 1  # 409
    assert counters["dead_lettered"] == 2
    assert counters["dead_letter_reasons"] == {"destination_rejected": 1, "undecodable_record": 1}
    assert counters["retries"] == 2
    keys = [headers["Idempotency-Key"] for headers, _ in server.requests]
    assert keys == ["ok", "flaky", "flaky", "flaky", "bad", "newer"]
    letters = [REJECTED_RECORD.decode(r.value) for r in read_all(kafka_bootstrap, dlq)]
    by_reason = {letter.reason: letter for letter in letters}
    assert set(by_reason) == {"destination_rejected", "undecodable_record"}
    assert "HTTP 400" in by_reason["destination_rejected"].message
    assert OUTBOX_RECORD.decode(by_reason["destination_rejected"].raw).event.id == "bad"
    assert by_reason["undecodable_record"].raw == b"not avro"
    committed = committed_offsets(kafka_bootstrap, f"{unique_name}-dispatch", outbox_topic)
    assert committed[0] == 5


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


@pytest.mark.kafka
def test_missing_outbox_topic_is_one_error_line(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    done = dispatch_cli(
        *("--bootstrap-servers", kafka_bootstrap, "--outbox-topic", f"{unique_name}.none"),
        *("--destination", f"sqlite:///{tmp_path}/x.db"),
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        f"error: outbox topic {unique_name}.none does not exist"
        " (create it with `seqgate topics create`)"
    )
