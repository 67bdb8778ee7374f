"""`seqgate reset` (issue 8, part 1): reprocessing by offset reset, with the state reset too.

Pure planning without a broker: option parsing, the offsets plan, the state diff, the
refusal message. Against the real broker (marked ``kafka``), with `seqgate worker` and
`seqgate reset` as real processes:

* determinism: a worker run, `reset --to-earliest --state empty`, a second run into a
  fresh outbox topic: the two outboxes are byte-identical, per partition, in order
  (the second worker's RocksDB stores were left in place: they catch up from the
  changelog's tombstones);
* refusal: with a worker running, `reset` exits 2 with one line naming the member,
  and nothing changed;
* `--dry-run` prints the plan and changes nothing; `--to-datetime` picks the offsets
  of the records' times;
* `--state rebuild` to explicit offsets: the changelog holds the replay's state as of
  those offsets; a worker run afterwards outputs exactly the first run's records after
  them, and `verify` passes.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from seqgate.runtime.topics import TopicSpec, create_topics
from seqgate.schemas.codec import OUTBOX_RECORD
from seqgate.streams.tools.inspect import (
    changelog_state,
    describe_group,
)
from seqgate.streams.tools.replay import InputRecord, PartitionReplay
from seqgate.streams.tools.reset_plan import parse_datetime
from seqgate.streams.tools.verify import verify
from seqgate.streams.worker.processor import WorkerConfig
from tests.support.environment import clean_env
from tests.support.kafka_helpers import group_args, make_config, read_all, wait_for
from tests.support.paths import REPO
from tests.support.progress_lines import AT_ONCE, progress_lines
from tests.support.torture_helpers import (
    GroupProbe,
    WorkerLauncher,
    build_workload,
    input_producer,
    launched,
    produce_records,
    verify_target,
)

PARTITIONS = 3
INSTANCE = "w1"
SESSION_TIMEOUT_MS = 6000  # the broker's minimum: a stopped worker leaves the group soon


# ---- against the broker ------------------------------------------------------------------------


def seqgate(*args: str, progress_now: bool = False) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "seqgate.cli", *args],
        capture_output=True,
        text=True,
        env=clean_env(AT_ONCE if progress_now else None),
        cwd=REPO,
        timeout=300,
        check=False,
    )


def reset_command(
    config: WorkerConfig, *args: str, progress_now: bool = False
) -> subprocess.CompletedProcess[str]:
    return seqgate(
        "reset",
        *group_args(config),
        "--ordering",
        config.policy.order.name,
        *args,
        progress_now=progress_now,
    )


def one_error_line(stderr: str, *mentions: str) -> str:
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    for text in mentions:
        assert text in lines[0], lines[0]
    return lines[0]


@pytest.fixture
def pipeline(kafka_bootstrap: str, unique_name: str, tmp_path: Path) -> Iterator[WorkerConfig]:
    # Producer time: the dry-run test places records in time to reset --to-datetime.
    yield make_config(
        kafka_bootstrap,
        unique_name,
        tmp_path,
        partitions=PARTITIONS,
        instance_id=INSTANCE,
        broker_time=False,
    )


def launcher_for(config: WorkerConfig, tmp_path: Path) -> WorkerLauncher:
    return WorkerLauncher(
        config.kafka.bootstrap_servers,
        config,
        tmp_path / "state",
        tmp_path / "logs",
        session_timeout_ms=SESSION_TIMEOUT_MS,
    )


def run_worker_to_the_end(config: WorkerConfig, tmp_path: Path) -> None:
    """One `seqgate worker` process until it has committed the whole input, then SIGTERM;
    then wait until the group has no member left (static membership: the session)."""
    probe = GroupProbe(config.kafka.bootstrap_servers, config)
    try:
        with launched(
            config.kafka.bootstrap_servers,
            config,
            tmp_path / "state",
            tmp_path / "logs",
            session_timeout_ms=SESSION_TIMEOUT_MS,
        ) as launcher:
            worker = launcher.start(INSTANCE)
            probe.wait_caught_up(180, "the worker to process the whole input")
            assert worker.stop() == 0, worker.stderr()[-3000:]
    finally:
        probe.close()
    wait_group_empty(config)


def wait_group_empty(config: WorkerConfig) -> None:
    admin = AdminClient({"bootstrap.servers": config.kafka.bootstrap_servers})
    wait_for(
        lambda: not describe_group(admin, config.application_id, config.input_topic).active,
        60,
        f"group {config.application_id} to have no member",
    )


def fresh_outbox(config: WorkerConfig, name: str) -> WorkerConfig:
    admin = AdminClient({"bootstrap.servers": config.kafka.bootstrap_servers})
    create_topics(admin, [TopicSpec(name, PARTITIONS)])
    return dataclasses.replace(config, outbox_topic=name)


def outbox_by_partition(config: WorkerConfig) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    records: dict[int, list[tuple[bytes | None, bytes | None]]] = {}
    for record in read_all(config.kafka.bootstrap_servers, config.outbox_topic):
        records.setdefault(record.partition, []).append((record.key, record.value))
    return records


def changelog_end(config: WorkerConfig) -> dict[int, int]:
    probe = GroupProbe(config.kafka.bootstrap_servers, config)
    try:
        ends = probe.high_watermarks(config.changelog_topic)
        assert ends is not None
        return ends
    finally:
        probe.close()


@pytest.mark.kafka
def test_reset_to_earliest_with_empty_state_reproduces_the_outbox_byte_for_byte(
    pipeline: WorkerConfig, tmp_path: Path
) -> None:
    config = pipeline
    workload = build_workload(81, 4000, 400)
    produce_records(
        input_producer(config.kafka.bootstrap_servers), config.input_topic, workload.records
    )
    run_worker_to_the_end(config, tmp_path)
    first = outbox_by_partition(config)
    assert sum(len(records) for records in first.values()) == workload.expected["accepted"]

    done = reset_command(config, "--to-earliest", "--state", "empty")
    assert done.returncode == 0, done.stderr
    assert "reset done" in done.stdout, done.stdout
    committed = GroupProbe(config.kafka.bootstrap_servers, config)
    try:
        assert committed.committed() == {p: 0 for p in range(PARTITIONS)}
    finally:
        committed.close()
    for partition in range(PARTITIONS):
        assert (
            changelog_state(config.kafka.bootstrap_servers, config.changelog_topic, partition) == {}
        )

    # Same instance, same state directory: its RocksDB stores still hold the first run's
    # watermarks and must catch up from the changelog's tombstones.
    second_config = fresh_outbox(config, f"{config.outbox_topic}.second")
    run_worker_to_the_end(second_config, tmp_path)
    second = outbox_by_partition(second_config)
    assert second.keys() == first.keys()
    for partition, records in first.items():
        assert second[partition] == records, f"outbox partition {partition} differs"


@pytest.mark.kafka
def test_reset_refuses_while_a_worker_is_running(pipeline: WorkerConfig, tmp_path: Path) -> None:
    config = pipeline
    workload = build_workload(82, 600, 60)
    produce_records(
        input_producer(config.kafka.bootstrap_servers), config.input_topic, workload.records
    )
    probe = GroupProbe(config.kafka.bootstrap_servers, config)
    try:
        with launched(
            config.kafka.bootstrap_servers,
            config,
            tmp_path / "state",
            tmp_path / "logs",
            session_timeout_ms=SESSION_TIMEOUT_MS,
        ) as launcher:
            worker = launcher.start(INSTANCE)
            probe.wait_caught_up(120, "the worker to process the input")
            before = probe.committed()
            changelog_before = changelog_end(config)
            done = reset_command(config, "--to-earliest", "--state", "empty")
            assert done.returncode == 2, (done.stdout, done.stderr)
            one_error_line(done.stderr, config.application_id, INSTANCE, "stop the workers first")
            assert probe.committed() == before
            assert changelog_end(config) == changelog_before
            assert worker.alive()
            assert worker.stop() == 0, worker.stderr()[-3000:]
    finally:
        probe.close()


# Record times of the dry-run test's input: an hour ago, to the second (a fixed date would
# fall out of the topic's 7-day retention, and the broker could delete the input mid-test).
T0 = (int(time.time()) - 3600) * 1000


@pytest.mark.kafka
def test_dry_run_prints_the_plan_and_changes_nothing(pipeline: WorkerConfig) -> None:
    config = pipeline
    producer = Producer({"bootstrap.servers": config.kafka.bootstrap_servers})
    failures: list[str] = []

    def on_delivery(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            failures.append(error.str())

    for second in range(30):  # 10 records per partition, one per second of record time
        producer.produce(
            config.input_topic,
            key=f"s3://b/{second}".encode(),
            value=b"not an event",
            partition=second % PARTITIONS,
            timestamp=T0 + second * 1000,
            on_delivery=on_delivery,
        )
    assert producer.flush(30) == 0
    assert failures == []
    # Offsets committed by a consumer that is not a member: 8, 9, 10.
    committer = Consumer(
        {"bootstrap.servers": config.kafka.bootstrap_servers, "group.id": config.application_id}
    )
    committer.commit(
        offsets=[TopicPartition(config.input_topic, p, 8 + p) for p in range(PARTITIONS)],
        asynchronous=False,
    )
    committer.close()
    probe = GroupProbe(config.kafka.bootstrap_servers, config)
    try:
        before = probe.committed()
        assert before == {0: 8, 1: 9, 2: 10}

        # Records at or after T0+15s: partition 0 holds seconds 0,3,..,27 -> offset 5 (15 s).
        when = dt.datetime.fromtimestamp(T0 / 1000 + 15, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        assert parse_datetime(when) == T0 + 15_000
        done = reset_command(config, "--to-datetime", when, "--state", "empty", "--dry-run")
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0].startswith("dry run: nothing is changed"), done.stdout
        rows = [line.split("\t") for line in lines[2 : 2 + PARTITIONS]]
        # partition p holds seconds p, p+3, ...: the first at or after 15 s is offset 5 for
        # p = 0 (15 s), offset 5 for p = 1 (16 s), offset 5 for p = 2 (17 s).
        assert rows == [
            ["0", "8", "5", "0", "10"],
            ["1", "9", "5", "0", "10"],
            ["2", "10", "5", "0", "10"],
        ]
        assert probe.committed() == before
        assert changelog_end(config) == {p: 0 for p in range(PARTITIONS)}

        done = reset_command(config, "--to-earliest", "--state", "rebuild", "--dry-run", "--json")
        assert done.returncode == 0, done.stderr
        plan = json.loads(done.stdout)
        assert plan["dry_run"] is True and plan["state"] == "rebuild"
        assert [(p["committed"], p["new_offset"]) for p in plan["partitions"]] == [
            (8, 0),
            (9, 0),
            (10, 0),
        ]
        assert probe.committed() == before

        # The same reset for real: the offsets move as planned.
        done = reset_command(config, "--to-datetime", when, "--state", "empty")
        assert done.returncode == 0, done.stderr
        assert probe.committed() == {0: 5, 1: 5, 2: 5}
    finally:
        probe.close()


def split_outbox(
    records: list[InputRecord], offsets: dict[int, int]
) -> tuple[list[InputRecord], list[InputRecord]]:
    """The outbox records decided before / at or after each input partition's offset."""
    before: list[InputRecord] = []
    after: list[InputRecord] = []
    for record in records:
        decoded = OUTBOX_RECORD.decode(record.value or b"")
        side = before if decoded.input_offset < offsets[decoded.input_partition] else after
        side.append(record)
    return before, after


