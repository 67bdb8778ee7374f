"""`seqgate topics create` with production settings and `seqgate topics check`, without a broker.

The decision (`seqgate.runtime.topic_check.check_topics`) and the parsing of `--config` are
tested without a broker, including the replication rules a one-node broker cannot
show; the commands against the real broker are in tests/kafka/test_topics_check.py.
"""

from __future__ import annotations

import pytest

from seqgate.runtime.errors import TopicConfigError
from seqgate.runtime.topic_check import (
    MISMATCH,
    OK,
    WARN,
    DescribedTopic,
    Expectations,
    Finding,
    check_topics,
    mismatches,
    summary,
)
from seqgate.runtime.topics import (
    changelog_topic,
    family_configs,
    parse_topic_config,
    role_specs,
    topic_roles,
)
from tests.support.topics_cli import clean_environment as clean_environment
from tests.support.topics_cli import invoke, one_error_line

ROLES = topic_roles(
    input_topic="in",
    outbox_topic="out",
    rejected_topic="rej",
    application_id="app",
    audit_topic="audit",
    source_topics=["src"],
)
CHANGELOG = changelog_topic("app")
GOOD_CONFIGS = {"cleanup.policy": "delete", "min.insync.replicas": "2"}


def healthy(partitions: int = 6, replicas: int = 3) -> dict[str, DescribedTopic]:
    """Every topic of ROLES as a 3-broker production cluster should have it."""
    described = {
        role.name: DescribedTopic(role.name, partitions, replicas, dict(GOOD_CONFIGS))
        for role in ROLES
    }
    described["in"] = DescribedTopic(
        "in", partitions, replicas, {**GOOD_CONFIGS, "message.timestamp.type": "LogAppendTime"}
    )
    described[CHANGELOG] = DescribedTopic(
        CHANGELOG, partitions, replicas, {**GOOD_CONFIGS, "cleanup.policy": "compact"}
    )
    return described


def changed(
    described: dict[str, DescribedTopic],
    name: str,
    *,
    partitions: int | None = None,
    replicas: int | None = None,
    **configs: str,
) -> dict[str, DescribedTopic]:
    old = described[name]
    described[name] = DescribedTopic(
        name,
        old.partitions if partitions is None else partitions,
        old.replication_factor if replicas is None else replicas,
        {**old.configs, **{key.replace("_", "."): value for key, value in configs.items()}},
    )
    return described


PRODUCTION = Expectations(replication_factor=3, min_insync_replicas=2)


def finding(findings: list[Finding], topic: str, prop: str) -> Finding:
    [found] = [f for f in findings if f.topic == topic and f.property == prop]
    return found


# ---- the decision, without a broker ---------------------------------------------------------


def test_a_healthy_production_layout_has_only_ok_findings() -> None:
    findings = check_topics(ROLES, healthy(), PRODUCTION)
    assert {f.status for f in findings} == {OK}
    assert {(f.topic, f.property) for f in findings} >= {
        ("in", "message.timestamp.type"),
        (CHANGELOG, "cleanup.policy"),
        ("src", "min.insync.replicas"),
    }
    assert summary(findings).startswith("OK: 6 topics, ")


def test_a_missing_topic_is_a_mismatch_with_the_fix() -> None:
    described = healthy()
    del described["out"]
    findings = check_topics(ROLES, described, PRODUCTION)
    missing = finding(findings, "out", "exists")
    assert (missing.status, missing.detail) == (MISMATCH, "missing")
    assert "seqgate topics create" in missing.fix
    assert [f.property for f in findings if f.topic == "out"] == ["exists"]
    assert summary(findings).startswith("FAILED: ")
    assert "1 mismatch: out exists" in summary(findings)


def test_the_changelog_must_have_the_inputs_partition_count() -> None:
    findings = check_topics(ROLES, changed(healthy(), CHANGELOG, partitions=3), PRODUCTION)
    found = finding(findings, CHANGELOG, "partitions")
    assert found.status == MISMATCH
    assert "3 partitions, the input has 6" in found.detail
    assert "recreate it with 6 partitions" in found.fix
    assert [f.property for f in mismatches(findings)] == ["partitions"]


@pytest.mark.parametrize("topic", ["out", "rej", "audit"])
def test_co_partitioned_topics_should_match_the_input(topic: str) -> None:
    fewer = finding(
        check_topics(ROLES, changed(healthy(), topic, partitions=4), PRODUCTION),
        topic,
        "partitions",
    )
    assert fewer.status == MISMATCH
    assert f"kafka-topics.sh --alter --topic {topic} --partitions 6" in fewer.fix
    more = finding(
        check_topics(ROLES, changed(healthy(), topic, partitions=8), PRODUCTION),
        topic,
        "partitions",
    )
    assert more.status == MISMATCH
    assert "recreate it with 6 partitions" in more.fix


