"""`seqgate worker`: the exactly-once processor."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import click

from seqgate.cli.app import cli
from seqgate.cli.options import (
    DEFAULT_AUDIT_TOPIC,
    F,
    application_option,
    audit_topic_of,
    batch_size_option,
    kafka_options,
    metrics_options,
    policy_options,
    session_timeout_option,
    setting,
    stacked,
    topic_options,
    transaction_timeout_option,
)
from seqgate.cli.param_types import KafkaMemberId
from seqgate.cli.registry_options import registry_options
from seqgate.cli.running import (
    cannot_listen,
    injected_faults,
    print_metrics_address,
    stop_on_signals,
)
from seqgate.runtime.engines import ENGINES
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.schema_registry import describe_registry
from seqgate.schemas.framing import Framing
from seqgate.streams.rules.policy import Policy
from seqgate.streams.worker.cadence import DEFAULT_COMMIT_EVERY, DEFAULT_COMMIT_INTERVAL_MS

if TYPE_CHECKING:
    from seqgate.runtime.faults import FaultInjector
    from seqgate.streams.worker.processor import WorkerConfig


def worker_options(func: F) -> F:
    options = [
        batch_size_option(
            500,
            "Records read per batch; a shorter batch means the worker has caught up, and it"
            " commits.",
        ),
        setting(
            "--commit-interval-ms",
            "SEQGATE_COMMIT_INTERVAL_MS",
            default=DEFAULT_COMMIT_INTERVAL_MS,
            type=click.IntRange(1, 600_000),
            help="Commit the transaction at least this often while reading a backlog (the"
            " worker also commits whenever it has caught up).",
        ),
        setting(
            "--commit-every",
            "SEQGATE_COMMIT_EVERY",
            default=DEFAULT_COMMIT_EVERY,
            type=click.IntRange(1, 10_000_000),
            help="The largest transaction, in input records: reading a backlog, the worker"
            " commits after this many.",
        ),
        session_timeout_option("worker"),
        transaction_timeout_option(
            "How long a dead worker's open transaction may hold back read_committed"
            " readers before the broker aborts it (a restart with the same --instance-id"
            " ends it at once)."
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
            "--engine",
            "SEQGATE_ENGINE",
            type=click.Choice(ENGINES),
            default="compiled",
            help="The record step: compiled (seqgate._core, Rust; a record it cannot prove it"
            " decides as the Python rules do goes to them) or python (those rules alone, the"
            " reference). The same outcomes and bytes either way (docs/processor.md#engines).",
        ),
        setting(
            "--standby-replicas",
            "SEQGATE_STANDBY_REPLICAS",
            default=0,
            type=click.IntRange(0, 16),
            help="Warm copies of each partition's state kept on this many other workers (by"
            " instance id), so that a partition moved after a failure restores only the tail"
            " its standby lacks. Each copy costs the partition's disk and the reading of its"
            " changelog.",
        ),
        setting(
            "--membership",
            "SEQGATE_MEMBERSHIP",
            default="static",
            type=click.Choice(["static", "dynamic"]),
            help="static: the group keeps a stopped worker's partitions for"
            " --session-timeout-ms, so a restart takes them back without a move; dynamic: a"
            " stopped worker leaves the group and its partitions move at once (scale-down,"
            " handover to standbys).",
        ),
        setting(
            "--rebalance",
            "SEQGATE_REBALANCE",
            default="cooperative",
            type=click.Choice(["cooperative", "eager"]),
            help="cooperative (cooperative-sticky): a rebalance stops only the partitions that"
            " change owner; eager (range): every worker gives up all its partitions at each"
            " rebalance and gets its own back. Offered to measure the difference: the torture"
            " tests run cooperative.",
        ),
        setting(
            "--instance-id",
            "SEQGATE_INSTANCE_ID",
            type=KafkaMemberId(),
            default=None,
            help="Stable name of this worker instance; transactional.id ="
            " <application-id>-<instance-id> and the static group membership. Default: the"
            " host name, which changes with every pod of a Kubernetes Deployment (no fencing"
            " of the dead one, a rebalance each restart): use a StatefulSet's pod name.",
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
@registry_options
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
    framing: Framing,
    engine: str,
    standby_replicas: int,
    membership: str,
    rebalance: str,
) -> None:
    """Run the exactly-once processor until SIGTERM or Ctrl-C.

    On SIGTERM the open transaction is committed and the worker leaves its
    group cleanly. Exits 1 with one line on stderr on a fatal error
    (for example when fenced by another worker with the same instance id).

    \b
    Example:
      seqgate worker --bootstrap-servers 127.0.0.1:9092 --instance-id w1 --ordering aws
    """
    from seqgate.streams.worker.processor import WorkerConfig

    instance = instance_id or socket.gethostname()
    faults = injected_faults()
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
        audit_topic=audit_topic_of(audit_topic, audit),
        metrics_host=metrics_host,
        metrics_port=metrics_port,
        framing=framing,
        engine=engine,
        standby_replicas=standby_replicas,
        membership=membership,
        rebalance=rebalance,
    )
    if print_config:
        click.echo(json.dumps(resolved_configuration(config), indent=2))
        return
    run_worker(config, faults)


def resolved_configuration(config: WorkerConfig) -> dict[str, object]:
    """What --print-config shows: the settings after flags, variables and --config."""
    return {
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
        "schema_registry": describe_registry(config.framing),
        "engine": config.engine,
        "standby_replicas": config.standby_replicas,
        "membership": config.membership,
        "rebalance": config.rebalance,
    }


def run_worker(config: WorkerConfig, faults: FaultInjector) -> None:
    """Process until SIGTERM or Ctrl-C, then print the summary on stderr."""
    from seqgate.streams.worker.processor import Worker

    if config.engine == "compiled":
        from seqgate.runtime.engines import load_core

        load_core()  # its one line (exit 2) before anything else is checked
    stop = stop_on_signals()
    ensure_reachable(config.kafka)
    try:
        processor = Worker(config, faults=faults)
    except OSError as error:
        raise cannot_listen(config.metrics_host, config.metrics_port, error) from error
    server = processor.metrics.server
    if server is not None:
        print_metrics_address(server.host, server.port)
    processor.run(stop)
    summary = {
        "stopped": True,
        **processor.counters.totals(),
        "by_partition": processor.counters.per_partition(),
    }
    click.echo(json.dumps(summary), err=True)
