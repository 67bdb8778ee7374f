"""`seqgate watermark`: the committed watermark of one object."""

from __future__ import annotations

import json
import sys

import click

from seqgate.cli.app import cli
from seqgate.cli.options import application_option, input_topic_option, kafka_options
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings


@cli.command()
@kafka_options
@input_topic_option
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
    (no event of it accepted yet, or its source is dedupe-only). A scan longer than
    a few seconds shows its progress on stderr (docs/operations.md).

    \b
    Example:
      seqgate watermark --bootstrap-servers 127.0.0.1:9092 \\
        's3://example-input/incoming/June report+final.csv'
    """
    from seqgate.runtime.progress import Pace, ProgressLine
    from seqgate.runtime.topics import changelog_topic
    from seqgate.streams.tools.inspect import find_watermark

    changelog = changelog_topic(application_id)
    pace = Pace.from_environment()  # a bad setting is reported without waiting for Kafka
    ensure_reachable(kafka)
    with ProgressLine("watermark", pace=pace) as meter:
        partition, view = find_watermark(
            kafka, application_id, input_topic, changelog, identity, meter=meter
        )
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
