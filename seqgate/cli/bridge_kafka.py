"""`seqgate bridge kafka`: raw notifications from a Kafka topic, exactly once."""

from __future__ import annotations

import json
import socket

import click

from seqgate.cli.bridge import bridge, events_topic_option
from seqgate.cli.options import (
    batch_size_option,
    idle_exit_option,
    kafka_options,
    metrics_options,
    rejected_topic_option,
    session_timeout_option,
    setting,
    transaction_timeout_option,
)
from seqgate.cli.reading_options import (
    filter_options,
    s3_parse_option,
)
from seqgate.cli.registry_options import registry_options
from seqgate.cli.running import injected_faults, serve_bridge_metrics, stop_on_signals
from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.connectors.publish.filters import EventFilter
from seqgate.connectors.publish.publisher import Topics
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.framing import Framing


@bridge.command("kafka")
@click.option(
    "--from",
    "source_topic",
    envvar="SEQGATE_SOURCE_TOPIC",
    show_envvar=True,
    required=True,
    help="Topic of raw notifications (MinIO's Kafka target, EventBridge pipes, ...).",
)
@kafka_options
@events_topic_option
@rejected_topic_option
@setting(
    "--group-id",
    "SEQGATE_BRIDGE_GROUP_ID",
    default=None,
    help="Consumer group of the bridge (default: seqgate-bridge-<TOPIC>).",
)
@setting(
    "--transactional-id",
    "SEQGATE_BRIDGE_TRANSACTIONAL_ID",
    default=None,
    help="Stable per bridge instance (default: <group-id>-<host name>); also its static"
    " group.instance.id. A restarted instance fences its dead predecessor; two live"
    " instances must not share it.",
)
@batch_size_option(500, "Records per consume call, and per transaction.")
@transaction_timeout_option(
    "How long a dead bridge's open transaction may hold back read_committed readers"
    " (a restart with the same --transactional-id ends it at once)."
)
@session_timeout_option("bridge")
@idle_exit_option()
@filter_options
@s3_parse_option
@metrics_options
@registry_options
def bridge_kafka(
    source_topic: str,
    kafka: KafkaSettings,
    events_topic: str,
    rejected_topic: str,
    group_id: str | None,
    transactional_id: str | None,
    batch_size: int,
    transaction_timeout_ms: int,
    session_timeout_ms: int,
    idle_exit_seconds: float | None,
    event_filter: EventFilter,
    s3_options: S3ParseOptions,
    metrics_port: int | None,
    metrics_host: str,
    framing: Framing,
) -> None:
    """Publish raw notifications from a Kafka topic, exactly once.

    Consumes TOPIC (read_committed), normalizes each record, and publishes the
    events re-keyed by object identity and the rejected records, in one Kafka
    transaction with the consumed offsets: after a crash, read_committed
    readers see each raw record's events exactly once. On Kafka errors the
    transaction is aborted and the batch read again; a fatal error (fenced
    by another instance with the same --transactional-id) exits 1.
    SIGTERM or Ctrl-C finishes the batch in hand, commits and exits 0,
    printing a JSON summary.

    \b
    Example:
      seqgate bridge kafka --from minio-events --bootstrap-servers 127.0.0.1:9092 \\
        --transactional-id bridge-1 --include-prefix incoming/
    """
    from seqgate.connectors.sources.kafka_topic import KafkaSource, KafkaSourceConfig

    faults = injected_faults()
    ensure_reachable(kafka)
    group = group_id or f"seqgate-bridge-{source_topic}"
    config = KafkaSourceConfig(
        kafka=kafka,
        source_topic=source_topic,
        group_id=group,
        transactional_id=transactional_id or f"{group}-{socket.gethostname()}",
        topics=Topics(events_topic, rejected_topic),
        batch_size=batch_size,
        transaction_timeout_ms=transaction_timeout_ms,
        session_timeout_ms=session_timeout_ms,
        idle_exit_seconds=idle_exit_seconds,
        framing=framing,
    )
    stop = stop_on_signals()
    source = KafkaSource(config, event_filter, faults=faults, s3_options=s3_options)
    metrics = serve_bridge_metrics(metrics_host, metrics_port, source.tally.as_dict)
    try:
        source.run(stop)
    finally:
        if metrics is not None:
            metrics.close()
    click.echo(
        json.dumps({**source.tally.as_dict(), "commits": source.commits, "aborts": source.aborts})
    )
