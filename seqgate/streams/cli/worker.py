"""`seqgate worker`, `seqgate verify` and `seqgate demo`."""

from __future__ import annotations

import json
import os
import signal
import socket
import sys
import threading
from pathlib import Path

import click

from seqgate.streams.cli.app import cli
from seqgate.streams.cli.options import (
    F,
    application_option,
    kafka_options,
    optional_kafka_options,
    policy_options,
    reach,
    session_timeout_option,
    setting,
    stacked,
    topic_options,
)
from seqgate.streams.rules.policy import Policy
from seqgate.streams.runtime.errors import CliError
from seqgate.streams.runtime.kafka_settings import KafkaSettings

# ---- worker ------------------------------------------------------------------------------------

DEFAULT_AUDIT_TOPIC = "object-events.decisions"


def metrics_options(func: F) -> F:
    """--metrics-port / --metrics-host: /metrics, /healthz and /readyz (default: off)."""
    func = setting(
        "--metrics-host",
        "SEQGATE_METRICS_HOST",
        default="127.0.0.1",
        help="Address the metrics endpoint listens on (0.0.0.0: every interface).",
    )(func)
    return setting(
        "--metrics-port",
        "SEQGATE_METRICS_PORT",
        default=None,
        type=click.IntRange(0, 65_535),
        help="Serve Prometheus /metrics, /healthz (alive) and /readyz (ready) on this port"
        " (0 picks a free one, printed on stderr). Default: off.",
    )(func)


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
        session_timeout_option("worker"),
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
            "--audit-topic",
            "SEQGATE_AUDIT_TOPIC",
            default=None,
            help="Write every decision (duplicates, stale, filtered… included) to this topic,"
            " in the same transaction as the outbox (the audit log). Default: off.",
        ),
        click.option(
            "--audit",
            is_flag=True,
            help=f"The audit log in the default topic {DEFAULT_AUDIT_TOPIC}"
            " (create it with `seqgate topics create --audit`).",
        ),
        setting(
            "--instance-id",
            "SEQGATE_INSTANCE_ID",
            default=None,
            help="Stable name of this worker instance (default: the host name);"
            " transactional.id = <application-id>-<instance-id>.",
        ),
    ]
    return stacked(func, options)


@cli.command()
@kafka_options
@topic_options
@application_option
@policy_options
@worker_options
@metrics_options
def worker(
    kafka: KafkaSettings,
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
    audit_topic: str | None,
    audit: bool,
    metrics_port: int | None,
    metrics_host: str,
) -> None:
    """Run the exactly-once processor until SIGTERM or Ctrl-C.

    On SIGTERM the open transaction is committed and the worker leaves its
    group cleanly. Exits 1 with one line on stderr on a fatal error
    (for example when fenced by another worker with the same instance id).

    \b
    Example:
      seqgate worker --bootstrap-servers 127.0.0.1:9092 --instance-id w1 --ordering aws
    """
    from seqgate.streams.runtime.faults import injector_from_env
    from seqgate.streams.worker.processor import Worker, WorkerConfig, WorkerFatalError

    instance = instance_id or socket.gethostname()
    try:
        faults = injector_from_env(os.environ.get("SEQGATE_FAULT"))
    except ValueError as error:
        raise CliError(str(error)) from error
    config = WorkerConfig(
        kafka=kafka,
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
        audit_topic=audit_topic or (DEFAULT_AUDIT_TOPIC if audit else None),
        metrics_host=metrics_host,
        metrics_port=metrics_port,
    )
    if print_config:
        resolved = {
            "kafka": config.kafka.describe(),
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
            "audit_topic": config.audit_topic,
            "metrics_port": config.metrics_port,
            "metrics_host": config.metrics_host,
        }
        click.echo(json.dumps(resolved, indent=2))
        return
    stop = threading.Event()

    def request_stop(signum: int, frame: object) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, request_stop)
    signal.signal(signal.SIGINT, request_stop)
    reach(kafka)
    try:
        processor = Worker(config, faults=faults)
    except OSError as error:
        raise CliError(
            f"--metrics-host/--metrics-port: cannot listen on {metrics_host}:{metrics_port}"
            f" ({error})"
        ) from error
    server = processor.metrics.server
    if server is not None:
        click.echo(f"metrics on http://{server.host}:{server.port}/metrics", err=True)
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
@kafka_options
@topic_options
@application_option
@policy_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def verify(
    kafka: KafkaSettings,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    policy: Policy,
    as_json: bool,
) -> None:
    """Check the outbox against a replay of the input (docs/design.md §5.7's invariant).

    Replays each input partition up to the group's committed offset through
    the worker's decision rule, and compares with the outbox as a
    read_committed consumer sees it and with the committed watermarks.
    Use the same --ordering and --admit-kinds as the workers. Exits 0 when
    nothing is missing, unexpected, duplicated or out of order, 1 otherwise.

    \b
    Example:
      seqgate verify --bootstrap-servers 127.0.0.1:9092 --application-id seqgate
    """
    from seqgate.streams.runtime.topics import changelog_topic
    from seqgate.streams.tools.verify import PartitionReport, VerifyError, VerifyTarget
    from seqgate.streams.tools.verify import verify as run_verify

    reach(kafka)
    target = VerifyTarget(
        kafka=kafka,
        application_id=application_id,
        input_topic=input_topic,
        outbox_topic=outbox_topic,
        changelog_topic=changelog_topic(application_id),
        policy=policy,
        rejected_topic=rejected_topic,
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
@optional_kafka_options
def demo(kafka: KafkaSettings | None) -> None:
    """Run the guide's demonstration end to end on a real broker.

    Starts a local development broker (unless one is given), creates the
    topics, runs a worker, feeds the guide's fixture deliveries, restarts the
    worker, and prints each decision; then stops everything it started.

    \b
    Example:
      seqgate demo
    """
    from seqgate.streams.devtools.demo import run_demo
    from seqgate.streams.worker.processor import WorkerFatalError

    if kafka is not None:
        reach(kafka)
    try:
        run_demo(kafka, echo=click.echo)
    except (WorkerFatalError, RuntimeError) as error:
        raise CliError(f"the demo failed: {error}") from error
