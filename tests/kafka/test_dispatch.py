"""`seqgate dispatch`: the outbox applied to SQLite, PostgreSQL and HTTP destinations.

PostgreSQL tests use ``$SEQGATE_TEST_POSTGRES_URL`` (``scripts/test.sh`` starts a server with
``scripts/postgres.sh`` and sets it). Without it they fail under CI (``$CI`` set) and are
skipped, with the reason, otherwise.
"""

from __future__ import annotations

import json
import random
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import TopicSpec, create_topics
from seqgate.schemas.codec import OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.records import OutboxRecord
from seqgate.streams.dispatch.destinations import HttpDestination
from seqgate.streams.dispatch.runner import DispatchConfig, Dispatcher
from tests.support.dispatch import (
    NUMERIC,
    check_newest_won,
    dispatch_cli,
    event,
    item,
    race_records,
    sqlite_rows,
)
from tests.support.http_endpoint import endpoint
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
from tests.support.postgres import pg_rows
from tests.support.postgres import postgres_table as postgres_table
from tests.support.postgres import postgres_url as postgres_url

# ---- end to end: a real worker's outbox into SQLite, killed between apply and commit -------------


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
    assert summary["rejected"] == 0
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
            *(sys.executable, "-m", "seqgate.cli", "dispatch", "--outbox-topic", topic),
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


@pytest.mark.kafka
def test_dispatch_to_http_retries_rejected_records_and_commits(
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
            rejected_topic=dlq,
            policy=NUMERIC,
            idle_exit_seconds=1.0,
            retry_initial_s=0.01,
        )
        dispatcher = Dispatcher(config, HttpDestination(server.url))
        dispatcher.run(threading.Event())
    counters = dispatcher.counters.as_dict()
    assert counters["applied"] == 2  # ok, flaky (after two 5xx)
    assert counters["superseded"] == 1  # 409
    assert counters["rejected"] == 2
    assert counters["rejected_reasons"] == {"destination_rejected": 1, "undecodable_record": 1}
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
