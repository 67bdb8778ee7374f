"""`seqgate reset`, `seqgate watermark` and `seqgate status`: operating a worker group."""

from __future__ import annotations

import json
import sys

import click

from seqgate.streams.cli.app import cli
from seqgate.streams.cli.options import (
    application_option,
    kafka_options,
    policy_options,
    reach,
    setting,
)
from seqgate.streams.rules.policy import Policy
from seqgate.streams.runtime.errors import CliError
from seqgate.streams.runtime.kafka_settings import KafkaSettings


def _input_topic_option(func: click.decorators.FC) -> click.decorators.FC:
    return setting(
        "--input-topic",
        "SEQGATE_INPUT_TOPIC",
        default="object-events",
        help="Topic of normalized events the workers consume.",
    )(func)


# ---- reset ---------------------------------------------------------------------------------------


@cli.command()
@kafka_options
@_input_topic_option
@application_option
@policy_options
@click.option(
    "--to-earliest", is_flag=True, help="Start every partition again at its earliest offset."
)
@click.option(
    "--to-datetime",
    metavar="ISO8601",
    default=None,
    help="Start every partition at its first record whose time is at or after this"
    " date-time (offsets_for_times; without a zone it is UTC; after the last record:"
    " the end).",
)
@click.option(
    "--to-offsets",
    metavar="P:O[,P:O...]",
    default=None,
    help="Start the listed partitions at these offsets; the other partitions keep their"
    " offsets and their state.",
)
@click.option(
    "--state",
    "state",
    metavar="empty|rebuild",
    default=None,
    help="Required. empty: forget the watermarks of the reset partitions (replayed events"
    " are decided as new). rebuild: set them to what a worker would hold after processing"
    " the input up to the new offsets (give the workers' policy options).",
)
@click.option("--dry-run", is_flag=True, help="Print the plan and change nothing.")
@click.option("--json", "as_json", is_flag=True, help="Print the plan and the result as JSON.")
def reset(
    kafka: KafkaSettings,
    input_topic: str,
    application_id: str,
    policy: Policy,
    to_earliest: bool,
    to_datetime: str | None,
    to_offsets: str | None,
    state: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Reprocess input: move the worker group's offsets and reset its state with them.

    Refuses while the group has members (stop the workers first; a stopped worker
    stays a member until its session times out). The state of each reset partition
    is written to the changelog as a diff in one transaction, so every worker's
    RocksDB store catches up on its next start: no local directory to delete.
    Then the new offsets are committed for the group. The outbox is not touched:
    to compare or replace it, start the workers with another --outbox-topic.
    Details: docs/operations.md.

    \b
    Example (reprocess everything from the start, from empty state):
      seqgate reset --bootstrap-servers 127.0.0.1:9092 --application-id seqgate \\
        --to-earliest --state empty --dry-run
      seqgate reset --bootstrap-servers 127.0.0.1:9092 --application-id seqgate \\
        --to-earliest --state empty
    \b
    Example (resume partition 2 at offset 1200, state as of there):
      seqgate reset --to-offsets 2:1200 --state rebuild --ordering aws
    """
    from seqgate.streams.tools.reset import apply, prepare
    from seqgate.streams.tools.reset_plan import (
        ResetError,
        ResetRequest,
        describe_state_step,
        state_mode,
        target_from_options,
    )

    try:
        request = ResetRequest(
            kafka=kafka,
            application_id=application_id,
            input_topic=input_topic,
            target=target_from_options(to_earliest, to_datetime, to_offsets),
            state=state_mode(state),
            policy=policy,
        )
    except ResetError as error:
        raise CliError(str(error)) from error
    reach(kafka)  # after the options: a typo is reported without waiting for Kafka
    try:
        plan = prepare(request)
    except ResetError as error:
        raise CliError(str(error)) from error
    if not plan.partitions:
        raise CliError(f"{request.target.describe()}: no partition to reset")
    if as_json and dry_run:
        click.echo(json.dumps({"dry_run": True, **plan.as_dict()}, indent=2))
        return
    if not as_json:
        click.echo(
            f"{'dry run: nothing is changed; ' if dry_run else ''}reset of group {plan.group}"
            f" on {plan.input_topic} {plan.target.describe()} --state {plan.state.value}"
        )
        click.echo("partition\tcommitted\tnew_offset\tearliest\tend")
        for p in plan.partitions:
            committed = "none" if p.committed is None else str(p.committed)
            click.echo(f"{p.partition}\t{committed}\t{p.new_offset}\t{p.earliest}\t{p.end}")
        click.echo(describe_state_step(plan))
        if plan.state.value == "rebuild":
            for p in plan.partitions:
                if p.earliest > 0:
                    click.echo(
                        f"note: input partition {p.partition} starts at offset {p.earliest}"
                        " (retention): the rebuilt state reflects only the records it still"
                        " holds"
                    )
    if dry_run:
        return
    echo = (lambda line: click.echo(line, err=True)) if as_json else click.echo
    try:
        outcomes = apply(request, plan, echo)
    except ResetError as error:
        raise CliError(str(error)) from error
    if as_json:
        click.echo(
            json.dumps(
                {"dry_run": False, **plan.as_dict(), "done": [o.as_dict() for o in outcomes]},
                indent=2,
            )
        )
        return
    for outcome in outcomes:
        before = "none" if outcome.committed is None else str(outcome.committed)
        click.echo(
            f"partition {outcome.partition}: offset {before} -> {outcome.new_offset};"
            f" state {outcome.state_keys} keys ({outcome.written} written,"
            f" {outcome.tombstoned} tombstoned)"
        )
    click.echo(
        f"reset done: group {plan.group} resumes at the new offsets; each worker's local store"
        " catches up from the changelog when it starts (nothing to delete locally)"
    )


# ---- watermark ---------------------------------------------------------------------------------


@cli.command()
@kafka_options
@_input_topic_option
@application_option
@click.option("--json", "as_json", is_flag=True, help="Print the watermark as JSON.")
@click.argument("identity")
def watermark(
    kafka: KafkaSettings, input_topic: str, application_id: str, as_json: bool, identity: str
) -> None:
    """Show the committed watermark of one object.

    IDENTITY is the object's key in the input topic: `<scheme>://<bucket>/<key>`
    with the key decoded (e.g. `s3://example-input/incoming/June report+final.csv`).
    Reads the changelog partition that holds it (murmur2 of the identity, like the
    producers) with read_committed: what the workers have committed, never an open
    transaction. Shows the position, the event id and the input partition and offset
    of the event that set it. Exits 1 when the object has no committed watermark
    (no event of it accepted yet, or its source is dedupe-only).

    \b
    Example:
      seqgate watermark --bootstrap-servers 127.0.0.1:9092 \\
        's3://example-input/incoming/June report+final.csv'
    """
    from seqgate.streams.runtime.topics import changelog_topic
    from seqgate.streams.tools.inspect import InspectError, find_watermark

    changelog = changelog_topic(application_id)
    reach(kafka)
    try:
        partition, view = find_watermark(kafka, application_id, input_topic, changelog, identity)
    except InspectError as error:
        raise CliError(str(error)) from error
    if view is None:
        click.echo(
            f"no committed watermark for {identity} in {changelog} partition {partition}: no"
            " event of it was accepted and committed yet, or its source is dedupe-only"
            " (--ordered-sources)",
            err=True,
        )
        sys.exit(1)
    if as_json:
        click.echo(json.dumps(view.as_dict(), indent=2))
        return
    for name, value in view.as_dict().items():
        click.echo(f"{name}: {value}")


# ---- status ------------------------------------------------------------------------------------


@cli.command()
@kafka_options
@_input_topic_option
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
    Times are UTC.

    \b
    Example:
      seqgate status --bootstrap-servers 127.0.0.1:9092 --application-id seqgate
    """
    from seqgate.streams.runtime.topics import changelog_topic
    from seqgate.streams.tools.inspect import InspectError, format_time, group_status

    reach(kafka)
    try:
        report = group_status(kafka, application_id, input_topic, changelog_topic(application_id))
    except InspectError as error:
        raise CliError(str(error)) from error
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
        return
    group = report.group
    click.echo(f"group {group.group}: {group.state}, {len(group.members)} member(s)")
    for member in group.members:
        assigned = ",".join(str(p) for p in member.partitions) or "none"
        click.echo(f"  member {member.describe()}: partitions {assigned}")
    click.echo("partition\tcommitted\tend\tlag\tlast_commit")
    for row in report.partitions:
        committed = "none" if row.committed is None else str(row.committed)
        when = format_time(row.last_commit_ms) or "-"
        click.echo(f"{row.partition}\t{committed}\t{row.end}\t{row.lag}\t{when}")
    click.echo(f"total lag: {report.total_lag()}")
