"""The `seqgate` command line (DESIGN §7).

Configuration precedence: command-line flags, then `SEQGATE_*` environment
variables, then the optional YAML file given with `--config`, then defaults.
"""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml

from connectors.errors import Rejection, RejectReason
from connectors.file_source import RawMessage, read_messages
from connectors.filters import EventFilter, FilterError
from connectors.kafka_publisher import EventPublisher, PublishError, Topics
from connectors.normalize import normalize
from connectors.results import describe
from schemas.records import ObjectEvent
from streams.errors import CliError
from streams.kafka_clients import client_config
from streams.logs import configure_logging
from streams.ordering import PositionOrder, order_named
from streams.policy import (
    DEFAULT_ADMITTED_KINDS,
    DEFAULT_DEDUPE_WINDOW_MS,
    DEFAULT_ORDERED_SOURCES,
    Policy,
    PolicyError,
)

if TYPE_CHECKING:
    from connectors.gcs_auth import GcsPushVerifier
    from connectors.webhook_routes import WebhookSettings

F = TypeVar("F", bound=Callable[..., Any])


def setting(flag: str, envvar: str, **kwargs: Any) -> Callable[[F], F]:
    """An option that can also come from a SEQGATE_* variable, both shown in --help."""
    return click.option(flag, envvar=envvar, show_envvar=True, show_default=True, **kwargs)


# ---- shared options ------------------------------------------------------------------------------


def bootstrap_option(func: F) -> F:
    return click.option(
        "--bootstrap-servers",
        envvar=["SEQGATE_BOOTSTRAP_SERVERS", "KAFKA_BOOTSTRAP_SERVERS"],
        show_envvar=True,
        required=True,
        help="Kafka bootstrap address, host:port[,host:port]."
        " Falls back to KAFKA_BOOTSTRAP_SERVERS.",
    )(func)


def topic_options(func: F) -> F:
    func = setting(
        "--rejected-topic",
        "SEQGATE_REJECTED_TOPIC",
        default="object-events.rejected",
        help="Dead-letter topic.",
    )(func)
    func = setting(
        "--outbox-topic",
        "SEQGATE_OUTBOX_TOPIC",
        default="object-events.outbox",
        help="Topic of accepted events.",
    )(func)
    return setting(
        "--input-topic",
        "SEQGATE_INPUT_TOPIC",
        default="object-events",
        help="Topic of normalized events (keyed by object identity).",
    )(func)


def application_option(func: F) -> F:
    return setting(
        "--application-id",
        "SEQGATE_APPLICATION_ID",
        default="seqgate",
        help="Consumer group of the workers and prefix of the changelog topic.",
    )(func)


def policy_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The decision policy's options; the command receives one `policy: Policy`."""

    @functools.wraps(func)
    def with_policy(
        *args: Any,
        ordering: str,
        admit_kinds: str,
        ordered_sources: str,
        dedupe_window_ms: int,
        **kwargs: Any,
    ) -> Any:
        kwargs["policy"] = build_policy(ordering, admit_kinds, ordered_sources, dedupe_window_ms)
        return func(*args, **kwargs)

    options = [
        setting(
            "--ordering",
            "SEQGATE_ORDERING",
            type=click.Choice(["aws", "numeric"]),
            default="aws",
            help="How S3 sequencers compare: aws (right-pad with 0, AWS's documented rule)"
            " or numeric (hex value, the guide's rule).",
        ),
        setting(
            "--admit-kinds",
            "SEQGATE_ADMIT_KINDS",
            default=",".join(sorted(DEFAULT_ADMITTED_KINDS)),
            help="Comma-separated event kinds that may be accepted (created, removed,"
            " version_removed, ...: docs/kinds.md); other kinds are counted as filtered.",
        ),
        setting(
            "--ordered-sources",
            "SEQGATE_ORDERED_SOURCES",
            default=",".join(sorted(DEFAULT_ORDERED_SOURCES)),
            help="Sources whose positions order an object's writes; the others are"
            " dedupe-only (add minio for a single-node MinIO).",
        ),
        setting(
            "--dedupe-window-ms",
            "SEQGATE_DEDUPE_WINDOW_MS",
            default=DEFAULT_DEDUPE_WINDOW_MS,
            type=click.IntRange(1, None),
            help="How long (in input record time) an accepted event id of a dedupe-only"
            " source suppresses its redeliveries.",
        ),
    ]
    wrapped: Callable[..., Any] = with_policy
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def build_policy(
    ordering: str,
    admit_kinds: str,
    ordered_sources: str = ",".join(sorted(DEFAULT_ORDERED_SOURCES)),
    dedupe_window_ms: int = DEFAULT_DEDUPE_WINDOW_MS,
) -> Policy:
    try:
        return Policy.build(
            ordering,
            _names(admit_kinds),
            ordered_sources=_names(ordered_sources),
            dedupe_window_ms=dedupe_window_ms,
        )
    except PolicyError as error:
        option = _POLICY_OPTIONS.get(error.setting, error.setting)
        raise CliError(f"{option}: {error}") from error


