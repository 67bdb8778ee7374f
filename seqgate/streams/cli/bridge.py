"""`seqgate bridge file|sqs|kafka`: sources acknowledged only after Kafka has what they became."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.connectors.publish.filters import EventFilter
from seqgate.connectors.publish.publisher import EventPublisher, PublishError, Topics
from seqgate.streams.cli.app import cli
from seqgate.streams.cli.offline import _read
from seqgate.streams.cli.options import (
    F,
    filter_options,
    kafka_options,
    reach,
    s3_parse_option,
    session_timeout_option,
    setting,
)
from seqgate.streams.runtime.errors import CliError, CommandFailed
from seqgate.streams.runtime.kafka_settings import KafkaSettings

if TYPE_CHECKING:
    from seqgate.streams.runtime.metrics import BridgeMetrics

# ---- bridge ------------------------------------------------------------------------------------


@cli.group()
def bridge() -> None:
    """Receive notifications from a source and publish them to Kafka.

    \b
    Example:
      seqgate bridge file notifications/ --bootstrap-servers 127.0.0.1:9092
    """


def _bridge_topic_options(func: F) -> F:
    func = setting(
        "--delivery-timeout-ms",
        "SEQGATE_DELIVERY_TIMEOUT_MS",
        default=30_000,
        type=click.IntRange(1000, 3_600_000),
        help="How long Kafka may take to acknowledge a record before the batch counts as"
        " not acknowledged.",
    )(func)
    return _output_topics(func)


def _output_topics(func: F) -> F:
    """Where a bridge publishes: `--events-topic` and `--rejected-topic`."""
    func = setting(
        "--rejected-topic",
        "SEQGATE_REJECTED_TOPIC",
        default="object-events.rejected",
        help="Dead-letter topic.",
    )(func)
    return setting(
        "--events-topic",
        "SEQGATE_INPUT_TOPIC",
        default="object-events",
        help="Topic of normalized events.",
    )(func)


@bridge.command("file")
@click.argument("paths", nargs=-1, required=True)
@kafka_options
@_output_topics
@setting(
    "--delivery-timeout-ms",
    "SEQGATE_DELIVERY_TIMEOUT_MS",
    default=30_000,
    type=click.IntRange(1000, 3_600_000),
    help="How long Kafka may take to acknowledge a record before the command fails.",
)
@click.option("--jsonl", is_flag=True, help="Read one document per line (default: by content).")
@filter_options
@s3_parse_option
def bridge_file(
    paths: tuple[str, ...],
    kafka: KafkaSettings,
    events_topic: str,
    rejected_topic: str,
    delivery_timeout_ms: int,
    jsonl: bool,
    event_filter: EventFilter,
    s3_options: S3ParseOptions,
) -> None:
    """Publish the notifications found in files (JSON or JSON Lines; - is stdin).

    A directory stands for the files directly in it, in name order (hidden
    files skipped).

    Exits 0 only after Kafka has acknowledged every event and dead letter;
    prints a JSON summary of what became of the input (with "filtered" when
    a filter option is given).

    \b
    Example:
      seqgate bridge file notifications.jsonl --bootstrap-servers 127.0.0.1:9092
      seqgate bridge file notifications.jsonl --include-prefix incoming/
    """
    reach(kafka)
    publisher = EventPublisher(
        kafka,
        Topics(events_topic, rejected_topic),
        delivery_timeout_ms=delivery_timeout_ms,
    )
    messages = 0
    filtered = 0
    for path in paths:
        for message in _read(path, jsonl):
            result, dropped = event_filter.apply(normalize(message.raw, message.origin, s3_options))
            publisher.submit(result, message.raw, message.origin)
            filtered += dropped
            messages += 1
    try:
        publisher.close()
    except PublishError as error:
        raise CommandFailed(str(error)) from error
    summary: dict[str, int] = {"messages": messages, **publisher.counters.as_dict()}
    if event_filter.active:
        # Only then, so that the summary without filters stays what it always was.
        summary["filtered"] = filtered
    click.echo(json.dumps(summary))


def _bridge_metrics_options(func: F) -> F:
    from seqgate.streams.cli.worker import metrics_options

    return metrics_options(func)


def _serve_metrics(
    host: str, port: int | None, tally: Callable[[], dict[str, int]]
) -> BridgeMetrics | None:
    """With --metrics-port: /metrics (records by outcome, from the source's tally),
    /healthz and /readyz (200 while the bridge runs) on a thread of their own."""
    if port is None:
        return None
    from seqgate.streams.runtime.metrics import BridgeMetrics

    metrics = BridgeMetrics(tally, alive_timeout_s=float("inf"))
    try:
        server = metrics.serve(host, port)
    except OSError as error:
        raise CliError(
            f"--metrics-host/--metrics-port: cannot listen on {host}:{port} ({error})"
        ) from error
    metrics.health.set_ready(True)
    click.echo(f"metrics on http://{server.host}:{server.port}/metrics", err=True)
    return metrics


def _stop_on_signals() -> threading.Event:
    """An event set by SIGTERM or SIGINT (Ctrl-C): the source finishes what it holds, then stops."""
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    return stop


@bridge.command("sqs")
@setting(
    "--queue-url",
    "SEQGATE_SQS_QUEUE_URL",
    required=True,
    help="URL of the SQS queue to poll.",
)
@setting(
    "--endpoint-url",
    "SEQGATE_SQS_ENDPOINT_URL",
    default=None,
    help="SQS endpoint (a local emulator, a VPC endpoint); default: AWS's for the region.",
)
@setting(
    "--region",
    "SEQGATE_AWS_REGION",
    default=None,
    help="AWS region; default: the one in the queue URL, else AWS_REGION /"
    " AWS_DEFAULT_REGION / the AWS config file.",
)
@kafka_options
@_bridge_topic_options
@setting(
    "--wait-time-seconds",
    "SEQGATE_SQS_WAIT_TIME_SECONDS",
    default=20,
    type=click.IntRange(0, 20),
    help="Long polling: how long one ReceiveMessage waits for messages (also bounds how"
    " long SIGTERM may wait for the poll in progress).",
)
@setting(
    "--receive-batch-size",
    "SEQGATE_SQS_RECEIVE_BATCH_SIZE",
    default=10,
    type=click.IntRange(1, 10),
    help="Messages per ReceiveMessage (SQS allows up to 10).",
)
@setting(
    "--visibility-timeout",
    "SEQGATE_SQS_VISIBILITY_TIMEOUT",
    default=None,
    type=click.IntRange(0, 43_200),
    help="Seconds a received message stays hidden (default: the queue's setting); must"
    " exceed the time Kafka may take (--delivery-timeout-ms) or messages are redelivered"
    " while still being published.",
)
@setting(
    "--retry-backoff-ms",
    "SEQGATE_RETRY_BACKOFF_MS",
    default=1000,
    type=click.IntRange(1, 600_000),
    help="First wait after a failed batch (Kafka or SQS unavailable); doubles up to 30 s.",
)
@setting(
    "--max-messages",
    "SEQGATE_MAX_MESSAGES",
    default=None,
    type=click.IntRange(1, None),
    help="Stop after this many messages were acknowledged and deleted (one-shot drains).",
)
@setting(
    "--idle-exit-seconds",
    "SEQGATE_IDLE_EXIT_SECONDS",
    default=None,
    type=click.FloatRange(0, None),
    help="Stop once no message has arrived for this long (one-shot drains). Default:"
    " run until SIGTERM.",
)
@filter_options
@s3_parse_option
@_bridge_metrics_options
def bridge_sqs(
    queue_url: str,
    endpoint_url: str | None,
    region: str | None,
    kafka: KafkaSettings,
    events_topic: str,
    rejected_topic: str,
    delivery_timeout_ms: int,
    wait_time_seconds: int,
    receive_batch_size: int,
    visibility_timeout: int | None,
    retry_backoff_ms: int,
    max_messages: int | None,
    idle_exit_seconds: float | None,
    event_filter: EventFilter,
    s3_options: S3ParseOptions,
    metrics_port: int | None,
    metrics_host: str,
) -> None:
    """Poll an SQS queue and publish its notifications to Kafka.

    Bodies may be native S3 notifications, SNS notifications (with or without
    raw delivery), EventBridge events: any envelope `seqgate parse` knows.
    A message is deleted only after Kafka has acknowledged every event and
    dead letter it became. While Kafka is unavailable nothing is deleted and
    the poller retries with backoff; SQS redelivers the messages after their
    visibility timeout. SIGTERM or Ctrl-C finishes the batch in hand
    (publish, flush, delete) and exits 0. Credentials come from the usual AWS
    chain (environment, profile, instance role).

    Prints a JSON summary on exit: messages deleted, and what their records
    became (published + filtered + ignored + rejected), plus failure counts.
    Exits 2 if messages were left in the queue because Kafka did not take them.

    \b
    Example:
      seqgate bridge sqs --bootstrap-servers 127.0.0.1:9092 \\
        --queue-url https://sqs.eu-west-1.amazonaws.com/111122223333/uploads \\
        --include-prefix incoming/ --exclude-prefix incoming/generated/
    """
    import boto3  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from botocore.config import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        Config,
    )
    from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        BotoCoreError,
    )

    from seqgate.connectors.sources.sqs_queue import (
        SqsPoller,
        SqsSettings,
        SqsSourceError,
        region_of,
    )

    try:
        region = region or region_of(queue_url)
        client = boto3.session.Session().client(
            "sqs",
            region_name=region,
            endpoint_url=endpoint_url,
            config=Config(
                read_timeout=wait_time_seconds + 20,
                connect_timeout=10,
                retries={"max_attempts": 3, "mode": "standard"},
            ),
        )
        settings = SqsSettings(
            queue_url=queue_url,
            wait_time_seconds=wait_time_seconds,
            batch_size=receive_batch_size,
            visibility_timeout=visibility_timeout,
            retry_backoff_s=retry_backoff_ms / 1000,
            max_messages=max_messages,
            idle_exit_seconds=idle_exit_seconds,
        )
        reach(kafka)
        poller_publisher = EventPublisher(
            kafka,
            Topics(events_topic, rejected_topic),
            delivery_timeout_ms=delivery_timeout_ms,
        )
        poller = SqsPoller(client, poller_publisher, settings, event_filter, s3_options=s3_options)
    except (ValueError, BotoCoreError) as error:
        raise CliError(f"--queue-url/--region/--endpoint-url: {error}") from error
    stop = _stop_on_signals()
    metrics = _serve_metrics(metrics_host, metrics_port, poller.tally.as_dict)
    failure: CliError | None = None
    try:
        poller.run(stop)
    except SqsSourceError as error:
        failure = CliError(str(error))  # SQS refused: the queue, its region or the credentials
    finally:
        if metrics is not None:
            metrics.close()
        try:
            poller_publisher.close()
        except PublishError as error:
            failure = failure or CommandFailed(str(error))
    click.echo(json.dumps({**poller.tally.as_dict(), **poller.stats.as_dict()}))
    if failure is not None:
        raise failure
    if poller.stats.unacknowledged:
        raise CommandFailed(
            f"{len(poller.stats.unacknowledged)} message(s) left in the queue: Kafka did not"
            " acknowledge them (--bootstrap-servers); SQS redelivers them after their"
            " visibility timeout"
        )


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
@_output_topics
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
@setting(
    "--batch-size",
    "SEQGATE_BATCH_SIZE",
    default=500,
    type=click.IntRange(1, 100_000),
    help="Records per consume call, and per transaction.",
)
@setting(
    "--transaction-timeout-ms",
    "SEQGATE_TRANSACTION_TIMEOUT_MS",
    default=60_000,
    type=click.IntRange(1000, 900_000),
    help="How long a dead bridge's open transaction may hold back read_committed readers"
    " (a restart with the same --transactional-id ends it at once).",
)
@session_timeout_option("bridge")
@setting(
    "--idle-exit-seconds",
    "SEQGATE_IDLE_EXIT_SECONDS",
    default=None,
    type=click.FloatRange(0, None),
    help="Stop once every assigned partition has been read to its end and no record has"
    " arrived for this long (one-shot drains). Default: run until SIGTERM.",
)
@filter_options
@s3_parse_option
@_bridge_metrics_options
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
) -> None:
    """Publish raw notifications from a Kafka topic, exactly once.

    Consumes TOPIC (read_committed), normalizes each record, and publishes the
    events re-keyed by object identity and the dead letters, in one Kafka
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
    from seqgate.connectors.sources.kafka_topic import (
        KafkaSource,
        KafkaSourceConfig,
        KafkaSourceFatalError,
    )
    from seqgate.streams.runtime.faults import injector_from_env

    try:
        faults = injector_from_env(os.environ.get("SEQGATE_FAULT"))
    except ValueError as error:
        raise CliError(str(error)) from error
    reach(kafka)
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
    )
    stop = _stop_on_signals()
    source = KafkaSource(config, event_filter, faults=faults, s3_options=s3_options)
    metrics = _serve_metrics(metrics_host, metrics_port, source.tally.as_dict)
    try:
        source.run(stop)
    except KafkaSourceFatalError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    finally:
        if metrics is not None:
            metrics.close()
    click.echo(
        json.dumps({**source.tally.as_dict(), "commits": source.commits, "aborts": source.aborts})
    )
