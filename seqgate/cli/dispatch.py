"""`seqgate dispatch`: apply the outbox to a destination (docs/dispatch.md)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import click

from seqgate.cli.aliases import renamed
from seqgate.cli.app import cli
from seqgate.cli.options import (
    batch_size_option,
    build_policy,
    idle_exit_option,
    kafka_options,
    ordering_option,
    session_timeout_option,
    setting,
)
from seqgate.cli.registry_options import registry_options
from seqgate.cli.running import stop_on_signals
from seqgate.runtime.errors import UsageError
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.framing import Framing
from seqgate.streams.rules.policy import DEFAULT_ADMITTED_KINDS, DEFAULT_ORDERED_SOURCES

if TYPE_CHECKING:
    from seqgate.streams.dispatch.destinations import Destination
    from seqgate.streams.dispatch.runner import DispatchConfig, FaultHook


@cli.command()
@kafka_options
@setting(
    "--destination",
    "SEQGATE_DESTINATION",
    default="sqlite:///.seqgate/objects.db",
    help="Where records go: sqlite:///relative.db or sqlite:////absolute.db, postgresql://..."
    " (psycopg connection URL), or http(s)://... (POST per record).",
)
@setting(
    "--table",
    "SEQGATE_DISPATCH_TABLE",
    default="objects",
    help="Table of the SQL destinations (created if missing).",
)
@setting(
    "--outbox-topic",
    "SEQGATE_OUTBOX_TOPIC",
    default="object-events.outbox",
    help="Topic of accepted events, read with read_committed.",
)
@setting(
    "--group-id",
    "SEQGATE_DISPATCH_GROUP_ID",
    default="seqgate-dispatch",
    help="Consumer group of the dispatchers (offsets committed after the destination confirms).",
)
@setting(
    "--destination-rejected-topic",
    "SEQGATE_DESTINATION_REJECTED_TOPIC",
    default=None,
    help="Where records the destination rejects for good go, with the reason"
    " (default: <outbox-topic>.dlq; created if missing).",
)
@renamed(
    "--dead-letter-topic",
    "SEQGATE_DEAD_LETTER_TOPIC",
    "--destination-rejected-topic",
    "SEQGATE_DESTINATION_REJECTED_TOPIC",
)
@ordering_option("How S3 sequencers compare: the workers' setting.")
@setting(
    "--ordered-sources",
    "SEQGATE_ORDERED_SOURCES",
    default=",".join(sorted(DEFAULT_ORDERED_SOURCES)),
    help="Sources whose positions order an object's writes (the workers' setting); the"
    " others are versioned by input offset.",
)
@batch_size_option(200, "Records applied per destination transaction and offset commit.")
@setting(
    "--retry-initial-ms",
    "SEQGATE_RETRY_INITIAL_MS",
    default=200,
    type=click.IntRange(1, 3_600_000),
    help="First wait after a transient failure; doubled at each further failure.",
)
@setting(
    "--retry-max-ms",
    "SEQGATE_RETRY_MAX_MS",
    default=30_000,
    type=click.IntRange(1, 3_600_000),
    help="Longest wait between attempts; at this pace the dispatcher keeps retrying,"
    " logging each failure as an error.",
)
@setting(
    "--http-timeout-seconds",
    "SEQGATE_HTTP_TIMEOUT_SECONDS",
    default=10.0,
    type=click.FloatRange(0.1, 600),
    help="Timeout of one POST to an HTTP destination (a timeout is retried).",
)
@session_timeout_option("dispatcher")
@idle_exit_option()
@registry_options
def dispatch(
    kafka: KafkaSettings,
    destination: str,
    table: str,
    outbox_topic: str,
    group_id: str,
    destination_rejected_topic: str | None,
    ordering: str,
    ordered_sources: str,
    batch_size: int,
    retry_initial_ms: int,
    retry_max_ms: int,
    http_timeout_seconds: float,
    session_timeout_ms: int,
    idle_exit_seconds: float | None,
    framing: Framing,
) -> None:
    """Apply the outbox to a destination that keeps the newest result per object.

    Each record replaces the destination's row for its object only if its
    version (its position under the workers' ordering; its input offset for
    dedupe-only sources) is strictly newer, in one atomic statement, so work
    finishing out of order never overwrites a newer result. Offsets are
    committed only after the destination confirmed; transient failures are
    retried with backoff; records the destination rejects for good go to the
    destination's rejected topic with the reason. SIGTERM or Ctrl-C finishes the
    batch in hand and exits 0, printing a JSON summary.

    \b
    Example:
      seqgate dispatch --bootstrap-servers 127.0.0.1:9092 \\
        --destination sqlite:///objects.db --idle-exit-seconds 5
    """
    from seqgate.streams.dispatch.runner import DispatchConfig, fault_from_env

    policy = build_policy(ordering, ",".join(DEFAULT_ADMITTED_KINDS), ordered_sources)
    try:
        fault = fault_from_env(os.environ.get("SEQGATE_DISPATCH_FAULT"))
    except ValueError as error:
        raise UsageError(str(error)) from error
    target = opened_destination(destination, table, http_timeout_seconds)
    ensure_reachable(kafka)
    config = DispatchConfig(
        kafka=kafka,
        outbox_topic=outbox_topic,
        group_id=group_id,
        rejected_topic=destination_rejected_topic or f"{outbox_topic}.dlq",
        policy=policy,
        batch_size=batch_size,
        idle_exit_seconds=idle_exit_seconds,
        session_timeout_ms=session_timeout_ms,
        retry_initial_s=retry_initial_ms / 1000,
        retry_max_s=max(retry_max_ms, retry_initial_ms) / 1000,
        framing=framing,
    )
    run_dispatcher(config, target, fault)


def opened_destination(url: str, table: str, http_timeout_s: float) -> Destination:
    from seqgate.streams.dispatch.destinations import open_destination
    from seqgate.streams.errors import DestinationConfigError, TransientError

    try:
        return open_destination(url, table=table, http_timeout=http_timeout_s)
    except DestinationConfigError as error:
        raise UsageError(f"--destination: {error}") from error
    except TransientError as error:
        raise UsageError(f"--destination: cannot open it: {error}") from error


def run_dispatcher(config: DispatchConfig, target: Destination, fault: FaultHook) -> None:
    """Dispatch until SIGTERM, Ctrl-C or the idle exit, then print the summary."""
    from seqgate.streams.dispatch.runner import Dispatcher

    stop = stop_on_signals()
    dispatcher = Dispatcher(config, target, fault=fault)
    dispatcher.run(stop)
    summary = {
        "stopped": True,
        "destination": target.description,
        "rejected_topic": config.rejected_topic,
        **dispatcher.counters.as_dict(),
    }
    click.echo(json.dumps(summary))