_POLICY_OPTIONS = {
    "admitted_kinds": "--admit-kinds",
    "ordered_sources": "--ordered-sources",
    "dedupe_window_ms": "--dedupe-window-ms",
}


class _CommaList(click.ParamType):  # type: ignore[type-arg,unused-ignore]  # generic in click 8.2+
    """Text items of a repeatable option; its variable separates them with commas."""

    name = "TEXT"
    envvar_list_splitter = ","

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return str(value)


def filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The bridge's event filter options; the command receives one `event_filter`."""

    @functools.wraps(func)
    def with_filter(
        *args: Any,
        bucket: tuple[str, ...],
        include_prefix: tuple[str, ...],
        exclude_prefix: tuple[str, ...],
        **kwargs: Any,
    ) -> Any:
        kwargs["event_filter"] = build_filter(bucket, include_prefix, exclude_prefix)
        return func(*args, **kwargs)

    options = [
        setting(
            "--bucket",
            "SEQGATE_BUCKETS",
            type=_CommaList(),
            multiple=True,
            help="Publish only events of these buckets (exact names; repeat the option or"
            " separate with commas). Default: every bucket.",
        ),
        setting(
            "--include-prefix",
            "SEQGATE_INCLUDE_PREFIXES",
            type=_CommaList(),
            multiple=True,
            help="Publish only events whose decoded key starts with one of these literal"
            " prefixes (no wildcards; repeat or separate with commas). Default: every key.",
        ),
        setting(
            "--exclude-prefix",
            "SEQGATE_EXCLUDE_PREFIXES",
            type=_CommaList(),
            multiple=True,
            help="Never publish events whose decoded key starts with one of these literal"
            " prefixes (wins over --include-prefix; e.g. where generated output is written)."
            " Filtered events are counted, not published nor dead-lettered.",
        ),
    ]
    wrapped: Callable[..., Any] = with_filter
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def _items(values: tuple[str, ...] | list[str] | str | None) -> list[str]:
    """Flag values, each possibly a comma list; a config file may give a list or a string."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    return [item.strip() for value in values for item in str(value).split(",") if item.strip()]


def build_filter(
    buckets: tuple[str, ...], include_prefixes: tuple[str, ...], exclude_prefixes: tuple[str, ...]
) -> EventFilter:
    try:
        return EventFilter.build(
            _items(buckets), _items(include_prefixes), _items(exclude_prefixes)
        )
    except FilterError as error:
        raise CliError(str(error)) from error


# ---- the group -----------------------------------------------------------------------------------


def _load_config_file(path: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise CliError(f"--config {path}: cannot read it ({error.strerror})") from error
    except yaml.YAMLError as error:
        raise CliError(f"--config {path}: not valid YAML ({_yaml_problem(error)})") from error
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CliError(f"--config {path}: expected a mapping of option names to values")
    return {str(name).replace("-", "_"): value for name, value in data.items()}


def _yaml_problem(error: yaml.YAMLError) -> str:
    """One line: what is wrong and where."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(error).split())


def _defaults_for(command: click.Command, values: dict[str, Any]) -> dict[str, Any]:
    """Spread flat file values over the command tree as click's default_map."""
    if isinstance(command, click.Group):
        return {name: _defaults_for(child, values) for name, child in command.commands.items()}
    names = {param.name for param in command.params}
    return {name: value for name, value in values.items() if name in names}


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option(
    "--config",
    "config_file",
    envvar="SEQGATE_CONFIG",
    show_envvar=True,
    type=click.Path(dir_okay=False),
    help="YAML file of option values (e.g. `ordering: numeric`); flags and SEQGATE_*"
    " variables take precedence.",
)
@setting(
    "--log-level",
    "SEQGATE_LOG_LEVEL",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    help="Structured JSON logs on stderr.",
)
@click.version_option(package_name="seqgate")
@click.pass_context
def cli(ctx: click.Context, config_file: str | None, log_level: str) -> None:
    """seqgate: exactly-once ordering gate for object-store notifications on Kafka.

    \b
    Example (a development broker, then the whole pipeline):
      seqgate broker up
      seqgate demo
    """
    configure_logging(log_level)
    if config_file:
        ctx.default_map = _defaults_for(cli, _load_config_file(config_file))


# ---- topics ------------------------------------------------------------------------------------


@cli.group()
def topics() -> None:
    """Manage the pipeline's topics.

    \b
    Example:
      seqgate topics create --bootstrap-servers 127.0.0.1:9092
    """


