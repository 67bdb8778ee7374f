"""`seqgate topics create` with production settings and `seqgate topics check`.

The decision (`seqgate.runtime.topic_check.check_topics`) and the parsing of `--config` are
tested without a broker, including the replication rules a one-node broker cannot
show; the commands are tested against the real broker (marked ``kafka``).
"""

from __future__ import annotations

import json

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

from seqgate.runtime.topics import (
    TopicSpec,
    changelog_topic,
    create_topics,
)
from tests.support.topics_cli import clean_environment as clean_environment
from tests.support.topics_cli import invoke, one_error_line

# ---- the commands, against the broker -------------------------------------------------------


def pipeline_args(bootstrap: str, prefix: str) -> list[str]:
    return [
        "--bootstrap-servers",
        bootstrap,
        "--input-topic",
        f"{prefix}.in",
        "--outbox-topic",
        f"{prefix}.out",
        "--rejected-topic",
        f"{prefix}.rej",
        "--application-id",
        prefix,
    ]


def topic_config(bootstrap: str, topic: str, name: str) -> str:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [future] = admin.describe_configs([ConfigResource("topic", topic)]).values()
    return str(future.result()[name].value)


@pytest.mark.kafka
def test_created_topics_pass_the_check(kafka_bootstrap: str, unique_name: str) -> None:
    common = pipeline_args(kafka_bootstrap, unique_name)
    extra = ["--audit-topic", f"{unique_name}.audit", "--source-topic", f"{unique_name}.src"]
    created = invoke(
        [
            "topics",
            "create",
            *common,
            *extra,
            "--partitions",
            "2",
            "--min-insync-replicas",
            "1",
            "--config",
            "outbox:retention.ms=259200000",
            "--config",
            "all:segment.ms=3600000",
        ]
    )
    assert created.exit_code == 0, (created.stdout, created.stderr)
    assert created.stdout.count("\tcreated") == 6
    assert topic_config(kafka_bootstrap, f"{unique_name}.out", "retention.ms") == "259200000"
    assert topic_config(kafka_bootstrap, f"{unique_name}.in", "retention.ms") != "259200000"
    assert topic_config(kafka_bootstrap, changelog_topic(unique_name), "segment.ms") == "3600000"
    assert topic_config(kafka_bootstrap, f"{unique_name}.rej", "min.insync.replicas") == "1"

    check = ["topics", "check", *common, *extra]
    checked = invoke([*check, "--replication-factor", "1", "--min-insync-replicas", "1"])
    assert checked.exit_code == 0, (checked.stdout, checked.stderr)
    lines = checked.stdout.splitlines()
    assert lines[-1].startswith("OK: 6 topics, ")
    assert all(line.split("\t")[3] == "ok" for line in lines[:-1]), checked.stdout
    assert f"{unique_name}.in\tinput\tmessage.timestamp.type\tok\tLogAppendTime" in lines

    as_json = invoke([*check, "--json"])
    assert as_json.exit_code == 0, (as_json.stdout, as_json.stderr)
    report = json.loads(as_json.stdout)
    assert report["ok"] is True
    warned = {f["property"] for f in report["findings"] if f["status"] == "warn"}
    assert warned == {"replication.factor"}  # one broker: factor 1, not expected

    again = invoke(["topics", "create", *common, *extra, "--partitions", "2"])
    assert again.exit_code == 0, again.stderr
    assert again.stdout.count("\texists") == 6


def make_topics(bootstrap: str, specs: list[TopicSpec]) -> None:
    create_topics(AdminClient({"bootstrap.servers": bootstrap}), specs)


