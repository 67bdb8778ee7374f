"""`seqgate tail` against the real broker (issue 18 §2), run as the operator runs it.

An outbox-like topic of two partitions holds, on partition 0, records written by seqgate's
own codec in a committed transaction, an aborted transaction and another committed one;
on partition 1 a Confluent-framed outbox record, foreign bytes and a tombstone. `tail`
shows only the committed records by default and the aborted ones with
--read-uncommitted, decodes both encodings (the Confluent one with the topic's type,
from --outbox-topic), prints what it cannot decode with a reason, honours --max and
--partition/--offset, follows new records until SIGTERM, never commits an offset, and
names an unknown topic in one line with exit code 2.
"""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from seqgate.runtime.topics import TopicSpec, create_topics
from seqgate.schemas.codec import OUTBOX_RECORD
from seqgate.schemas.confluent import confluent_frame
from seqgate.schemas.records import OutboxRecord
from tests.support.environment import clean_env
from tests.support.events import event
from tests.support.kafka_helpers import committed_offsets, produce, wait_for
from tests.support.paths import REPO

COMMITTED = ["a", "b", "c"]  # identities' keys of the committed records, in offset order
ABORTED = ["x", "y"]


def outbox(key: str, offset: int) -> OutboxRecord:
    return OutboxRecord(event(key, f"{offset:04X}"), None, 0, offset)


def identity(key: str) -> bytes:
    return f"s3://bucket/{key}".encode()


def command(bootstrap: str) -> list[str]:
    return [sys.executable, "-m", "seqgate.cli", "tail", "--bootstrap-servers", bootstrap]


def tail(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*command(bootstrap), *args],
        capture_output=True,
        text=True,
        env=clean_env(),
        cwd=REPO,
        timeout=120,
        check=False,
    )