@topics.command("create")
@bootstrap_option
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
def topics_create(
    bootstrap_servers: str,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    partitions: int,
    replication_factor: int,
    source_topics: tuple[str, ...],
) -> None:
    """Create the input, outbox, dead-letter and changelog topics (idempotent).

    \b
    Example:
      seqgate topics create --bootstrap-servers 127.0.0.1:9092 --partitions 6 \\
        --source-topic minio-events
    """
    from confluent_kafka.admin import AdminClient

    from streams.topics import TopicSpec, create_topics, pipeline_topics

    specs = pipeline_topics(
        input_topic=input_topic,
        outbox_topic=outbox_topic,
        rejected_topic=rejected_topic,
        application_id=application_id,
        partitions=partitions,
    ) + [TopicSpec(name, partitions) for name in source_topics]
    admin = AdminClient(client_config(bootstrap_servers))
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
def parse(files: tuple[str, ...], ordering: str, jsonl: bool) -> None:
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
    """
    order = order_named(ordering)
    for path in files:
        for message in _read(path, jsonl):
            for item in normalize(message.raw, message.origin).items:
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


# ---- bridge ------------------------------------------------------------------------------------


@cli.group()
def bridge() -> None:
    """Receive notifications from a source and publish them to Kafka.

    \b
    Example:
      seqgate bridge file notifications/ --bootstrap-servers 127.0.0.1:9092
    """


@bridge.command("file")
@click.argument("paths", nargs=-1, required=True)
@bootstrap_option
@setting(
    "--events-topic",
    "SEQGATE_INPUT_TOPIC",
    default="object-events",
    help="Topic of normalized events.",
)
@setting(
    "--rejected-topic",
    "SEQGATE_REJECTED_TOPIC",
    default="object-events.rejected",
    help="Dead-letter topic.",
)
@setting(
    "--delivery-timeout-ms",
    "SEQGATE_DELIVERY_TIMEOUT_MS",
    default=30_000,
    type=click.IntRange(1000, 3_600_000),
    help="How long Kafka may take to acknowledge a record before the command fails.",
)
@click.option("--jsonl", is_flag=True, help="Read one document per line (default: by content).")
@filter_options
def bridge_file(
    paths: tuple[str, ...],
    bootstrap_servers: str,
    events_topic: str,
    rejected_topic: str,
    delivery_timeout_ms: int,
    jsonl: bool,
    event_filter: EventFilter,
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
    publisher = EventPublisher(
        bootstrap_servers,
        Topics(events_topic, rejected_topic),
        delivery_timeout_ms=delivery_timeout_ms,
    )
    messages = 0
    filtered = 0
    for path in paths:
        for message in _read(path, jsonl):
            result, dropped = event_filter.apply(normalize(message.raw, message.origin))
            publisher.submit(result, message.raw, message.origin)
            filtered += dropped
            messages += 1
    try:
        publisher.close()
    except PublishError as error:
        raise CliError(str(error)) from error
    summary: dict[str, int] = {"messages": messages, **publisher.counters.as_dict()}
    if event_filter.active:
        # Only then, so that the summary without filters stays what it always was.
        summary["filtered"] = filtered
    click.echo(json.dumps(summary))


def _bridge_topic_options(func: F) -> F:
    func = setting(
        "--delivery-timeout-ms",
        "SEQGATE_DELIVERY_TIMEOUT_MS",
        default=30_000,
        type=click.IntRange(1000, 3_600_000),
        help="How long Kafka may take to acknowledge a record before the batch counts as"
        " not acknowledged.",
    )(func)
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
@bootstrap_option
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
def bridge_sqs(
    queue_url: str,
    endpoint_url: str | None,
    region: str | None,
    bootstrap_servers: str,
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

    from connectors.sqs_source import SqsPoller, SqsSettings, SqsSourceError, region_of

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
        poller_publisher = EventPublisher(
            bootstrap_servers,
            Topics(events_topic, rejected_topic),
            delivery_timeout_ms=delivery_timeout_ms,
        )
        poller = SqsPoller(client, poller_publisher, settings, event_filter)
    except (ValueError, BotoCoreError) as error:
        raise CliError(f"--queue-url/--region/--endpoint-url: {error}") from error
    stop = _stop_on_signals()
    failure: str | None = None
    try:
        poller.run(stop)
    except SqsSourceError as error:
        failure = str(error)
    finally:
        try:
            poller_publisher.close()
        except PublishError as error:
            failure = failure or str(error)
    click.echo(json.dumps({**poller.tally.as_dict(), **poller.stats.as_dict()}))
    if failure is not None:
        raise CliError(failure)
    if poller.stats.unacknowledged:
        raise CliError(
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
@bootstrap_option
@setting(
    "--events-topic",
    "SEQGATE_INPUT_TOPIC",
    default="object-events",
    help="Topic of normalized events.",
)
@setting(
    "--rejected-topic",
    "SEQGATE_REJECTED_TOPIC",
    default="object-events.rejected",
    help="Dead-letter topic.",
)
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
@setting(
    "--session-timeout-ms",
    "SEQGATE_SESSION_TIMEOUT_MS",
    default=45_000,
    type=click.IntRange(1000, 3_600_000),
    help="How long the group waits for a silent bridge before moving its partitions.",
)
@setting(
    "--idle-exit-seconds",
    "SEQGATE_IDLE_EXIT_SECONDS",
    default=None,
    type=click.FloatRange(0, None),
    help="Stop once every assigned partition has been read to its end and no record has"
    " arrived for this long (one-shot drains). Default: run until SIGTERM.",
)
@filter_options
def bridge_kafka(
    source_topic: str,
    bootstrap_servers: str,
    events_topic: str,
    rejected_topic: str,
    group_id: str | None,
    transactional_id: str | None,
    batch_size: int,
    transaction_timeout_ms: int,
    session_timeout_ms: int,
    idle_exit_seconds: float | None,
    event_filter: EventFilter,
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
    from connectors.kafka_source import KafkaSource, KafkaSourceConfig, KafkaSourceFatalError
    from streams.faults import injector_from_env

    try:
        faults = injector_from_env(os.environ.get("SEQGATE_FAULT"))
    except ValueError as error:
        raise CliError(str(error)) from error
    group = group_id or f"seqgate-bridge-{source_topic}"
    config = KafkaSourceConfig(
        bootstrap_servers=bootstrap_servers,
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
    source = KafkaSource(config, event_filter, faults=faults)
    try:
        source.run(stop)
    except KafkaSourceFatalError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    click.echo(
        json.dumps({**source.tally.as_dict(), "commits": source.commits, "aborts": source.aborts})
    )


def _header_secret(value: str | None) -> tuple[str, str] | None:
    """NAME:VALUE of --eventbridge-header."""
    if value is None:
        return None
    name, colon, secret = value.partition(":")
    name, secret = name.strip(), secret.strip()
    if not colon or not name or not secret or any(c in name for c in " \t\r\n"):
        raise CliError(
            "--eventbridge-header: expected NAME:VALUE (e.g. X-Seqgate-Secret:s3cr3t),"
            " the header your API destination's connection sends"
        )
    return name, secret


def _webhook_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The provider routes' options of `bridge http`; the command receives one `webhooks`."""

    @functools.wraps(func)
    def with_webhooks(
        *args: Any,
        gcs_audience: str | None,
        gcs_jwks_file: str | None,
        gcs_service_account: str | None,
        azure_secret: str | None,
        supabase_secret: str | None,
        b2_signing_secret: str | None,
        box_primary_key: str | None,
        box_secondary_key: str | None,
        cloudinary_api_secret: str | None,
        cloudinary_cloud_name: str | None,
        cloudinary_signature_algorithm: str,
        appwrite_signature_key: str | None,
        appwrite_webhook_url: str | None,
        **kwargs: Any,
    ) -> Any:
        from connectors.webhook_routes import (
            AppwriteSettings,
            CloudinarySettings,
            WebhookSettings,
        )

        cloudinary = _together(
            ("--cloudinary-api-secret", cloudinary_api_secret),
            ("--cloudinary-cloud-name", cloudinary_cloud_name),
        )
        appwrite = _together(
            ("--appwrite-signature-key", appwrite_signature_key),
            ("--appwrite-webhook-url", appwrite_webhook_url),
        )
        try:
            cloudinary_settings = (
                CloudinarySettings(*cloudinary, cloudinary_signature_algorithm)
                if cloudinary
                else None
            )
        except ValueError as error:
            raise CliError(f"--cloudinary-cloud-name: {error}") from error
        kwargs["webhooks"] = WebhookSettings(
            gcs=_gcs_verifier(gcs_audience, gcs_jwks_file, gcs_service_account),
            azure_secret=azure_secret or None,
            supabase_secret=supabase_secret or None,
            b2_signing_secret=b2_signing_secret or None,
            box_primary_key=box_primary_key or None,
            box_secondary_key=box_secondary_key or None,
            cloudinary=cloudinary_settings,
            appwrite=AppwriteSettings(*appwrite) if appwrite else None,
        )
        return func(*args, **kwargs)

    options = [
        setting(
            "--gcs-audience",
            "SEQGATE_GCS_AUDIENCE",
            default=None,
            help="Audience of the Pub/Sub push subscription's OIDC token (its push endpoint URL"
            " unless set otherwise); POST /gcs is served only with --gcs-jwks-file.",
        ),
        setting(
            "--gcs-jwks-file",
            "SEQGATE_GCS_JWKS_FILE",
            default=None,
            help="JSON Web Key Set (a saved copy of https://www.googleapis.com/oauth2/v3/certs)"
            " that push tokens are verified with; refresh it when Google rotates keys.",
        ),
        setting(
            "--gcs-service-account",
            "SEQGATE_GCS_SERVICE_ACCOUNT",
            default=None,
            help="Email the push token must name, verified (default: any account).",
        ),
        setting(
            "--azure-secret",
            "SEQGATE_AZURE_SECRET",
            default=None,
            help="Shared secret of the Event Grid subscription, sent in the endpoint's query"
            " (?code=SECRET) or an X-Seqgate-Secret delivery header; POST/OPTIONS /azure are"
            " served only when set.",
        ),
        setting(
            "--supabase-secret",
            "SEQGATE_SUPABASE_SECRET",
            default=None,
            help="Value of the X-Seqgate-Secret header of the Supabase database webhook;"
            " POST /supabase is served only when set.",
        ),
        setting(
            "--b2-signing-secret",
            "SEQGATE_B2_SIGNING_SECRET",
            default=None,
            help="Signing secret of the B2 event notification rule; POST /b2 is served only"
            " when set.",
        ),
        setting(
            "--box-primary-key",
            "SEQGATE_BOX_PRIMARY_KEY",
            default=None,
            help="Primary signature key of the Box application; POST /box is served when this"
            " or --box-secondary-key is set.",
        ),
        setting(
            "--box-secondary-key",
            "SEQGATE_BOX_SECONDARY_KEY",
            default=None,
            help="Secondary signature key of the Box application (for key rotation).",
        ),
        setting(
            "--cloudinary-api-secret",
            "SEQGATE_CLOUDINARY_API_SECRET",
            default=None,
            help="API secret that signs Cloudinary notifications; POST /cloudinary is served"
            " only when set (with --cloudinary-cloud-name).",
        ),
        setting(
            "--cloudinary-cloud-name",
            "SEQGATE_CLOUDINARY_CLOUD_NAME",
            default=None,
            help="Cloud name of the product environment: the bucket of Cloudinary events.",
        ),
        setting(
            "--cloudinary-signature-algorithm",
            "SEQGATE_CLOUDINARY_SIGNATURE_ALGORITHM",
            default="sha1",
            type=click.Choice(["sha1", "sha256"]),
            help="The account's webhook signature algorithm.",
        ),
        setting(
            "--appwrite-signature-key",
            "SEQGATE_APPWRITE_SIGNATURE_KEY",
            default=None,
            help="Signature key of the Appwrite webhook; POST /appwrite is served only when"
            " set (with --appwrite-webhook-url).",
        ),
        setting(
            "--appwrite-webhook-url",
            "SEQGATE_APPWRITE_WEBHOOK_URL",
            default=None,
            help="The webhook's URL exactly as configured in Appwrite (it is signed): the"
            " public address, not --host/--port.",
        ),
    ]
    wrapped: Callable[..., Any] = with_webhooks
    for option in reversed(options):
        wrapped = option(wrapped)
    return wrapped


