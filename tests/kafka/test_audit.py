"""The audit log (`seqgate worker --audit`): one decision record per input record,
in the transaction that commits it (real broker, read_committed)."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from seqgate.runtime.errors import InjectedFault
from seqgate.runtime.faults import FaultPoint, RaiseAt
from seqgate.runtime.topics import TopicSpec, create_topics
from seqgate.schemas.codec import DECISION_RECORD
from seqgate.schemas.records import DecisionRecord
from seqgate.streams.worker.processor import Decision, WorkerConfig
from tests.support.events import s3_event
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    produce_events,
    read_all,
    wait_for,
    worker_thread,
)

pytestmark = pytest.mark.kafka


def audited_config(bootstrap: str, name: str, tmp_path: Path) -> WorkerConfig:
    audit_topic = f"{name}.object-events.decisions"
    config = make_config(bootstrap, name, tmp_path, audit_topic=audit_topic)
    create_topics(AdminClient({"bootstrap.servers": bootstrap}), [TopicSpec(audit_topic, 3)])
    return config


def audit_log(bootstrap: str, config: WorkerConfig) -> list[tuple[bytes | None, DecisionRecord]]:
    assert config.audit_topic is not None
    return [
        (record.key, DECISION_RECORD.decode(record.value))
        for record in read_all(bootstrap, config.audit_topic)  # read_committed
    ]


def by_input(decisions: list[Decision]) -> dict[tuple[int, int], Decision]:
    return {(d.partition, d.offset): d for d in decisions}


def test_one_decision_record_per_input_record(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = audited_config(kafka_bootstrap, unique_name, tmp_path)
    guide = "incoming/June report+final.csv"
    produce_events(
        kafka_bootstrap,
        config.input_topic,
        [
            s3_event("f"),  # accepted
            s3_event("f"),  # duplicate
            s3_event("e"),  # stale
            s3_event("f1"),  # accepted
            s3_event("f2", event_name="ObjectRemoved:DeleteMarkerCreated"),  # filtered
            s3_event("1", key="other.txt"),  # accepted, another object
        ],
    )
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    producer.produce(config.input_topic, key=b"s3://b/garbage", value=b"not avro")  # rejected
    assert producer.flush(30) == 0
    inputs = read_all(kafka_bootstrap, config.input_topic)
    assert len(inputs) == 7

    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
    assert not running.errors

    log = audit_log(kafka_bootstrap, config)
    records = [record for _, record in log]
    # Exactly one per input record, and the same outcome as the worker's decision.
    coordinates = [(r.input_partition, r.input_offset) for r in records]
    assert sorted(coordinates) == sorted((i.partition, i.offset) for i in inputs)
    assert len(set(coordinates)) == len(coordinates)
    decided = by_input(running.decisions)
    assert {c: r.outcome for c, r in zip(coordinates, records, strict=True)} == {
        c: d.outcome.value for c, d in decided.items()
    }
    for key, record in log:
        assert key == record.identity.encode("utf-8")

    guide_records = sorted(
        (r for r in records if r.identity == f"s3://example-input/{guide}"),
        key=lambda r: r.input_offset,
    )
    assert [(r.position, r.kind, r.outcome, r.previous_position) for r in guide_records] == [
        ("f", "created", "accepted", None),
        ("f", "created", "duplicate", "f"),
        ("e", "created", "stale", "f"),
        ("f1", "created", "accepted", "f"),
        ("f2", "removed", "filtered", "f1"),
    ]
    assert all(r.reason is None for r in guide_records)
    assert all(r.event_id for r in guide_records)
    (garbage,) = [r for r in records if r.outcome == "rejected"]
    assert garbage == DecisionRecord(
        garbage.input_partition,
        garbage.input_offset,
        "s3://b/garbage",
        None,
        None,
        None,
        "rejected",
        "undecodable_event",
        None,
    )


@pytest.mark.parametrize("point", [FaultPoint.AFTER_STATE_UPDATE, FaultPoint.BEFORE_COMMIT])
def test_an_aborted_transaction_leaves_no_audit_record(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, point: FaultPoint
) -> None:
    config = audited_config(kafka_bootstrap, unique_name, tmp_path)
    produce_events(kafka_bootstrap, config.input_topic, [s3_event("f"), s3_event("f")])
    with worker_thread(config, faults=RaiseAt(point), expect_errors=True) as running:
        wait_for(lambda: bool(running.errors), 60, "the injected failure")
    assert isinstance(running.errors[0], InjectedFault)
    assert running.decisions == []
    assert audit_log(kafka_bootstrap, config) == []
    # The uncommitted audit records were written and aborted: they are in the log,
    # invisible to read_committed readers.
    assert config.audit_topic is not None
    if point is FaultPoint.BEFORE_COMMIT:
        assert read_all(kafka_bootstrap, config.audit_topic, committed_only=False)

    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the retry to be committed")
    outcomes = [record.outcome for _, record in audit_log(kafka_bootstrap, config)]
    assert sorted(outcomes) == ["accepted", "duplicate"]
    assert len(running.decisions) == 2


def test_replay_writes_byte_identical_audit_records(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """Nothing from the clock: a second application over the same input writes the same bytes."""
    first = audited_config(kafka_bootstrap, unique_name, tmp_path)
    produce_events(
        kafka_bootstrap, first.input_topic, [s3_event("f"), s3_event("e"), s3_event("f")]
    )
    with worker_thread(first):
        wait_for(caught_up(kafka_bootstrap, first), 60, "the first application")
    second = WorkerConfig(
        **{
            **{name: getattr(first, name) for name in WorkerConfig.__slots__},
            "application_id": f"{first.application_id}-again",
            "outbox_topic": f"{first.outbox_topic}-again",
            "audit_topic": f"{first.audit_topic}-again",
            "state_dir": tmp_path / "again",
        }
    )
    admin = AdminClient({"bootstrap.servers": kafka_bootstrap})
    create_topics(
        admin,
        [
            TopicSpec(second.outbox_topic, 3),
            TopicSpec(second.changelog_topic, 3, compacted=True),
            TopicSpec(str(second.audit_topic), 3),
        ],
    )
    with worker_thread(second):
        wait_for(caught_up(kafka_bootstrap, second), 60, "the second application")

    def raw(config: WorkerConfig) -> list[tuple[int, bytes | None, bytes, int]]:
        assert config.audit_topic is not None
        return [
            (r.partition, r.key, r.value, r.timestamp)
            for r in read_all(kafka_bootstrap, config.audit_topic)
        ]

    assert raw(first) == raw(second)
    assert len(raw(first)) == 3


def test_the_cli_creates_the_audit_topic_and_configures_the_worker(
    kafka_bootstrap: str, unique_name: str
) -> None:
    import json

    from click.testing import CliRunner

    from seqgate.cli import cli

    runner = CliRunner()
    common = ["--bootstrap-servers", kafka_bootstrap, "--application-id", f"{unique_name}-app"]
    topics = [
        "--input-topic",
        f"{unique_name}.in",
        "--outbox-topic",
        f"{unique_name}.out",
        "--rejected-topic",
        f"{unique_name}.dlq",
    ]
    audit_topic = f"{unique_name}.decisions"
    args = ["topics", "create", *common, *topics, "--partitions", "2"]
    created = runner.invoke(cli, [*args, "--audit-topic", audit_topic])
    assert created.exit_code == 0, created.output
    assert f"{audit_topic}\tcreated" in created.output
    metadata = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=30)
    assert len(metadata.topics[audit_topic].partitions) == 2

    def resolved(*extra: str) -> dict[str, object]:
        result = runner.invoke(cli, ["worker", *common, *extra, "--print-config"])
        assert result.exit_code == 0, result.output
        config: dict[str, object] = json.loads(result.output)
        return config

    assert resolved()["audit_topic"] is None
    assert resolved("--audit")["audit_topic"] == "object-events.decisions"
    assert resolved("--audit-topic", audit_topic)["audit_topic"] == audit_topic
    assert resolved("--metrics-port", "9109")["metrics_port"] == 9109
