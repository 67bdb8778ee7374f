"""`seqgate topics create` and `seqgate parse`."""

from __future__ import annotations

import json

import click

from connectors.errors import Rejection, RejectReason
from connectors.file_source import RawMessage, read_messages
from connectors.normalize import normalize, normalize_with
from connectors.providers import PROVIDERS, provider_parser
from connectors.results import describe
from connectors.s3_native import S3ParseOptions
from schemas.records import ObjectEvent
from streams.cli.app import cli
from streams.cli.options import (
    application_option,
    kafka_options,
    reach,
    s3_parse_option,
    setting,
    topic_options,
)
from streams.errors import CliError
from streams.kafka_clients import client_config
from streams.kafka_settings import KafkaSettings
from streams.ordering import PositionOrder, order_named

# ---- topics ------------------------------------------------------------------------------------


@cli.group()
def topics() -> None:
    """Manage the pipeline's topics.

    \b
    Example:
      seqgate topics create --bootstrap-servers 127.0.0.1:9092
    """


@topics.command("create")
@kafka_options
@topic_options
@application_option
@setting(
    "--partitions",
    "SEQGATE_PARTITIONS",
    default=6,
    type=click.IntRange(1, 10_000),
    help="Partitions of every topic (the changelog must match the input).",
)
@setting(
    "--replication-factor",
    "SEQGATE_REPLICATION_FACTOR",
    default=1,
    type=click.IntRange(1, 32),
)
@click.option(
    "--source-topic",
    "source_topics",
    multiple=True,
    metavar="TOPIC",
    help="Also create this topic of raw notifications for `bridge kafka --from` (repeatable).",
)
@click.option(
    "--audit",
    is_flag=True,
    help="Also create the audit log topic object-events.decisions (`seqgate worker --audit`).",
)
@setting(
    "--audit-topic",
    "SEQGATE_AUDIT_TOPIC",
    default=None,
    help="Also create this audit log topic (`seqgate worker --audit-topic`).",
)
def topics_create(
    kafka: KafkaSettings,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    partitions: int,
    replication_factor: int,
    source_topics: tuple[str, ...],
    audit: bool,
    audit_topic: str | None,
) -> None:
    """Create the input, outbox, dead-letter and changelog topics (idempotent).

    With --audit (or --audit-topic) also the worker's audit log topic, with as
    many partitions as the input.

    \b
    Example:
      seqgate topics create --bootstrap-servers 127.0.0.1:9092 --partitions 6 \\
        --source-topic minio-events
    """
    from confluent_kafka.admin import AdminClient

    from streams.cli.worker import DEFAULT_AUDIT_TOPIC
    from streams.topics import TopicSpec, create_topics, pipeline_topics

    specs = pipeline_topics(
        input_topic=input_topic,
        outbox_topic=outbox_topic,
        rejected_topic=rejected_topic,
        application_id=application_id,
        partitions=partitions,
    ) + [TopicSpec(name, partitions) for name in source_topics]
    if audit_topic or audit:
        specs.append(TopicSpec(audit_topic or DEFAULT_AUDIT_TOPIC, partitions))
    reach(kafka)
    admin = AdminClient(client_config(kafka))
    try:
        result = create_topics(admin, specs, replication_factor)
    except ValueError as error:
        raise CliError(str(error)) from error
    for name, status in result.items():
        click.echo(f"{name}\t{status}")


# ---- parse -------------------------------------------------------------------------------------


@cli.command()
@click.argument("files", nargs=-1, required=True)
@setting(
    "--ordering",
    "SEQGATE_ORDERING",
    type=click.Choice(["aws", "numeric"]),
    default="aws",
    help="Check each position as the worker would under this ordering.",
)
@click.option("--jsonl", is_flag=True, help="Read one document per line (default: by content).")
@click.option(
    "--provider",
    type=click.Choice(["auto", *PROVIDERS]),
    default="auto",
    help="Read every body with this provider's parser (default: recognize each by shape;"
    " Cloudinary and Appwrite bodies must be named).",
)
@click.option("--cloud-name", help="With --provider cloudinary: the cloud the body came from.")
@click.option(
    "--appwrite-events",
    help="With --provider appwrite: the X-Appwrite-Webhook-Events header that came with it.",
)
@s3_parse_option
def parse(
    files: tuple[str, ...],
    ordering: str,
    jsonl: bool,
    provider: str,
    cloud_name: str | None,
    appwrite_events: str | None,
    s3_options: S3ParseOptions,
) -> None:
    """Normalize notifications offline and print one JSON line per record.

    Lines come in input order: {"status": "event", <ObjectEvent fields>},
    {"status": "ignored", "reason": ...} or {"status": "rejected", "reason":
    <code>, "message": ..., "record_index": <n>}. Exits 0 whatever the records
    held, 2 when an input cannot be read. FILE is a JSON document or JSON
    Lines; - reads stdin.

    \b
    Example:
      seqgate parse notifications/guide.jsonl
      aws sqs receive-message --queue-url "$Q" | seqgate parse -
      seqgate parse --provider cloudinary --cloud-name demo upload.json
    """
    order = order_named(ordering)
    parser = None
    if provider != "auto":
        try:
            parser = provider_parser(
                provider, cloud_name=cloud_name, appwrite_events=appwrite_events
            )
        except ValueError as error:
            raise CliError(f"--cloud-name: {error}") from error
    for path in files:
        for message in _read(path, jsonl):
            if parser is None:
                result = normalize(message.raw, message.origin, s3_options)
            else:
                result = normalize_with(message.raw, message.origin, parser)
            for item in result.items:
                if isinstance(item, ObjectEvent) and item.position is not None:
                    item = _checked_position(item, order)
                click.echo(json.dumps(describe(item, message.origin), sort_keys=True))


def _checked_position(event: ObjectEvent, order: PositionOrder) -> ObjectEvent | Rejection:
    try:
        order.canonical(event.position or "")
    except ValueError as error:
        return Rejection(RejectReason.INVALID_SEQUENCER, f"{event.id}: {error}")
    return event


def _read(path: str, jsonl: bool = False) -> list[RawMessage]:
    try:
        return list(read_messages(path, jsonl=jsonl))
    except OSError as error:
        raise CliError(f"{path}: cannot read it ({error.strerror})") from error
