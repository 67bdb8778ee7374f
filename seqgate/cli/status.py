"""`seqgate status`: the worker group's state, members and progress."""

from __future__ import annotations

import json

import click

from seqgate.cli.app import cli
from seqgate.cli.options import application_option, input_topic_option, kafka_options
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings


@cli.command()
@kafka_options
@input_topic_option
@application_option
@click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
def status(kafka: KafkaSettings, input_topic: str, application_id: str, as_json: bool) -> None:
    """Show the worker group: its state, members and, per input partition, progress.

    Per partition: `committed` is the group's committed offset (offsets still pending in
    an open transaction are not counted), `end` the input's last stable offset (what a
    read_committed worker can reach), `lag` = end - committed (transaction markers of a
    transactional input producer count as offsets too), and `last_commit` the time of
    the newest record in the partition's changelog, i.e. of the last committed
    transaction that changed its state (a transaction of only duplicates writes none).
    `standbys` lists the workers keeping a standby replica of the partition
    (--standby-replicas) and how many changelog records each has yet to apply, and
    `restoring` the worker restoring the partition's state and how many changelog records
    it has yet to read, both as reported within the last seconds. Times are UTC.

    \b
    Example:
      seqgate status --bootstrap-servers 127.0.0.1:9092 --application-id seqgate
    """
    from seqgate.runtime.topics import changelog_topic
    from seqgate.streams.tools.inspect import format_time, group_status

    ensure_reachable(kafka)
    report = group_status(kafka, application_id, input_topic, changelog_topic(application_id))
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
        return
    group = report.group
    click.echo(f"group {group.group}: {group.state}, {len(group.members)} member(s)")
    for member in group.members:
        assigned = ",".join(str(p) for p in member.partitions) or "none"
        click.echo(f"  member {member.describe()}: partitions {assigned}")
    click.echo("partition\tcommitted\tend\tlag\tlast_commit\tstandbys\trestoring")
    for row in report.partitions:
        committed = "none" if row.committed is None else str(row.committed)
        when = format_time(row.last_commit_ms) or "-"
        standbys = ",".join(standby.describe() for standby in row.standbys) or "-"
        restoring = "-" if row.restoring is None else row.restoring.describe()
        click.echo(
            f"{row.partition}\t{committed}\t{row.end}\t{row.lag}\t{when}\t{standbys}\t{restoring}"
        )
    click.echo(f"total lag: {report.total_lag()}")