def lines(done: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def create_topic(bootstrap: str, name: str, partitions: int = 2) -> None:
    create_topics(AdminClient({"bootstrap.servers": bootstrap}), [TopicSpec(name, partitions)])


def transactions(bootstrap: str, topic: str, transactional_id: str) -> None:
    """Partition 0: a, b committed; x, y aborted; c committed."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id})
    producer.init_transactions(30)
    batches = [(COMMITTED[:2], True), (ABORTED, False), (COMMITTED[2:], True)]
    for number, (keys, commit) in enumerate(batches):
        producer.begin_transaction()
        for key in keys:
            value = OUTBOX_RECORD.encode(outbox(key, number))
            producer.produce(topic, key=identity(key), value=value, partition=0)
        if commit:
            producer.commit_transaction(30)
        else:
            producer.flush(30)  # the aborted records are in the log, as a reader would meet them
            producer.abort_transaction(30)


@dataclass(frozen=True)
class Written:
    bootstrap: str
    topic: str


@pytest.fixture(scope="module")
def written(kafka_bootstrap: str) -> Written:
    topic = f"t-tail-{uuid.uuid4().hex[:12]}"
    create_topic(kafka_bootstrap, topic)
    transactions(kafka_bootstrap, topic, f"{topic}-tx")
    framed = confluent_frame(5, OUTBOX_RECORD.encode_body(outbox("d", 9)))
    producer = Producer({"bootstrap.servers": kafka_bootstrap, "enable.idempotence": True})
    for key, value in [(b"d", framed), (b"\xff", b"{not avro}"), (b"gone", None)]:
        producer.produce(topic, key=key, value=value, partition=1)
    assert producer.flush(30) == 0
    return Written(kafka_bootstrap, topic)


def test_read_committed_shows_no_aborted_record(written: Written) -> None:
    found = lines(tail(written.bootstrap, "--from-beginning", written.topic))
    first = [line for line in found if line["partition"] == 0]
    assert [line["key"] for line in first] == [identity(k).decode() for k in COMMITTED]
    assert [line["value"]["event"]["key"] for line in first] == COMMITTED
    assert {(line["encoding"], line["type"]) for line in first} == {("single-object", "outbox")}
    assert first[-1]["offset"] > first[1]["offset"] + 1  # the aborted ones lie between
    assert all(line["topic"] == written.topic for line in found)
    assert all(line["timestamp"].endswith("+00:00") for line in found)


def test_read_uncommitted_shows_the_aborted_records(written: Written) -> None:
    found = lines(tail(written.bootstrap, "--from-beginning", "--read-uncommitted", written.topic))
    keys = [line["value"]["event"]["key"] for line in found if line["partition"] == 0]
    assert keys == [*COMMITTED[:2], *ABORTED, *COMMITTED[2:]]


def test_either_encoding_and_what_cannot_be_decoded(written: Written) -> None:
    args = ["--from-beginning", "--partition", "1", written.topic]
    plain, as_outbox = (
        lines(tail(written.bootstrap, *args)),
        lines(tail(written.bootstrap, "--outbox-topic", written.topic, *args)),
    )
    assert [line["offset"] for line in plain] == [0, 1, 2]
    framed, foreign, tombstone = as_outbox
    assert framed["encoding"] == "confluent" and framed["schema_id"] == 5
    assert framed["type"] == "outbox" and framed["value"] == outbox("d", 9).to_dict()
    assert plain[0]["type"] is None and "--type" in plain[0]["reason"]
    assert foreign["encoding"] == "raw" and foreign["raw"] == "e25vdCBhdnJvfQ=="
    assert foreign["key"] == "/w==" and foreign["key_base64"] is True
    assert foreign["reason"].startswith("foreign bytes")
    assert tombstone["raw"] is None and tombstone["reason"] == "tombstone (no value)"


def test_max_and_partition_and_offset(written: Written) -> None:
    assert len(lines(tail(written.bootstrap, "--from-beginning", "--max", "2", written.topic))) == 2
    every = lines(tail(written.bootstrap, "--from-beginning", "--partition", "0", written.topic))
    last = every[-1]["offset"]
    at = lines(tail(written.bootstrap, "--partition", "0", "--offset", str(last), written.topic))
    assert [(line["partition"], line["offset"]) for line in at] == [(0, last)]
    beyond = tail(written.bootstrap, "--partition", "0", "--offset", "99", written.topic)
    assert beyond.returncode == 2
    assert beyond.stderr.splitlines() == [
        f"error: --offset 99: partition 0 of {written.topic} holds offsets 0 to {last + 1}"
    ]


def test_tail_commits_nothing(written: Written) -> None:
    lines(tail(written.bootstrap, "--from-beginning", written.topic))
    found = committed_offsets(written.bootstrap, "seqgate-tail", written.topic)
    assert found and all(offset < 0 for offset in found.values()), found  # none committed


def test_an_unknown_topic_is_one_line_and_code_2(written: Written) -> None:
    done = tail(written.bootstrap, f"{written.topic}-nope")
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: TOPIC {written.topic}-nope: no such topic (check TOPIC or create it)"
    ]
    assert done.stdout == ""


def test_an_unknown_partition_is_one_line_and_code_2(written: Written) -> None:
    done = tail(written.bootstrap, "--partition", "2", written.topic)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: --partition 2: topic {written.topic} has 2 partitions (0 to 1)"
    ]


@dataclass
class Running:
    """A `seqgate tail` process and the lines it printed so far (read by a thread)."""

    process: subprocess.Popen[str]
    printed: list[dict[str, Any]]

    def event_keys(self) -> list[str]:
        return [line["value"]["event"]["key"] for line in self.printed]

    def stopped_cleanly(self) -> bool:
        self.process.send_signal(signal.SIGTERM)
        _, stderr = self.process.communicate(timeout=30)
        return self.process.returncode == 0 and stderr == ""


def _read(process: subprocess.Popen[str], printed: list[dict[str, Any]], most: int | None) -> None:
    assert process.stdout is not None
    for line in process.stdout:
        printed.append(json.loads(line))
        if len(printed) == most:
            process.stdout.close()  # as `head -n 1` does
            return


@contextlib.contextmanager
def running_tail(bootstrap: str, *args: str, most: int | None = None) -> Iterator[Running]:
    """`seqgate tail ARGS` in the background; its reader stops after `most` lines."""
    process = subprocess.Popen(
        [*command(bootstrap), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=clean_env(),
        cwd=REPO,
    )
    printed: list[dict[str, Any]] = []
    threading.Thread(target=_read, args=(process, printed, most), daemon=True).start()
    try:
        yield Running(process, printed)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(30)


def add(bootstrap: str, topic: str, key: str, number: int) -> None:
    produce(bootstrap, topic, [(b"k", OUTBOX_RECORD.encode(outbox(key, number)))])


@pytest.fixture
def one_record(kafka_bootstrap: str, unique_name: str) -> str:
    """A topic of one partition holding one outbox record, `first`."""
    create_topic(kafka_bootstrap, unique_name, partitions=1)
    add(kafka_bootstrap, unique_name, "first", 1)
    return unique_name


def test_follow_prints_new_records_until_sigterm(kafka_bootstrap: str, one_record: str) -> None:
    with running_tail(kafka_bootstrap, "--from-beginning", "--follow", one_record) as run:
        wait_for(lambda: len(run.printed) == 1, 60, "the existing record")
        add(kafka_bootstrap, one_record, "second", 2)
        wait_for(lambda: len(run.printed) == 2, 60, "the new record")
        assert run.event_keys() == ["first", "second"]
        assert run.stopped_cleanly()


def test_without_a_start_it_follows_from_the_end(kafka_bootstrap: str, one_record: str) -> None:
    with running_tail(kafka_bootstrap, one_record) as run:
        # Nothing tells when it has taken the ends: add records until one is printed.
        for number in range(2, 60):
            add(kafka_bootstrap, one_record, f"new-{number}", number)
            with contextlib.suppress(AssertionError):
                wait_for(lambda: bool(run.printed), 2, "a new record")
                break
        assert run.printed and "first" not in run.event_keys(), run.printed
        assert run.stopped_cleanly()


def test_a_reader_that_goes_away_ends_it_quietly(kafka_bootstrap: str, one_record: str) -> None:
    with running_tail(kafka_bootstrap, "--from-beginning", "--follow", one_record, most=1) as run:
        wait_for(lambda: len(run.printed) == 1, 60, "the existing record")
        add(kafka_bootstrap, one_record, "second", 2)  # its line meets the closed pipe
        _, stderr = run.process.communicate(timeout=60)
        assert run.process.returncode == 0 and stderr == ""
