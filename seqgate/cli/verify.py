"""`seqgate verify`: the outbox against a replay of the input."""

from __future__ import annotations

import json
import sys

import click

from seqgate.cli.app import cli
from seqgate.cli.options import (
    application_option,
    kafka_options,
    policy_options,
    topic_options,
)
from seqgate.cli.registry_options import registry_options
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.framing import Framing
from seqgate.streams.rules.policy import Policy


@cli.command()
@kafka_options
@topic_options
@application_option
@policy_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@registry_options
def verify(
    kafka: KafkaSettings,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    policy: Policy,
    as_json: bool,
    framing: Framing,
) -> None:
    """Check the outbox against a replay of the input (docs/design.md §5.7's invariant).

    Replays each input partition up to the group's committed offset through
    the worker's decision rule, and compares with the outbox as a
    read_committed consumer sees it and with the committed watermarks.
    Use the same --ordering and --admit-kinds as the workers. Exits 0 when
    nothing is missing, unexpected, duplicated or out of order, 1 otherwise.
    A run longer than a few seconds shows its progress on stderr (docs/operations.md).

    \b
    Example:
      seqgate verify --bootstrap-servers 127.0.0.1:9092 --application-id seqgate
    """
    from seqgate.runtime.progress import Pace, ProgressLine
    from seqgate.runtime.topics import changelog_topic
    from seqgate.streams.tools.verify import COUNTS, PartitionReport, VerifyTarget
    from seqgate.streams.tools.verify import verify as run_verify

    pace = Pace.from_environment()  # a bad setting is reported without waiting for Kafka
    ensure_reachable(kafka)
    target = VerifyTarget(
        kafka=kafka,
        application_id=application_id,
        input_topic=input_topic,
        outbox_topic=outbox_topic,
        changelog_topic=changelog_topic(application_id),
        policy=policy,
        rejected_topic=rejected_topic,
        framing=framing,
    )

    with ProgressLine("verify", pace=pace) as meter:

        def progress(total: int, report: PartitionReport) -> None:
            meter.say(
                f"verified partition {report.partition + 1}/{total}:"
                f" {report.inputs} inputs, {report.problems()} problems"
            )

        report = run_verify(target, progress=progress, meter=meter)
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
    else:
        columns = ("partition", "committed_offset", *COUNTS)
        click.echo("\t".join(columns))
        for partition in report.partitions:
            click.echo("\t".join(str(getattr(partition, name)) for name in columns))
        totals = report.totals()
        click.echo("total\t-\t" + "\t".join(str(totals[n]) for n in COUNTS))
        for partition in report.partitions:
            for example in partition.examples:
                click.echo(f"partition {partition.partition}: {example}")
        click.echo("OK: the outbox is exactly the replay of the input" if report.ok() else "FAILED")
    if not report.ok():
        sys.exit(1)
