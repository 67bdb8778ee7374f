"""`seqgate parse`: normalize notifications offline."""

from __future__ import annotations

import json

import click

from seqgate.cli.app import cli
from seqgate.cli.options import (
    ordering_option,
)
from seqgate.cli.reading_options import (
    s3_parse_option,
)
from seqgate.connectors.parsers.normalize import normalize, normalize_with
from seqgate.connectors.parsers.providers import PROVIDERS, provider_parser
from seqgate.connectors.parsers.results import describe
from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.connectors.sources.files import RawMessage, read_messages
from seqgate.runtime.errors import UsageError
from seqgate.schemas.ordering import PositionOrder, order_named
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent


@cli.command()
@click.argument("files", nargs=-1, required=True)
@ordering_option("Check each position as the worker would under this ordering.")
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
    held (an input with none says so on stderr), 2 when an input cannot be
    read. FILE is a JSON document or JSON Lines; - reads stdin.

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
            raise UsageError(f"--cloud-name: {error}") from error
    for path in files:
        messages = read_inputs(path, jsonl)
        if not messages:
            # Nothing to print would otherwise look like a parse that found nothing wrong.
            click.echo(f"seqgate parse: {path}: no notification in it (empty input)", err=True)
        for message in messages:
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


def read_inputs(path: str, jsonl: bool = False) -> list[RawMessage]:
    """The messages of a file, a directory's files or stdin (-); an unreadable one ends
    the command with exit code 2."""
    try:
        return list(read_messages(path, jsonl=jsonl))
    except OSError as error:
        raise UsageError(f"{path}: cannot read it ({error.strerror})") from error
