"""`seqgate topics create` and `seqgate topics check`."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

import click

from seqgate.cli.app import cli
from seqgate.cli.options import (
    F,
    application_option,
    audit_topic_of,
    kafka_options,
    setting,
    stacked,
    topic_options,
)
from seqgate.runtime.errors import UsageError
from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import FAMILIES, TopicRole, topic_roles


@cli.group()
def topics() -> None:
    """Manage the pipeline's topics.

    \b
    Example:
      seqgate topics create --bootstrap-servers 127.0.0.1:9092
      seqgate topics check --bootstrap-servers 127.0.0.1:9092
    """


def _extra_topic_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """--source-topic, --audit and --audit-topic, shared by create and check."""
    options = [
        click.option(
            "--source-topic",
            "source_topics",
            multiple=True,
            metavar="TOPIC",
            help="Also this topic of raw notifications for `bridge kafka --from` (repeatable).",
        ),
        click.option(
            "--audit",
            is_flag=True,
            help="Also the audit log topic object-events.decisions (`seqgate worker --audit`).",
        ),
        setting(
            "--audit-topic",
            "SEQGATE_AUDIT_TOPIC",
            default=None,
            help="Also this audit log topic (`seqgate worker --audit-topic`).",
        ),
    ]
    return stacked(func, options)


def _roles(
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    source_topics: tuple[str, ...],
    audit: bool,
    audit_topic: str | None,
) -> list[TopicRole]:
    return topic_roles(
        input_topic=input_topic,
        outbox_topic=outbox_topic,
        rejected_topic=rejected_topic,
        application_id=application_id,
        audit_topic=audit_topic_of(audit_topic, audit),
        source_topics=source_topics,
    )


def _sizing_options(
    *, partitions: int | None, partitions_help: str, replication_help: str, min_insync_help: str
) -> Callable[[F], F]:
    """--partitions, --replication-factor and --min-insync-replicas: what create makes,
    or the least that check accepts."""

    def decorate(func: F) -> F:
        options = [
            setting(
                "--partitions",
                "SEQGATE_PARTITIONS",
                default=partitions,
                type=click.IntRange(1, 10_000),
                help=partitions_help,
            ),
            setting(
                "--replication-factor",
                "SEQGATE_REPLICATION_FACTOR",
                default=None,
                type=click.IntRange(1, 32),
                help=replication_help,
            ),
            setting(
                "--min-insync-replicas",
                "SEQGATE_MIN_INSYNC_REPLICAS",
                default=None,
                type=click.IntRange(1, 32),
                help=min_insync_help,
            ),
        ]
        return stacked(func, options)

    return decorate


_FAMILY_LIST = ", ".join((*FAMILIES, "all"))


@topics.command("create")
@kafka_options
@topic_options
@application_option
@_sizing_options(
    partitions=6,
    partitions_help="Partitions of every topic (the changelog must match the input).",
    replication_help="Replicas of every topic. Default: the brokers' default.replication.factor.",
    min_insync_help="min.insync.replicas of every topic created (use replication factor - 1,"
    " e.g. 2 of 3). Default: the brokers' min.insync.replicas.",
)
@click.option(
    "--config",
    "topic_configs",
    multiple=True,
    metavar="FAMILY:NAME=VALUE",
    help=f"A topic config for the topics of one family ({_FAMILY_LIST}), repeatable, e.g."
    " --config outbox:retention.ms=604800000. Refused: the changelog's cleanup.policy,"
    " the input's message.timestamp.type, compaction of any other topic.",
)
@_extra_topic_options
def topics_create(
    kafka: KafkaSettings,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    partitions: int,
    replication_factor: int | None,
    min_insync_replicas: int | None,
    topic_configs: tuple[str, ...],
    source_topics: tuple[str, ...],
    audit: bool,
    audit_topic: str | None,
) -> None:
    """Create the input, outbox, rejected and changelog topics (idempotent).

    With --audit (or --audit-topic) also the worker's audit log topic, with as
    many partitions as the input. Existing topics are left as they are (check
    them with `seqgate topics check`).

    \b
    Example:
      seqgate topics create --bootstrap-servers 127.0.0.1:9092 --partitions 6 \\
        --source-topic minio-events
      seqgate topics create --bootstrap-servers kafka-1:9092 --replication-factor 3 \\
        --min-insync-replicas 2 --config outbox:retention.ms=604800000
    """
    from confluent_kafka.admin import AdminClient

    from seqgate.runtime.topics import (
        BROKER_DEFAULT_REPLICATION,
        create_topics,
        family_configs,
        role_specs,
    )

    roles = _roles(
        input_topic,
        outbox_topic,
        rejected_topic,
        application_id,
        source_topics,
        audit,
        audit_topic,
    )
    configs = family_configs(topic_configs, [role.family for role in roles], min_insync_replicas)
    specs = role_specs(roles, partitions, configs)
    ensure_reachable(kafka)
    admin = AdminClient(client_config(kafka))
    factor = BROKER_DEFAULT_REPLICATION if replication_factor is None else replication_factor
    try:
        result = create_topics(admin, specs, factor, timeout=kafka.timeout_s)
    except ValueError as error:
        raise UsageError(kafka.mask(str(error))) from error
    for name, status in result.items():
        click.echo(f"{name}\t{status}")


@topics.command("check")
@kafka_options
@topic_options
@application_option
@_sizing_options(
    partitions=None,
    partitions_help="Partitions the input must have. Default: whatever it has; the others are"
    " compared with it.",
    replication_help="The smallest replication factor accepted. Default: any, with a warning"
    " for 1.",
    min_insync_help="The smallest min.insync.replicas accepted. Default: any up to the"
    " replication factor.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@_extra_topic_options
def topics_check(
    kafka: KafkaSettings,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    partitions: int | None,
    replication_factor: int | None,
    min_insync_replicas: int | None,
    as_json: bool,
    source_topics: tuple[str, ...],
    audit: bool,
    audit_topic: str | None,
) -> None:
    """Check that every topic seqgate uses exists and fits what it relies on.

    One line per topic and property: TOPIC, FAMILY, PROPERTY, ok | warn |
    mismatch, and what was found (with the fix), then a summary. Checked:
    partitions (the changelog must match the input; the outbox, rejected
    and audit topics should), replication factor, min.insync.replicas
    (below the replication factor), cleanup.policy (compact for the changelog
    only) and the input's LogAppendTime timestamps. Exits 0 when nothing is a
    mismatch (warnings included), 1 otherwise.

    \b
    Example:
      seqgate topics check --bootstrap-servers kafka-1:9092 --replication-factor 3 \\
        --min-insync-replicas 2 --audit
    """
    from confluent_kafka.admin import AdminClient

    from seqgate.runtime.errors import TopicCheckError
    from seqgate.runtime.topic_check import (
        Expectations,
        check_topics,
        describe_topics,
        mismatches,
        summary,
    )

    roles = _roles(
        input_topic,
        outbox_topic,
        rejected_topic,
        application_id,
        source_topics,
        audit,
        audit_topic,
    )
    ensure_reachable(kafka)
    admin = AdminClient(client_config(kafka))
    try:
        described = describe_topics(admin, [role.name for role in roles], kafka.timeout_s)
    except TopicCheckError as error:
        raise UsageError(kafka.mask(str(error))) from error
    expected = Expectations(partitions, replication_factor, min_insync_replicas)
    findings = check_topics(roles, described, expected)
    if as_json:
        report = {
            "ok": not mismatches(findings),
            "summary": summary(findings),
            "findings": [finding.as_dict() for finding in findings],
        }
        click.echo(json.dumps(report, indent=2))
    else:
        for finding in findings:
            click.echo(finding.line())
        click.echo(summary(findings))
    if mismatches(findings):
        sys.exit(1)