@pytest.mark.kafka
def test_rebuild_to_explicit_offsets_resumes_as_if_processed_up_to_there(
    pipeline: WorkerConfig, tmp_path: Path
) -> None:
    config = pipeline
    workload = build_workload(83, 3000, 200)
    produce_records(
        input_producer(config.kafka.bootstrap_servers), config.input_topic, workload.records
    )
    run_worker_to_the_end(config, tmp_path)
    inputs = read_all(config.kafka.bootstrap_servers, config.input_topic)
    ends = {p: sum(1 for r in inputs if r.partition == p) for p in range(PARTITIONS)}
    offsets = {p: end // 2 for p, end in ends.items()}

    spec = ",".join(f"{p}:{o}" for p, o in offsets.items())
    done = reset_command(config, "--to-offsets", spec, "--state", "rebuild", progress_now=True)
    assert done.returncode == 0, done.stderr
    # Off a terminal, its progress is JSON lines on stderr: the changelog and the input up to
    # the new offsets, every offset announced read by the end.
    progress = progress_lines(done.stderr, "reset")
    assert progress[-1]["records"] == progress[-1]["total"]
    assert progress[-1]["total"] >= sum(offsets.values()), progress[-1]
    for partition, offset in offsets.items():  # the changelog holds the replay's state there
        replay = PartitionReplay(config.policy)
        for record in inputs:
            if record.partition == partition and record.offset < offset:
                replay.apply(record)
        assert changelog_state(
            config.kafka.bootstrap_servers, config.changelog_topic, partition
        ) == (replay.state)

    # A fresh outbox holding the first run's records before the new offsets; the worker
    # must add exactly the rest: the events after them that advance the rebuilt watermarks.
    first = read_all(config.kafka.bootstrap_servers, config.outbox_topic)
    head, tail = split_outbox(first, offsets)
    second_config = fresh_outbox(config, f"{config.outbox_topic}.second")
    producer = Producer(
        {"bootstrap.servers": config.kafka.bootstrap_servers, "enable.idempotence": True}
    )
    for record in head:
        producer.produce(
            second_config.outbox_topic,
            key=record.key,
            value=record.value,
            partition=record.partition,
        )
    assert producer.flush(30) == 0
    run_worker_to_the_end(second_config, tmp_path)

    second = read_all(config.kafka.bootstrap_servers, second_config.outbox_topic)
    _, new = split_outbox(second, offsets)
    assert tail, "the workload has accepted events after the new offsets"
    assert [(r.partition, r.key, r.value) for r in new] == [
        (r.partition, r.key, r.value) for r in tail
    ]
    assert len(new) < sum(
        ends[p] - offsets[p] for p in offsets
    )  # the rebuilt state suppressed some
    report = verify(verify_target(config.kafka.bootstrap_servers, second_config))
    assert report.ok(), report.as_dict()
    totals = report.totals()
    assert totals["inputs"] == len(workload) and totals["found"] == totals["expected"] == len(first)