def test_a_source_topic_may_have_any_partition_count() -> None:
    findings = check_topics(ROLES, changed(healthy(), "src", partitions=1), PRODUCTION)
    assert finding(findings, "src", "partitions").status == OK
    assert mismatches(findings) == []


def test_an_expected_partition_count_is_the_reference() -> None:
    expected = Expectations(partitions=12, replication_factor=3, min_insync_replicas=2)
    findings = check_topics(ROLES, healthy(), expected)
    found = finding(findings, "in", "partitions")
    assert found.status == MISMATCH
    assert "6 partitions, expected 12" in found.detail
    assert "--partitions 6" in found.fix
    assert finding(findings, CHANGELOG, "partitions").status == MISMATCH


def test_without_the_input_the_others_are_not_compared() -> None:
    described = changed(healthy(), CHANGELOG, partitions=3)
    del described["in"]
    findings = check_topics(ROLES, described, PRODUCTION)
    assert finding(findings, CHANGELOG, "partitions").status == OK
    assert [(f.topic, f.property) for f in mismatches(findings)] == [("in", "exists")]


def test_a_replication_factor_below_the_expected_one_is_a_mismatch() -> None:
    described = changed(healthy(), "out", replicas=2)
    found = finding(check_topics(ROLES, described, PRODUCTION), "out", "replication.factor")
    assert found.status == MISMATCH
    assert found.detail == "2, expected at least 3"
    assert "kafka-reassign-partitions" in found.fix


def test_replication_factor_one_warns_unless_it_is_expected() -> None:
    described = healthy(replicas=1)
    for name in described:
        changed(described, name, min_insync_replicas="1")
    unasked = check_topics(ROLES, described, Expectations())
    assert finding(unasked, "in", "replication.factor").status == WARN
    assert mismatches(unasked) == []
    asked = check_topics(ROLES, described, Expectations(replication_factor=1))
    assert {f.status for f in asked} == {OK}


def test_min_insync_replicas_below_the_expected_one_is_a_mismatch() -> None:
    described = changed(healthy(), "rej", min_insync_replicas="1")
    found = finding(check_topics(ROLES, described, PRODUCTION), "rej", "min.insync.replicas")
    assert found.status == MISMATCH
    assert "1, expected at least 2" in found.detail
    assert "--entity-name rej --add-config min.insync.replicas=2" in found.fix


def test_min_insync_replicas_equal_to_the_replication_factor_warns() -> None:
    described = changed(healthy(), "out", min_insync_replicas="3")
    findings = check_topics(ROLES, described, PRODUCTION)
    found = finding(findings, "out", "min.insync.replicas")
    assert found.status == WARN
    assert "cannot write" in found.detail
    assert "min.insync.replicas=2" in found.fix
    assert mismatches(findings) == []


def test_min_insync_replicas_above_the_replication_factor_is_a_mismatch() -> None:
    described = changed(healthy(), "out", replicas=2, min_insync_replicas="3")
    found = finding(
        check_topics(ROLES, described, Expectations(replication_factor=2)),
        "out",
        "min.insync.replicas",
    )
    assert found.status == MISMATCH
    assert "no acks=all write" in found.detail
    assert "min.insync.replicas=1" in found.fix


@pytest.mark.parametrize("policy", ["delete", "compact,delete", "delete, compact"])
def test_the_changelog_must_be_compacted_only(policy: str) -> None:
    described = changed(healthy(), CHANGELOG, cleanup_policy=policy)
    found = finding(check_topics(ROLES, described, PRODUCTION), CHANGELOG, "cleanup.policy")
    assert found.status == MISMATCH
    assert "expected compact" in found.detail
    assert found.fix.endswith("--add-config cleanup.policy=compact")


@pytest.mark.parametrize("topic", ["in", "out", "rej", "audit", "src"])
def test_no_other_topic_may_be_compacted(topic: str) -> None:
    described = changed(healthy(), topic, cleanup_policy="compact")
    found = finding(check_topics(ROLES, described, PRODUCTION), topic, "cleanup.policy")
    assert found.status == MISMATCH
    assert "expected delete" in found.detail
    assert found.fix.endswith("--add-config cleanup.policy=delete")


def test_an_outbox_compaction_names_the_accepted_events_it_loses() -> None:
    described = changed(healthy(), "out", cleanup_policy="compact")
    found = finding(check_topics(ROLES, described, PRODUCTION), "out", "cleanup.policy")
    assert "accepted events" in found.detail


def test_the_input_must_be_stamped_by_the_broker() -> None:
    described = changed(healthy(), "in", message_timestamp_type="CreateTime")
    findings = check_topics(ROLES, described, PRODUCTION)
    found = finding(findings, "in", "message.timestamp.type")
    assert found.status == MISMATCH
    assert "expected LogAppendTime" in found.detail
    assert [f for f in findings if f.property == "message.timestamp.type"] == [found]


