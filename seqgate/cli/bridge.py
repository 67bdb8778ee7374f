"""`seqgate bridge`: sources acknowledged only after Kafka has what they became; `bridge file`.

`bridge sqs`, `bridge kafka` and `bridge http` are in the modules named for them.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click

from seqgate.cli.app import cli
from seqgate.cli.options import (
    kafka_options,
    rejected_topic_option,
    setting,
    stacked,
)
from seqgate.cli.parse import read_inputs
from seqgate.cli.reading_options import (
    filter_options,
    s3_parse_option,
)
from seqgate.cli.registry_options import registry_options
from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.connectors.publish.filters import EventFilter
from seqgate.connectors.publish.publisher import EventPublisher, Topics
from seqgate.connectors.sources.files import publish_read
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.framing import SINGLE_OBJECT, Framing


@cli.group()
def bridge() -> None:
    """Receive notifications from a source and publish them to Kafka.

    \b
    Example:
      seqgate bridge file notifications/ --bootstrap-servers 127.0.0.1:9092
    """


@dataclass(frozen=True, slots=True)
class Publishing:
    """Where a bridge publishes, and how long Kafka may take to acknowledge a record."""

    topics: Topics
    delivery_timeout_ms: int
    framing: Framing = SINGLE_OBJECT

    def publisher(self, kafka: KafkaSettings, engine: str) -> EventPublisher:
        return EventPublisher(
            kafka,
            self.topics,
            delivery_timeout_ms=self.delivery_timeout_ms,
            framing=self.framing,
            engine=engine,
        )


events_topic_option = setting(
    "--events-topic",
    "SEQGATE_INPUT_TOPIC",
    default="object-events",
    help="Topic of normalized events.",
)


def publishing_options(
    delivery_help: str = "How long Kafka may take to acknowledge a record before the batch"
    " counts as not acknowledged.",
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """`--events-topic`, `--rejected-topic`, `--delivery-timeout-ms` and the schema
    registry's options; the command receives one `publishing: Publishing`."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def with_publishing(
            *args: Any,
            events_topic: str,
            rejected_topic: str,
            delivery_timeout_ms: int,
            framing: Framing,
            **kwargs: Any,
        ) -> Any:
            topics = Topics(events_topic, rejected_topic)
            kwargs["publishing"] = Publishing(topics, delivery_timeout_ms, framing)
            return func(*args, **kwargs)

        options = [
            events_topic_option,
            rejected_topic_option,
            setting(
                "--delivery-timeout-ms",
                "SEQGATE_DELIVERY_TIMEOUT_MS",
                default=30_000,
                type=click.IntRange(1000, 3_600_000),
                help=delivery_help,
            ),
        ]
        return stacked(registry_options(with_publishing), options)

    return decorate


@bridge.command("file")
@click.argument("paths", nargs=-1, required=True)
@kafka_options
@publishing_options("How long Kafka may take to acknowledge a record before the command fails.")
@click.option("--jsonl", is_flag=True, help="Read one document per line (default: by content).")
@filter_options
@s3_parse_option
def bridge_file(
    paths: tuple[str, ...],
    kafka: KafkaSettings,
    publishing: Publishing,
    jsonl: bool,
    event_filter: EventFilter,
    s3_options: S3ParseOptions,
) -> None:
    """Publish the notifications found in files (JSON or JSON Lines; - is stdin).

    A directory stands for the files directly in it, in name order (hidden
    files skipped).

    Exits 0 only after Kafka has acknowledged every event and rejected record;
    prints a JSON summary of what became of the input (with "filtered" when
    a filter option is given).

    \b
    Example:
      seqgate bridge file notifications.jsonl --bootstrap-servers 127.0.0.1:9092
      seqgate bridge file notifications.jsonl --include-prefix incoming/
    """
    ensure_reachable(kafka)
    publisher = publishing.publisher(kafka, s3_options.engine)
    messages = 0
    filtered = 0
    for path in paths:
        for message in read_inputs(path, jsonl):
            filtered += publish_read(
                publisher, message.raw, message.origin, s3_options, event_filter
            )
            messages += 1
    publisher.close()
    summary: dict[str, int] = {"messages": messages, **publisher.counters.as_dict()}
    if event_filter.active:
        # Only then, so that the summary without filters stays what it always was.
        summary["filtered"] = filtered
    click.echo(json.dumps(summary))
