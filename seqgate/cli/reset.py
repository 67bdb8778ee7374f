"""`seqgate reset`: reprocess input, moving the worker group's offsets and its state."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from seqgate.cli.app import cli
from seqgate.cli.options import (
    application_option,
    input_topic_option,
    kafka_options,
    policy_options,
)
from seqgate.cli.registry_options import registry_options
from seqgate.runtime.errors import UsageError
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.progress import Pace, ProgressLine
from seqgate.schemas.framing import Framing
from seqgate.streams.rules.policy import Policy

if TYPE_CHECKING:
    from seqgate.streams.tools.reset import PartitionOutcome
    from seqgate.streams.tools.reset_plan import ResetPlan, ResetRequest


@cli.command()
@kafka_options
@input_topic_option
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
@registry_options
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
    framing: Framing,
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
    from seqgate.streams.tools.reset_plan import ResetRequest, state_mode, target_from_options

    request = ResetRequest(
        kafka=kafka,
        application_id=application_id,
        input_topic=input_topic,
        target=target_from_options(to_earliest, to_datetime, to_offsets),
        state=state_mode(state),
        policy=policy,
        framing=framing,
    )
    pace = Pace.from_environment()
    ensure_reachable(kafka)  # after the options: a typo is reported without waiting for Kafka
    run_reset(request, dry_run=dry_run, as_json=as_json, pace=pace)


def run_reset(
    request: ResetRequest, *, dry_run: bool, as_json: bool, pace: Pace | None = None
) -> None:
    """Plan the reset, print the plan, and (unless a dry run) apply it and print the outcome."""
    from seqgate.streams.tools.reset import apply, prepare

    plan = prepare(request)
    if not plan.partitions:
        raise UsageError(f"{request.target.describe()}: no partition to reset")
    if as_json and dry_run:
        click.echo(json.dumps({"dry_run": True, **plan.as_dict()}, indent=2))
        return
    if not as_json:
        print_plan(plan, dry_run=dry_run)
    if dry_run:
        return
    with ProgressLine("reset", pace=pace) as meter:

        def echo(line: str) -> None:
            meter.clear()
            click.echo(line, err=as_json)

        outcomes = apply(request, plan, echo, meter)
    if as_json:
        click.echo(
            json.dumps(
                {"dry_run": False, **plan.as_dict(), "done": [o.as_dict() for o in outcomes]},
                indent=2,
            )
        )
        return
    print_outcomes(plan, outcomes)


def print_plan(plan: ResetPlan, *, dry_run: bool) -> None:
    from seqgate.streams.tools.reset_plan import describe_state_step

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


def print_outcomes(plan: ResetPlan, outcomes: list[PartitionOutcome]) -> None:
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
