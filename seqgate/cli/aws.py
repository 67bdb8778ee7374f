"""`seqgate aws configure-notifications|queue-policy`: set up S3 to notify seqgate."""

from __future__ import annotations

import json
from typing import Any

import click

from seqgate.cli.app import cli
from seqgate.cli.options import F, setting
from seqgate.cli.param_types import HttpUrl
from seqgate.connectors.aws.notification_rules import (
    DestinationKind,
    MergeResult,
    check_output_prefixes,
    check_region,
    destination_policy,
    literal_filter,
    merge_eventbridge,
    merge_rule,
    new_rule,
    parse_destination,
    select_events,
)
from seqgate.connectors.aws.notification_setup import (
    bucket_region,
    read_configuration,
    s3_client,
    write_configuration,
)
from seqgate.runtime.errors import UsageError


@cli.group()
def aws() -> None:
    """Configure Amazon S3 (or an S3-compatible emulator) to notify seqgate.

    \b
    Example:
      seqgate aws configure-notifications --bucket uploads --prefix incoming/ \\
        --destination arn:aws:sqs:eu-west-1:111122223333:s3-events
    """


def _bucket_and_destination(func: F) -> F:
    func = setting(
        "--destination",
        "SEQGATE_NOTIFICATION_DESTINATION",
        required=True,
        help="SQS queue ARN, SNS topic ARN, or 'eventbridge'.",
    )(func)
    return setting(
        "--bucket",
        "SEQGATE_NOTIFICATION_BUCKET",
        required=True,
        help="The bucket whose notifications to configure.",
    )(func)


@aws.command("configure-notifications")
@_bucket_and_destination
@click.option(
    "--events",
    "events",
    multiple=True,
    help="Event type to select (repeatable), e.g. s3:ObjectRemoved:*. Default:"
    " s3:ObjectCreated:* (every upload path: PUT, POST, copy, multipart).",
)
@click.option("--prefix", default=None, help="Literal key prefix the rule selects (no '*').")
@click.option("--suffix", default=None, help="Literal key suffix the rule selects (no '*').")
@click.option(
    "--output-prefix",
    "output_prefixes",
    multiple=True,
    help="Where your consumer writes derived objects into this bucket (repeatable): refused"
    " when the rule would match them, which would trigger the consumer in a loop.",
)
@click.option("--id", "rule_id", default=None, help="The rule's Id. Default: seqgate-<hash>.")
@click.option("--dry-run", is_flag=True, help="Print the merged configuration; write nothing.")
@setting(
    "--endpoint-url",
    "SEQGATE_S3_ENDPOINT_URL",
    default=None,
    type=HttpUrl("http://127.0.0.1:5000", path=False),
    help="S3 endpoint (moto, MinIO, a VPC endpoint); default: AWS's for the region.",
)
@setting(
    "--region",
    "SEQGATE_AWS_REGION",
    default=None,
    help="AWS region of the bucket; default: AWS_REGION / AWS_DEFAULT_REGION / the profile.",
)
def configure_notifications(
    bucket: str,
    destination: str,
    events: tuple[str, ...],
    prefix: str | None,
    suffix: str | None,
    output_prefixes: tuple[str, ...],
    rule_id: str | None,
    dry_run: bool,
    endpoint_url: str | None,
    region: str | None,
) -> None:
    """Add one notification rule to a bucket, keeping every other rule.

    Reads the bucket's notification configuration, merges the rule and writes
    the whole configuration back (S3 replaces it on every write). Refuses,
    writing nothing: a rule overlapping an existing one, a wildcard in a
    filter, an --output-prefix the rule would match. A rule already present
    (same destination, events and filters) is reported and nothing is written.
    With --destination eventbridge, turns on EventBridge delivery (every
    event, no filters). The destination must let S3 send to it: see
    `seqgate aws queue-policy`.

    \b
    Example:
      seqgate aws configure-notifications --bucket uploads \\
        --destination arn:aws:sqs:eu-west-1:111122223333:s3-events \\
        --prefix incoming/ --output-prefix processed/ --dry-run
    """
    target = parse_destination(destination)
    if target.kind is DestinationKind.EVENTBRIDGE and (events or prefix or suffix or rule_id):
        raise UsageError(
            "--events/--prefix/--suffix/--id: S3 sends every event to EventBridge, without"
            " filters; select events in the EventBridge rule's pattern instead"
        )

    def plan(current: dict[str, Any]) -> MergeResult:
        chosen = select_events(events)
        key_prefix = literal_filter(prefix, "--prefix")
        key_suffix = literal_filter(suffix, "--suffix")
        check_output_prefixes(target, chosen, key_prefix, output_prefixes)
        if target.kind is DestinationKind.EVENTBRIDGE:
            return merge_eventbridge(current)
        return merge_rule(current, new_rule(target, chosen, key_prefix, key_suffix, rule_id))

    # Refuse what the options alone decide before asking S3 anything.
    plan({})
    client = s3_client(region, endpoint_url)
    if target.region is not None:
        check_region(target, bucket_region(client, bucket))
    current = read_configuration(client, bucket)
    result: MergeResult = plan(current)
    if dry_run:
        click.echo(json.dumps(result.configuration, indent=2, sort_keys=True))
        return
    if not result.changed:
        click.echo(f"{result.note}; nothing written to bucket {bucket!r}")
        return
    write_configuration(client, bucket, result.configuration)
    click.echo(f"bucket {bucket!r}: {result.note}")


@aws.command("queue-policy")
@_bucket_and_destination
@setting(
    "--account-id",
    "SEQGATE_AWS_ACCOUNT_ID",
    required=True,
    help="The 12-digit account that owns the bucket (the policy's aws:SourceAccount).",
)
def queue_policy(bucket: str, destination: str, account_id: str) -> None:
    """Print the access policy that lets S3 send this bucket's notifications.

    For an SQS queue: SQS:SendMessage for the service principal
    s3.amazonaws.com, only when aws:SourceArn is the bucket's ARN and
    aws:SourceAccount the bucket owner's account (so no other bucket, nor a
    bucket of the same name in another account, can use the queue). For an
    SNS topic: the same with SNS:Publish. Set it as the queue's Policy
    attribute (or the topic's), merged with any statements it already has.

    \b
    Example:
      seqgate aws queue-policy --bucket uploads --account-id 111122223333 \\
        --destination arn:aws:sqs:eu-west-1:111122223333:s3-events
    """
    target = parse_destination(destination)
    policy = destination_policy(target, bucket, account_id)
    click.echo(json.dumps(policy, indent=2))
