"""`seqgate tail`: the records of a topic as JSON lines."""

from __future__ import annotations

import json
import os
import sys

import click

from seqgate.cli.app import cli
from seqgate.cli.options import (
    DEFAULT_AUDIT_TOPIC,
    F,
    application_option,
    kafka_options,
    setting,
    stacked,
    topic_options,
)
from seqgate.cli.registry_options import registry_options
from seqgate.runtime.errors import UsageError
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.framing import Framing
from seqgate.streams.tools.tail import RECORD_TYPES


def _reading_options(func: F) -> F:
    """Where to start and stop, and how to decode."""
    options = [
        click.option(
            "--from-beginning",
            is_flag=True,
            help="Start at the earliest record (default: at the end, waiting for new ones).",
        ),
        click.option(
            "--offset",
            type=click.IntRange(0),
            help="Start at this offset of the one --partition.",
        ),
        click.option(
            "--partition",
            "partitions",
            type=click.IntRange(0),
            multiple=True,
            help="Read only this partition (repeatable). Default: every partition.",
        ),
        click.option(
            "--follow",
            is_flag=True,
            help="Keep waiting for new records until SIGTERM or Ctrl-C (default with neither"
            " --from-beginning nor --offset); else stop at the ends the topic had at the start.",
        ),
        click.option(
            "--max",
            "limit",
            type=click.IntRange(1),
            help="Stop after this many records.",
        ),
        click.option(
            "--read-uncommitted",
            is_flag=True,
            help="Also show the records of aborted and open transactions (diagnosis);"
            " default: read_committed, what the workers and downstream see.",
        ),
        click.option(
            "--type",
            "record_type",
            type=click.Choice(sorted(RECORD_TYPES)),
            help="The record type of Confluent-framed values (read as its current schema"
            " without --schema-registry-url; with it, as the writer schema their id names)."
            " Default: the type seqgate writes to TOPIC when it is the input, outbox,"
            " rejected or audit topic; single-object values name their own type.",
        ),
        setting(
            "--audit-topic",
            "SEQGATE_AUDIT_TOPIC",
            default=DEFAULT_AUDIT_TOPIC,
            help="The audit log topic (for the default --type).",
        ),
    ]
    return stacked(func, options)


def _start(from_beginning: bool, offset: int | None, partitions: tuple[int, ...]) -> int | str:
    if offset is None:
        return "beginning" if from_beginning else "end"
    if from_beginning:
        raise UsageError("--offset and --from-beginning: give one of them")
    if len(partitions) != 1:
        raise UsageError("--offset needs exactly one --partition (offsets are per partition)")
    return offset


@cli.command()
@kafka_options
@topic_options
@application_option
@_reading_options
@click.argument("topic")
@registry_options
def tail(
    kafka: KafkaSettings,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    audit_topic: str,
    from_beginning: bool,
    offset: int | None,
    partitions: tuple[int, ...],
    follow: bool,
    limit: int | None,
    read_uncommitted: bool,
    record_type: str | None,
    topic: str,
    framing: Framing,
) -> None:
    """Print the records of TOPIC as JSON lines, decoded from either Avro encoding.

    One line per record: topic, partition, offset, timestamp (UTC), key (text, or base64
    with "key_base64": true), encoding (single-object, confluent with its schema_id, or
    raw), type and the decoded fields under "value" (bytes fields as base64). A record
    that cannot be decoded (a tombstone, foreign bytes, a truncated frame) has "raw"
    (base64) and "reason" instead of "value". Reads with read_committed, assigning
    partitions itself: it joins no group and commits nothing. Without --from-beginning
    or --offset it starts at the end and follows, as kafka-console-consumer does. Exits
    2 for an unknown topic or partition.

    \b
    Example:
      seqgate tail --bootstrap-servers 127.0.0.1:9092 --from-beginning --max 10 \\
        object-events.outbox
      seqgate tail --partition 2 --offset 1500 --read-uncommitted object-events.outbox
    """
    from seqgate.cli.running import stop_on_signals
    from seqgate.runtime.topics import topic_roles
    from seqgate.streams.tools.tail import TailRequest, default_type
    from seqgate.streams.tools.tail import tail as tail_lines

    start = _start(from_beginning, offset, partitions)
    roles = topic_roles(
        input_topic=input_topic,
        outbox_topic=outbox_topic,
        rejected_topic=rejected_topic,
        application_id=application_id,
        audit_topic=audit_topic,
    )
    request = TailRequest(
        kafka=kafka,
        topic=topic,
        partitions=partitions,
        start=start,
        follow=follow or start == "end",
        committed_only=not read_uncommitted,
        record_type=record_type or default_type(topic, roles),
        limit=limit,
        framing=framing,
    )
    ensure_reachable(kafka)
    stop = stop_on_signals()
    try:
        for line in tail_lines(request, stop):
            click.echo(json.dumps(line))
    except BrokenPipeError:
        # A reader such as `head` went away: done, not an error (and nothing more to flush).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