@pytest.mark.kafka
def test_a_changelog_with_another_partition_count_fails_the_check(
    kafka_bootstrap: str, unique_name: str
) -> None:
    make_topics(
        kafka_bootstrap,
        [
            TopicSpec(f"{unique_name}.in", 2, broker_time=True),
            TopicSpec(f"{unique_name}.out", 2),
            TopicSpec(f"{unique_name}.rej", 2),
            TopicSpec(changelog_topic(unique_name), 3, compacted=True),
        ],
    )
    result = invoke(["topics", "check", *pipeline_args(kafka_bootstrap, unique_name)])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    line = f"{changelog_topic(unique_name)}\tchangelog\tpartitions\tmismatch\t3 partitions,"
    assert line in result.stdout
    assert "recreate it with 2 partitions" in result.stdout
    last = result.stdout.splitlines()[-1]
    assert last.startswith("FAILED: ")
    assert last.endswith(f"1 mismatch: {changelog_topic(unique_name)} partitions")


@pytest.mark.kafka
def test_a_changelog_that_is_not_compacted_fails_the_check(
    kafka_bootstrap: str, unique_name: str
) -> None:
    make_topics(
        kafka_bootstrap,
        [
            TopicSpec(f"{unique_name}.in", 2, broker_time=True),
            TopicSpec(f"{unique_name}.out", 2),
            TopicSpec(f"{unique_name}.rej", 2),
            TopicSpec(changelog_topic(unique_name), 2),
        ],
    )
    result = invoke(["topics", "check", *pipeline_args(kafka_bootstrap, unique_name), "--json"])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    report = json.loads(result.stdout)
    assert report["ok"] is False
    [bad] = [f for f in report["findings"] if f["status"] == "mismatch"]
    assert (bad["topic"], bad["property"]) == (changelog_topic(unique_name), "cleanup.policy")
    assert bad["fix"].endswith("--add-config cleanup.policy=compact")


@pytest.mark.kafka
def test_a_missing_topic_fails_the_check(kafka_bootstrap: str, unique_name: str) -> None:
    common = pipeline_args(kafka_bootstrap, unique_name)
    created = invoke(["topics", "create", *common, "--partitions", "2"])
    assert created.exit_code == 0, created.stderr
    result = invoke(["topics", "check", *common, "--audit-topic", f"{unique_name}.audit"])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert f"{unique_name}.audit\taudit\texists\tmismatch\tmissing; fix: " in result.stdout
    assert result.stdout.splitlines()[-1].endswith(f"1 mismatch: {unique_name}.audit exists")


@pytest.mark.kafka
def test_an_input_with_producer_timestamps_fails_the_check(
    kafka_bootstrap: str, unique_name: str
) -> None:
    make_topics(
        kafka_bootstrap,
        [
            TopicSpec(f"{unique_name}.in", 1),
            TopicSpec(f"{unique_name}.out", 1),
            TopicSpec(f"{unique_name}.rej", 1),
            TopicSpec(changelog_topic(unique_name), 1, compacted=True),
        ],
    )
    result = invoke(["topics", "check", *pipeline_args(kafka_bootstrap, unique_name)])
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert "\tmessage.timestamp.type\tmismatch\tCreateTime, expected LogAppendTime" in (
        result.stdout
    )


@pytest.mark.kafka
def test_a_config_the_broker_rejects_is_one_line(kafka_bootstrap: str, unique_name: str) -> None:
    common = pipeline_args(kafka_bootstrap, unique_name)
    result = invoke(["topics", "create", *common, "--config", "outbox:no.such.config=1"])
    one_error_line(result, 2, f"topic {unique_name}.out", "no.such.config")
    # The topics the broker accepted were created: a rerun without the config completes.
    again = invoke(["topics", "create", *common])
    assert again.exit_code == 0, again.stderr
    assert f"{unique_name}.out\tcreated" in again.stdout


@pytest.mark.kafka
def test_a_replication_factor_above_the_broker_count_is_one_line(
    kafka_bootstrap: str, unique_name: str
) -> None:
    result = invoke(
        [
            "topics",
            "create",
            *pipeline_args(kafka_bootstrap, unique_name),
            "--replication-factor",
            "3",
        ]
    )
    line = one_error_line(result, 2, "the broker refused to create topics", f"{unique_name}.in")
    # Kafka's wording changed between versions ("Replication factor: 3 larger than
    # available brokers: 1", "The target replication factor of 3 cannot be reached").
    assert "replication factor" in line.lower() and "3" in line