def test_a_line_holds_topic_family_property_status_and_the_fix() -> None:
    described = changed(healthy(), CHANGELOG, cleanup_policy="delete")
    found = finding(check_topics(ROLES, described, PRODUCTION), CHANGELOG, "cleanup.policy")
    columns = found.line().split("\t")
    assert columns[:4] == [CHANGELOG, "changelog", "cleanup.policy", "mismatch"]
    assert "; fix: kafka-configs.sh" in columns[4]


# ---- --config and --min-insync-replicas, without a broker --------------------------------------

FAMILIES = [role.family for role in ROLES]


def test_a_config_is_family_name_and_value() -> None:
    assert parse_topic_config("outbox:retention.ms=604800000") == (
        "outbox",
        "retention.ms",
        "604800000",
    )
    assert parse_topic_config("all:compression.type=zstd") == ("all", "compression.type", "zstd")


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("retention.ms=1", "expected FAMILY:NAME=VALUE"),
        ("outbox:retention.ms", "expected FAMILY:NAME=VALUE"),
        ("sink:retention.ms=1", "unknown topic family 'sink'"),
        ("outbox:=1", "is not a topic config name"),
        ("outbox:Retention Ms=1", "is not a topic config name"),
        ("outbox:retention.ms=", "no value"),
    ],
)
def test_a_malformed_config_is_refused_with_an_example(value: str, says: str) -> None:
    with pytest.raises(TopicConfigError) as raised:
        family_configs([value], FAMILIES)
    message = str(raised.value)
    assert message.startswith(f"--config {value!r}: ")
    assert says in message


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("changelog:cleanup.policy=delete", "the changelog's cleanup.policy is seqgate's"),
        ("changelog:cleanup.policy=compact", "the changelog's cleanup.policy is seqgate's"),
        ("all:cleanup.policy=delete", "the changelog's cleanup.policy is seqgate's"),
        ("outbox:cleanup.policy=compact", "a compacted outbox topic loses"),
        ("input:message.timestamp.type=CreateTime", "message.timestamp.type is seqgate's"),
        ("all:message.timestamp.type=CreateTime", "message.timestamp.type is seqgate's"),
    ],
)
def test_a_config_seqgate_owns_is_refused(value: str, says: str) -> None:
    with pytest.raises(TopicConfigError) as raised:
        family_configs([value], FAMILIES)
    assert says in str(raised.value)
    assert str(raised.value).endswith("remove it")


def test_a_config_for_a_family_the_command_does_not_create_is_refused() -> None:
    with pytest.raises(TopicConfigError, match=r"no audit topic.*add --audit"):
        family_configs(["audit:retention.ms=1"], ["input", "outbox", "rejected", "changelog"])


def test_family_configs_win_over_all_and_min_insync_replicas() -> None:
    configs = family_configs(
        [
            "all:retention.ms=1000",
            "outbox:retention.ms=2000",
            "rejected:min.insync.replicas=1",
            "outbox:cleanup.policy=delete",
        ],
        FAMILIES,
        min_insync_replicas=2,
    )
    assert configs["outbox"] == {
        "retention.ms": "2000",
        "cleanup.policy": "delete",
        "min.insync.replicas": "2",
    }
    assert configs["rejected"] == {"retention.ms": "1000", "min.insync.replicas": "1"}
    assert configs["changelog"] == {"retention.ms": "1000", "min.insync.replicas": "2"}


def test_the_owned_configs_stay_in_the_specs() -> None:
    configs = family_configs(["all:segment.ms=60000"], FAMILIES, min_insync_replicas=2)
    specs = {spec.name: spec.config() for spec in role_specs(ROLES, 6, configs)}
    assert specs[CHANGELOG]["cleanup.policy"] == "compact"
    assert specs["in"]["message.timestamp.type"] == "LogAppendTime"
    assert all(spec["segment.ms"] == "60000" for spec in specs.values())
    assert all(spec["min.insync.replicas"] == "2" for spec in specs.values())


def test_a_refused_config_is_one_line_and_exit_2() -> None:
    # Refused before any broker is asked: the address is never dialled.
    args = ["topics", "create", "--bootstrap-servers", "127.0.0.1:1"]
    one_error_line(
        invoke([*args, "--config", "changelog:cleanup.policy=delete"]),
        2,
        "--config 'changelog:cleanup.policy=delete'",
        "compact",
    )
    one_error_line(
        invoke([*args, "--config", "input:message.timestamp.type=CreateTime"]),
        2,
        "LogAppendTime",
    )
    one_error_line(invoke([*args, "--config", "sink:retention.ms=1"]), 2, "unknown topic family")
    one_error_line(invoke([*args, "--config", "outbox:retention.ms"]), 2, "FAMILY:NAME=VALUE")


def test_check_on_an_unreachable_broker_is_exit_3() -> None:
    result = invoke(
        ["topics", "check", "--bootstrap-servers", "127.0.0.1:1", "--kafka-timeout", "1"]
    )
    one_error_line(result, 3)
