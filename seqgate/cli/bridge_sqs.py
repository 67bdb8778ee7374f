"""`seqgate bridge sqs`: an SQS queue's notifications, deleted once Kafka has them."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from seqgate.cli.bridge import Publishing, bridge, publishing_options
from seqgate.cli.options import (
    idle_exit_option,
    kafka_options,
    metrics_options,
    setting,
)
from seqgate.cli.param_types import HttpUrl
from seqgate.cli.reading_options import (
    filter_options,
    s3_parse_option,
)
from seqgate.cli.running import serve_bridge_metrics, stop_on_signals
from seqgate.connectors.errors import PublishError
from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.connectors.publish.filters import EventFilter
from seqgate.connectors.publish.publisher import EventPublisher
from seqgate.runtime.errors import CommandFailed, SeqgateError, UsageError
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings

if TYPE_CHECKING:
    from seqgate.connectors.sources.sqs_queue import SqsPoller, SqsSettings


@bridge.command("sqs")
@setting(
    "--queue-url",
    "SEQGATE_SQS_QUEUE_URL",
    required=True,
    type=HttpUrl("https://sqs.eu-west-1.amazonaws.com/111122223333/uploads"),
    help="URL of the SQS queue to poll.",
)
@setting(
    "--endpoint-url",
    "SEQGATE_SQS_ENDPOINT_URL",
    default=None,
    type=HttpUrl("http://127.0.0.1:9324", path=False),
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
@publishing_options()
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
@idle_exit_option(
    "Stop once no message has arrived for this long (one-shot drains). Default: run until SIGTERM."
)
@filter_options
@s3_parse_option
@metrics_options
def bridge_sqs(
    queue_url: str,
    endpoint_url: str | None,
    region: str | None,
    kafka: KafkaSettings,
    publishing: Publishing,
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
    rejected record it became. While Kafka is unavailable nothing is deleted and
    the poller retries with backoff; SQS redelivers the messages after their
    visibility timeout. SIGTERM or Ctrl-C finishes the batch in hand
    (publish, flush, delete) and exits 0. Credentials come from the usual AWS
    chain (environment, profile, instance role).

    Prints a JSON summary on exit: messages deleted, and what their records
    became (published + filtered + ignored + rejected), plus failure counts.
    Exits 1 if messages were left in the queue because Kafka did not take them.

    \b
    Example:
      seqgate bridge sqs --bootstrap-servers 127.0.0.1:9092 \\
        --queue-url https://sqs.eu-west-1.amazonaws.com/111122223333/uploads \\
        --include-prefix incoming/ --exclude-prefix incoming/generated/
    """
    from seqgate.connectors.sources.sqs_queue import SqsSettings

    settings = SqsSettings(
        queue_url=queue_url,
        wait_time_seconds=wait_time_seconds,
        batch_size=receive_batch_size,
        visibility_timeout=visibility_timeout,
        retry_backoff_s=retry_backoff_ms / 1000,
        max_messages=max_messages,
        idle_exit_seconds=idle_exit_seconds,
    )
    poller, publisher = sqs_poller(
        settings, region, endpoint_url, kafka, publishing, event_filter, s3_options
    )
    drain(poller, publisher, metrics_host, metrics_port)


def sqs_poller(
    settings: SqsSettings,
    region: str | None,
    endpoint_url: str | None,
    kafka: KafkaSettings,
    publishing: Publishing,
    event_filter: EventFilter,
    s3_options: S3ParseOptions,
) -> tuple[SqsPoller, EventPublisher]:
    """The poller of the queue and the publisher it hands its records to, once a broker
    answers."""
    import boto3  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from botocore.config import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        Config,
    )
    from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        BotoCoreError,
    )

    from seqgate.connectors.sources.sqs_queue import SqsPoller, region_of

    try:
        client = boto3.session.Session().client(
            "sqs",
            region_name=region or region_of(settings.queue_url),
            endpoint_url=endpoint_url,
            config=Config(
                read_timeout=settings.wait_time_seconds + 20,
                connect_timeout=10,
                retries={"max_attempts": 3, "mode": "standard"},
            ),
        )
        ensure_reachable(kafka)
        publisher = publishing.publisher(kafka, s3_options.engine)
        poller = SqsPoller(client, publisher, settings, event_filter, s3_options=s3_options)
    except (ValueError, BotoCoreError) as error:
        raise UsageError(f"--queue-url/--region/--endpoint-url: {error}") from error
    return poller, publisher


def drain(
    poller: SqsPoller, publisher: EventPublisher, metrics_host: str, metrics_port: int | None
) -> None:
    """Poll until stopped, then flush the publisher, print the summary and end with the
    first error met (SQS refused, Kafka did not acknowledge)."""
    from seqgate.connectors.errors import SqsSourceError

    stop = stop_on_signals()
    metrics = serve_bridge_metrics(metrics_host, metrics_port, poller.tally.as_dict)
    failure: SeqgateError | None = None
    try:
        poller.run(stop)
    except SqsSourceError as error:
        failure = error  # SQS refused: the queue, its region or the credentials
    finally:
        if metrics is not None:
            metrics.close()
        try:
            publisher.close()
        except PublishError as error:
            failure = failure or error
    click.echo(json.dumps({**poller.tally.as_dict(), **poller.stats.as_dict()}))
    if failure is not None:
        raise failure
    if poller.stats.unacknowledged:
        raise CommandFailed(
            f"{len(poller.stats.unacknowledged)} message(s) left in the queue: Kafka did not"
            " acknowledge them (--bootstrap-servers); SQS redelivers them after their"
            " visibility timeout"
        )
