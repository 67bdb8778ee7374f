"""`seqgate verify` against a real broker: it passes on a real run and catches real faults."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from seqgate_devtools.samples import s3_notification, s3_record, to_bytes

from seqgate.connectors.parsers.normalize import normalize
from seqgate.schemas.codec import OUTBOX_RECORD
from seqgate.schemas.records import ObjectEvent, OutboxRecord
from seqgate.streams.errors import VerifyError
from seqgate.streams.rules.policy import Policy
from seqgate.streams.tools.verify import VerifyTarget, verify
from seqgate.streams.worker.processor import WorkerConfig
from tests.support.environment import clean_env
from tests.support.kafka_helpers import (
    caught_up,
    group_args,
    make_config,
    produce_events,
    read_all,
    wait_for,
    worker_thread,
)
from tests.support.progress_lines import AT_ONCE, progress_lines

pytestmark = pytest.mark.kafka


def s3_event(key: str, sequencer: str) -> ObjectEvent:
    [event] = normalize(
        to_bytes(s3_notification(s3_record(key=key, sequencer=sequencer))), "test"
    ).events
    return event


def target_of(config: WorkerConfig) -> VerifyTarget:
    return VerifyTarget(
        kafka=config.kafka,
        application_id=config.application_id,
        input_topic=config.input_topic,
        outbox_topic=config.outbox_topic,
        changelog_topic=config.changelog_topic,
        policy=config.policy,
    )


@pytest.fixture
def processed(kafka_bootstrap: str, unique_name: str, tmp_path: Path) -> WorkerConfig:
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=3)
    events = [
        s3_event(f"k{n % 40}", f"{(n * 7919) % 97 + 1:04x}")  # redeliveries and disorder
        for n in range(400)
    ]
    produce_events(kafka_bootstrap, config.input_topic, events)
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
    assert not running.errors
    return config


def test_verify_passes_on_a_real_run_and_counts_everything(processed: WorkerConfig) -> None:
    report = verify(target_of(processed))
    totals = report.totals()
    assert report.ok(), report.as_dict()
    assert totals["inputs"] == 400
    assert totals["expected"] == totals["found"] > 40
    assert [p.partition for p in report.partitions] == [0, 1, 2]


def test_verify_detects_a_duplicate_and_an_unexpected_record(processed: WorkerConfig) -> None:
    outbox = read_all(processed.kafka.bootstrap_servers, processed.outbox_topic)
    first = outbox[0]
    producer = Producer({"bootstrap.servers": processed.kafka.bootstrap_servers})
    # The same record again (a duplicate), then one the rules never accepted.
    producer.produce(
        processed.outbox_topic, key=first.key, value=first.value, partition=first.partition
    )
    original = OUTBOX_RECORD.decode(first.value or b"")
    forged = OutboxRecord(original.event, None, original.input_partition, 10_000)
    producer.produce(
        processed.outbox_topic,
        key=first.key,
        value=OUTBOX_RECORD.encode(forged),
        partition=first.partition,
    )
    assert producer.flush(30) == 0
    report = verify(target_of(processed))
    broken = report.partitions[first.partition]
    assert not report.ok()
    assert broken.duplicated >= 1
    assert broken.unexpected >= 1


def test_verify_detects_missing_records_and_wrong_watermarks(processed: WorkerConfig) -> None:
    # Truncate the outbox's partition 0: its first records are gone.
    admin = AdminClient({"bootstrap.servers": processed.kafka.bootstrap_servers})
    futures = admin.delete_records([TopicPartition(processed.outbox_topic, 0, 3)])
    for future in futures.values():
        future.result(30)
    report = verify(target_of(processed))
    assert not report.ok()
    assert report.partitions[0].missing == 3
    assert report.partitions[1].problems() == 0

    # A policy the workers did not run: nothing should have been accepted.
    removed_only = dataclasses.replace(
        target_of(processed), policy=Policy.build("aws", ["removed"])
    )
    report = verify(removed_only)
    assert report.totals()["expected"] == 0
    assert report.totals()["unexpected"] == report.totals()["found"] > 0
    assert report.totals()["watermark_mismatches"] > 0


def test_verify_names_a_topic_that_does_not_exist(processed: WorkerConfig) -> None:
    wrong = dataclasses.replace(target_of(processed), outbox_topic="no-such-outbox")
    with pytest.raises(VerifyError, match="no-such-outbox does not exist"):
        verify(wrong)


def test_verify_cli_prints_a_table_and_exits_0(processed: WorkerConfig) -> None:
    config = processed
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "seqgate.cli",
            "verify",
            *group_args(config),
            "--outbox-topic",
            config.outbox_topic,
            "--json",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ok"] is True
    assert report["totals"]["inputs"] == 400
    assert "verified partition 3/3" in done.stderr


def seqgate_quickly_reporting(*args: str) -> subprocess.CompletedProcess[str]:
    """`seqgate ARGS` with progress from the first record on, a JSON line each time."""
    return subprocess.run(
        [sys.executable, "-m", "seqgate.cli", *args],
        capture_output=True,
        text=True,
        env=clean_env(AT_ONCE),
        timeout=120,
        check=False,
    )


def test_verify_and_watermark_print_json_progress_off_a_terminal(
    processed: WorkerConfig,
) -> None:
    config = processed
    group = group_args(config)
    done = seqgate_quickly_reporting("verify", *group, "--outbox-topic", config.outbox_topic)
    assert done.returncode == 0, done.stderr
    lines = progress_lines(done.stderr, "verify")
    last = lines[-1]
    # The 400 inputs, the outbox and the changelog: all read, as many as announced.
    assert last["records"] == last["total"] > 400, last
    assert last["percent"] == 100.0
    assert "verified partition 3/3" in done.stderr
    assert done.stdout.splitlines()[-1] == "OK: the outbox is exactly the replay of the input"

    done = seqgate_quickly_reporting("watermark", *group, "--json", "s3://example-input/k7")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["identity"] == "s3://example-input/k7"
    last = progress_lines(done.stderr, "watermark")[-1]
    assert last["records"] == last["total"] > 0, last