def _together(
    first: tuple[str, str | None], second: tuple[str, str | None]
) -> tuple[str, str] | None:
    """The values of two (flag, value) options that only work together: both or neither."""
    (flag, value), (other_flag, other) = first, second
    if not value and not other:
        return None
    if not value or not other:
        missing, given = (flag, other_flag) if not value else (other_flag, flag)
        raise CliError(f"{missing}: required with {given}")
    return value, other


def _gcs_verifier(
    audience: str | None, jwks_file: str | None, service_account: str | None
) -> GcsPushVerifier | None:
    """The verifier of POST /gcs from --gcs-audience, --gcs-jwks-file, --gcs-service-account."""
    from connectors.gcs_auth import GcsPushVerifier, load_jwks

    pair = _together(("--gcs-audience", audience), ("--gcs-jwks-file", jwks_file))
    if pair is None:
        if service_account:
            raise CliError("--gcs-service-account: requires --gcs-audience and --gcs-jwks-file")
        return None
    audience, jwks_file = pair
    try:
        text = Path(jwks_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        problem = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise CliError(f"--gcs-jwks-file {jwks_file}: cannot read it ({problem})") from error
    try:
        keys = load_jwks(text)
    except ValueError as error:
        raise CliError(f"--gcs-jwks-file {jwks_file}: {error}") from error
    return GcsPushVerifier(keys, audience, service_account or None)


@bridge.command("http")
@setting("--host", "SEQGATE_HTTP_HOST", default="127.0.0.1", help="Address to listen on.")
@setting(
    "--port",
    "SEQGATE_HTTP_PORT",
    default=8080,
    type=click.IntRange(0, 65_535),
    help="Port to listen on; 0 picks a free one. The address is printed on stderr as"
    " `listening on http://HOST:PORT`.",
)
@bootstrap_option
@_bridge_topic_options
@setting(
    "--max-body-bytes",
    "SEQGATE_HTTP_MAX_BODY_BYTES",
    default=1024 * 1024,
    type=click.IntRange(1, 1024 * 1024 * 1024),
    help="Larger request bodies are refused with 413.",
)
@setting(
    "--s3-token",
    "SEQGATE_S3_TOKEN",
    default=None,
    help="Bearer token required on POST /s3 (default: /s3 needs none; set one unless"
    " only trusted local senders can reach --host).",
)
@setting(
    "--minio-token",
    "SEQGATE_MINIO_TOKEN",
    default=None,
    help="Bearer token of MinIO's webhook target (its auth_token); POST /minio is served"
    " only when set.",
)
@setting(
    "--eventbridge-header",
    "SEQGATE_EVENTBRIDGE_HEADER",
    default=None,
    help="NAME:VALUE of the header an EventBridge API destination's connection sends"
    " (API key authorization); POST /eventbridge is served only when set.",
)
@setting(
    "--sns-topic-arn",
    "SEQGATE_SNS_TOPIC_ARNS",
    type=_CommaList(),
    multiple=True,
    help="Topics whose signed SNS messages POST /sns accepts (and whose subscriptions it"
    " confirms); repeat or separate with commas. /sns is served only when set.",
)
@setting(
    "--sns-max-age-seconds",
    "SEQGATE_SNS_MAX_AGE_SECONDS",
    default=3600,
    type=click.IntRange(1, None),
    help="SNS messages whose Timestamp is further than this from now are refused (403).",
)
@setting(
    "--shutdown-timeout-seconds",
    "SEQGATE_HTTP_SHUTDOWN_TIMEOUT_SECONDS",
    default=30.0,
    type=click.FloatRange(0, None),
    help="On SIGTERM, how long requests in flight may take to finish.",
)
@_webhook_options
@filter_options
def bridge_http(
    host: str,
    port: int,
    bootstrap_servers: str,
    events_topic: str,
    rejected_topic: str,
    delivery_timeout_ms: int,
    max_body_bytes: int,
    s3_token: str | None,
    minio_token: str | None,
    eventbridge_header: str | None,
    sns_topic_arn: tuple[str, ...],
    sns_max_age_seconds: int,
    shutdown_timeout_seconds: float,
    event_filter: EventFilter,
    webhooks: WebhookSettings,
) -> None:
    """Receive storage webhooks (S3-family, SNS, EventBridge, MinIO, GCS, Azure,
    Supabase, B2, Box, Cloudinary, Appwrite) and publish them to Kafka.

    \b
    Routes (each POST; origin http:<route>):
      /s3           any body `seqgate parse` knows (Bearer --s3-token if set)
      /sns          SNS HTTP(S) subscription deliveries (signature verified,
                    topics pinned by --sns-topic-arn; confirms subscriptions)
      /eventbridge  EventBridge API destinations (--eventbridge-header)
      /minio        MinIO's webhook target (Bearer --minio-token)
      /gcs          GCS notifications by Pub/Sub push (OIDC token: --gcs-audience,
                    --gcs-jwks-file, optionally --gcs-service-account)
      /azure        Azure Event Grid, both schemas (--azure-secret in ?code= or
                    X-Seqgate-Secret; answers the validation event and the
                    CloudEvents OPTIONS handshake)
      /supabase     Supabase database webhook (X-Seqgate-Secret: --supabase-secret)
      /b2           Backblaze B2 event notifications (--b2-signing-secret)
      /box          Box webhooks V2 (--box-primary-key / --box-secondary-key)
      /cloudinary   Cloudinary notifications (--cloudinary-api-secret,
                    --cloudinary-cloud-name, --cloudinary-signature-algorithm)
      /appwrite     Appwrite storage webhooks (--appwrite-signature-key,
                    --appwrite-webhook-url)

    A route whose secret is not configured is not served (404). Answers 200
    only after Kafka acknowledged every event and dead letter of the request;
    503 when Kafka did not (the sender retries); 401/403 for failed
    authentication (logged and counted, never written to Kafka); 413 above
    --max-body-bytes. SIGTERM or Ctrl-C stops accepting, lets requests in
    flight finish, flushes, prints a JSON summary and exits 0.

    \b
    Example:
      seqgate bridge http --bootstrap-servers 127.0.0.1:9092 --port 8080 \\
        --minio-token "$MINIO_WEBHOOK_TOKEN" \\
        --sns-topic-arn arn:aws:sns:eu-west-1:111122223333:uploads
      curl --data-binary @notification.json http://127.0.0.1:8080/s3

    \b
    Example (GCS push, Azure Event Grid and Box behind https://hooks.example.com):
      curl -so google-jwks.json https://www.googleapis.com/oauth2/v3/certs
      seqgate bridge http --bootstrap-servers 127.0.0.1:9092 --port 8080 \\
        --gcs-audience https://hooks.example.com/gcs --gcs-jwks-file google-jwks.json \\
        --azure-secret "$EVENT_GRID_SECRET" \\
        --box-primary-key "$BOX_PRIMARY_KEY" --box-secondary-key "$BOX_SECONDARY_KEY"
      # Event Grid endpoint: https://hooks.example.com/azure?code=$EVENT_GRID_SECRET
    """
    import asyncio

    from connectors.http_source import HttpBridge, HttpSettings, serve
    from connectors.sns_signature import CertificateCache, SnsVerifier

    topic_arns = frozenset(_items(sns_topic_arn))
    settings = HttpSettings(
        max_body_bytes=max_body_bytes,
        s3_token=s3_token or None,
        minio_token=minio_token or None,
        eventbridge_header=_header_secret(eventbridge_header or None),
        sns=SnsVerifier(
            topic_arns=topic_arns,
            fetch_certificate=CertificateCache(),
            max_age_seconds=float(sns_max_age_seconds),
        )
        if topic_arns
        else None,
        webhooks=webhooks,
    )
    publisher = EventPublisher(
        bootstrap_servers,
        Topics(events_topic, rejected_topic),
        delivery_timeout_ms=delivery_timeout_ms,
    )
    bridge_server = HttpBridge(settings, publisher, event_filter)

    def listening(bound_host: str, bound_port: int) -> None:
        shown = f"[{bound_host}]" if ":" in bound_host else bound_host
        click.echo(f"listening on http://{shown}:{bound_port}", err=True)
        click.echo(f"routes: {', '.join('/' + r for r in settings.enabled_routes())}", err=True)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await serve(
            bridge_server,
            host,
            port,
            stop,
            shutdown_timeout_s=shutdown_timeout_seconds,
            on_listening=listening,
        )

    failure: str | None = None
    try:
        asyncio.run(run())
    except OSError as error:
        raise CliError(f"--host/--port: cannot listen on {host}:{port} ({error})") from error
    except PublishError as error:
        failure = str(error)
    click.echo(json.dumps(bridge_server.summary()))
    if failure is not None:
        raise CliError(failure)


# ---- worker ------------------------------------------------------------------------------------


def worker_options(func: F) -> F:
    options = [
        setting(
            "--batch-size",
            "SEQGATE_BATCH_SIZE",
            default=500,
            type=click.IntRange(1, 100_000),
            help="Records fetched per consume call.",
        ),
        setting(
            "--commit-interval-ms",
            "SEQGATE_COMMIT_INTERVAL_MS",
            default=100,
            type=click.IntRange(1, 600_000),
            help="Commit the transaction at least this often (latency bound).",
        ),
        setting(
            "--commit-every",
            "SEQGATE_COMMIT_EVERY",
            default=2000,
            type=click.IntRange(1, 10_000_000),
            help="Commit the transaction after this many input records.",
        ),
        setting(
            "--session-timeout-ms",
            "SEQGATE_SESSION_TIMEOUT_MS",
            default=45_000,
            type=click.IntRange(1000, 3_600_000),
            help="How long the group waits for a silent worker before moving its partitions.",
        ),
        setting(
            "--transaction-timeout-ms",
            "SEQGATE_TRANSACTION_TIMEOUT_MS",
            default=60_000,
            type=click.IntRange(1000, 900_000),
            help="How long a dead worker's open transaction may hold back read_committed"
            " readers before the broker aborts it (a restart with the same --instance-id"
            " ends it at once).",
        ),
        setting(
            "--stall-timeout-ms",
            "SEQGATE_STALL_TIMEOUT_MS",
            default=120_000,
            type=click.IntRange(1000, 86_400_000),
            help="Exit with an error (for a supervisor to restart the worker) after this long"
            " without consuming a record while its partitions have committed records to read.",
        ),
        setting(
            "--state-dir",
            "SEQGATE_STATE_DIR",
            default=".seqgate/state",
            type=click.Path(file_okay=False),
            help="Where the RocksDB watermark stores live (one per input partition).",
        ),
        click.option(
            "--print-config",
            is_flag=True,
            help="Print the resolved configuration as JSON and exit (shows what flags,"
            " SEQGATE_* variables and --config produced).",
        ),
        setting(
            "--instance-id",
            "SEQGATE_INSTANCE_ID",
            default=None,
            help="Stable name of this worker instance (default: the host name);"
            " transactional.id = <application-id>-<instance-id>.",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@cli.command()
@bootstrap_option
@topic_options
@application_option
@policy_options
@worker_options
def worker(
    bootstrap_servers: str,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    policy: Policy,
    instance_id: str | None,
    state_dir: str,
    commit_every: int,
    commit_interval_ms: int,
    batch_size: int,
    session_timeout_ms: int,
    transaction_timeout_ms: int,
    stall_timeout_ms: int,
    print_config: bool,
) -> None:
    """Run the exactly-once processor until SIGTERM or Ctrl-C.

    On SIGTERM the open transaction is committed and the worker leaves its
    group cleanly. Exits 1 with one line on stderr on a fatal error
    (for example when fenced by another worker with the same instance id).

    \b
    Example:
      seqgate worker --bootstrap-servers 127.0.0.1:9092 --instance-id w1 --ordering aws
    """
    from streams.faults import injector_from_env
    from streams.processor import Worker, WorkerConfig, WorkerFatalError

    instance = instance_id or socket.gethostname()
    try:
        faults = injector_from_env(os.environ.get("SEQGATE_FAULT"))
    except ValueError as error:
        raise CliError(str(error)) from error
    config = WorkerConfig(
        bootstrap_servers=bootstrap_servers,
        state_dir=Path(state_dir) / application_id / instance,
        application_id=application_id,
        instance_id=instance,
        input_topic=input_topic,
        outbox_topic=outbox_topic,
        rejected_topic=rejected_topic,
        policy=policy,
        commit_every=commit_every,
        commit_interval_ms=commit_interval_ms,
        batch_size=batch_size,
        session_timeout_ms=session_timeout_ms,
        transaction_timeout_ms=transaction_timeout_ms,
        stall_timeout_ms=stall_timeout_ms,
    )
    if print_config:
        resolved = {
            "bootstrap_servers": config.bootstrap_servers,
            "application_id": config.application_id,
            "instance_id": config.instance_id,
            "transactional_id": config.transactional_id,
            "input_topic": config.input_topic,
            "outbox_topic": config.outbox_topic,
            "rejected_topic": config.rejected_topic,
            "changelog_topic": config.changelog_topic,
            "state_dir": str(config.state_dir),
            "ordering": config.policy.order.name,
            "admit_kinds": sorted(config.policy.admitted_kinds),
            "ordered_sources": sorted(config.policy.ordered_sources),
            "dedupe_window_ms": config.policy.dedupe_window_ms,
            "commit_every": config.commit_every,
            "commit_interval_ms": config.commit_interval_ms,
            "batch_size": config.batch_size,
            "session_timeout_ms": config.session_timeout_ms,
            "transaction_timeout_ms": config.transaction_timeout_ms,
            "stall_timeout_ms": config.stall_timeout_ms,
        }
        click.echo(json.dumps(resolved, indent=2))
        return
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    processor = Worker(config, faults=faults)
    try:
        processor.run(stop)
    except WorkerFatalError as error:
        click.echo(f"error: {error}", err=True)
        sys.exit(1)
    summary = {
        "stopped": True,
        **processor.counters.totals(),
        "by_partition": processor.counters.per_partition(),
    }
    click.echo(json.dumps(summary), err=True)


# ---- verify ------------------------------------------------------------------------------------

_REPORT_COLUMNS = (
    "partition",
    "committed_offset",
    "inputs",
    "expected",
    "found",
    "missing",
    "unexpected",
    "duplicated",
    "not_increasing",
    "watermark_mismatches",
)


@cli.command()
@bootstrap_option
@topic_options
@application_option
@policy_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(
    bootstrap_servers: str,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    policy: Policy,
    as_json: bool,
) -> None:
    """Check the outbox against a replay of the input (DESIGN §5's invariant).

    Replays each input partition up to the group's committed offset through
    the worker's decision rule, and compares with the outbox as a
    read_committed consumer sees it and with the committed watermarks.
    Use the same --ordering and --admit-kinds as the workers. Exits 0 when
    nothing is missing, unexpected, duplicated or out of order, 1 otherwise.

    \b
    Example:
      seqgate verify --bootstrap-servers 127.0.0.1:9092 --application-id seqgate
    """
    from streams.topics import changelog_topic
    from streams.verify import PartitionReport, VerifyError, VerifyTarget
    from streams.verify import verify as run_verify

    target = VerifyTarget(
        bootstrap_servers=bootstrap_servers,
        application_id=application_id,
        input_topic=input_topic,
        outbox_topic=outbox_topic,
        changelog_topic=changelog_topic(application_id),
        policy=policy,
    )

    def progress(total: int, report: PartitionReport) -> None:
        click.echo(
            f"verified partition {report.partition + 1}/{total}:"
            f" {report.inputs} inputs, {report.problems()} problems",
            err=True,
        )

    try:
        report = run_verify(target, progress=progress)
    except VerifyError as error:
        raise CliError(str(error)) from error
    if as_json:
        click.echo(json.dumps(report.as_dict(), indent=2))
    else:
        click.echo("\t".join(_REPORT_COLUMNS))
        for partition in report.partitions:
            click.echo("\t".join(str(getattr(partition, name)) for name in _REPORT_COLUMNS))
        totals = report.totals()
        click.echo("total\t-\t" + "\t".join(str(totals[n]) for n in _REPORT_COLUMNS[2:]))
        for partition in report.partitions:
            for example in partition.examples:
                click.echo(f"partition {partition.partition}: {example}")
        click.echo("OK: the outbox is exactly the replay of the input" if report.ok() else "FAILED")
    if not report.ok():
        sys.exit(1)


# ---- demo --------------------------------------------------------------------------------------


@cli.command()
@click.option(
    "--bootstrap-servers",
    envvar=["SEQGATE_BOOTSTRAP_SERVERS", "KAFKA_BOOTSTRAP_SERVERS"],
    show_envvar=True,
    default=None,
    help="Use this broker instead of starting a local one for the demo.",
)
def demo(bootstrap_servers: str | None) -> None:
    """Run the guide's demonstration end to end on a real broker.

    Starts a local development broker (unless one is given), creates the
    topics, runs a worker, feeds the guide's fixture deliveries, restarts the
    worker, and prints each decision; then stops everything it started.

    \b
    Example:
      seqgate demo
    """
    from streams.demo import run_demo

    run_demo(bootstrap_servers, echo=click.echo)


def _register_broker() -> None:
    from streams.devbroker.cli import broker

    cli.add_command(broker)


_register_broker()


def main() -> None:
    cli(prog_name="seqgate")


if __name__ == "__main__":
    main()
