"""`seqgate watermark` and `seqgate status` (issue 8, part 2): committed state, from outside.

Without a broker: the partitioner is Kafka's murmur2 (the Java client's own vectors).
Against the broker (marked ``kafka``), with a worker that processed a few objects'
events: `watermark` shows each object's committed watermark, read from the changelog
partition that the producers' partitioner gives (checked against where the input
records really are), exits 1 with one line for an unknown object; `status` shows the
group, its member and per partition the committed offset, the end, the lag and the
last commit time, while the worker runs and after it left.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from seqgate.schemas.identity import identity_partition
from seqgate.schemas.records import ObjectEvent
from tests.support.kafka_helpers import (
    caught_up,
    group_args,
    make_config,
    produce_events,
    read_all,
    wait_for,
    worker_thread,
)
from tests.support.paths import REPO

PARTITIONS = 3


def seqgate(*args: str) -> subprocess.CompletedProcess[str]:
    environment = {
        name: value
        for name, value in os.environ.items()
        if not (name.startswith("SEQGATE_") or name == "KAFKA_BOOTSTRAP_SERVERS")
    }
    return subprocess.run(
        [sys.executable, "-m", "seqgate.cli", *args],
        capture_output=True,
        text=True,
        env=environment,
        cwd=REPO,
        timeout=120,
        check=False,
    )


def event(key: str, position: str, number: int) -> ObjectEvent:
    return ObjectEvent(
        id=f"s3-inspect-{key}-{position}-{number}",
        source="s3",
        bucket="example-input",
        key=key,
        kind="created",
        event_name="ObjectCreated:Put",
        position=position,
        version_id=None,
        size=1,
        etag=None,
        event_time=None,
        origin="test",
    )


# Per object, deliveries in order; the watermark is the highest position: ...
KEYS = [f"incoming/report {n}+final.csv" for n in range(8)]
DELIVERIES = [
    event(key, position, n)
    for n, key in enumerate(KEYS)
    for position in ("0A", "0C", "0B", "0C")  # ... 0C, first delivered second
]


@pytest.mark.kafka
def test_watermark_and_status(kafka_bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=PARTITIONS)
    produce_events(kafka_bootstrap, config.input_topic, DELIVERIES)
    inputs = read_all(kafka_bootstrap, config.input_topic)
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to process the input")

        # status while the worker runs: one member with every partition, no lag.
        done = seqgate("status", *group_args(config), "--json")
        assert done.returncode == 0, done.stderr
        status = json.loads(done.stdout)
        assert status["state"] == "stable"
        [member] = status["members"]
        assert member["instance_id"] == config.instance_id
        assert sorted(member["partitions"]) == list(range(PARTITIONS))
        ends = {p: sum(1 for r in inputs if r.partition == p) for p in range(PARTITIONS)}
        for row in status["partitions"]:
            p = row["partition"]
            assert (row["committed"], row["end"], row["lag"]) == (ends[p], ends[p], 0), row
            assert (row["last_commit"] is not None) == (ends[p] > 0), row
        assert status["total_lag"] == 0

        done = seqgate("status", *group_args(config))
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[0] == f"group {config.application_id}: stable, 1 member(s)"
        assert lines[1].startswith(f"  member {config.instance_id} (client ")
        assert lines[2] == "partition\tcommitted\tend\tlag\tlast_commit\tstandbys\trestoring"
        assert lines[-1] == "total lag: 0"
    assert not running.errors

    for n, key in enumerate(KEYS):
        identity = f"s3://example-input/{key}"
        landed = {r.partition for r in inputs if r.key == identity.encode()}
        assert landed == {identity_partition(identity, PARTITIONS)}
        accepted = [r for r in inputs if r.key == identity.encode()]
        done = seqgate("watermark", *group_args(config), "--json", identity)
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout)
        # The second delivery (0C) set it; later ones were stale or duplicate.
        assert shown["identity"] == identity
        assert shown["position"] == "0C"
        assert shown["event_id"] == f"s3-inspect-{key}-0C-{n}"
        assert shown["input_partition"] == accepted[1].partition
        assert shown["input_offset"] == accepted[1].offset
        assert shown["changelog_topic"] == config.changelog_topic
        assert shown["changelog_partition"] == accepted[1].partition

    done = seqgate("watermark", *group_args(config), f"s3://example-input/{KEYS[0]}")
    assert done.returncode == 0, done.stderr
    assert "position: 0C" in done.stdout.splitlines()

    unknown = "s3://example-input/never/written.csv"
    done = seqgate("watermark", *group_args(config), unknown)
    assert done.returncode == 1
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"no committed watermark for {unknown}"), line


@pytest.mark.kafka
def test_status_of_a_group_that_never_ran(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=PARTITIONS)
    produce_events(kafka_bootstrap, config.input_topic, DELIVERIES[:4])
    done = seqgate("status", *group_args(config), "--json")
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    assert status["members"] == [] and status["state"] in ("dead", "empty")
    assert status["total_lag"] == 4
    assert all(row["committed"] is None for row in status["partitions"])
    assert all(row["last_commit"] is None for row in status["partitions"])


@pytest.mark.kafka
def test_inspection_errors_are_one_line(kafka_bootstrap: str, unique_name: str) -> None:
    missing = ["--bootstrap-servers", kafka_bootstrap, "--input-topic", f"{unique_name}.none"]
    for command in (["status"], ["watermark", "s3://b/k"]):
        done = seqgate(*command, *missing)
        assert done.returncode == 2, (command, done.stderr)
        [line] = done.stderr.splitlines()
        assert line.startswith("error: --input-topic") and "no such topic" in line, line
