"""`seqgate bench`: the benchmark command (registered by seqgate/cli/__init__.py)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from seqgate.cli.options import optional_kafka_options
from seqgate.runtime.engines import ENGINES
from seqgate.runtime.errors import UsageError
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.streams.worker.cadence import DEFAULT_COMMIT_EVERY, DEFAULT_COMMIT_INTERVAL_MS
from seqgate_devtools.bench.workload import WorkloadSpec

if TYPE_CHECKING:
    from seqgate_devtools.bench.failover import FailoverSettings
    from seqgate_devtools.bench.runner import BenchSettings

_QUICK = {
    "events": 20_000,
    "identities": 2_000,
    "latency_seconds": 5.0,
    "sqlite_events": 5_000,
    "rounds": 1,
}
_FULL = {
    "events": 1_000_000,
    "identities": 100_000,
    "latency_seconds": 20.0,
    "sqlite_events": 50_000,
    "rounds": 3,
}

_TORTURE = {"events": 200_000, "identities": 20_000}
_TORTURE_QUICK = {"events": 50_000, "identities": 5_000}
_ALL_PEERS = ("kafka-streams", "quix", "faust")
# --failover's state sizes (K), by --quick.
_FAILOVER_K = {False: (100_000, 1_000_000), True: (20_000,)}


@click.command("bench")
@optional_kafka_options
@click.option("--events", type=click.IntRange(min=1), default=None, help="N (default 1,000,000).")
@click.option("--identities", type=click.IntRange(min=1), default=None, help="K (default 100,000).")
@click.option("--partitions", type=click.IntRange(min=1), default=6, show_default=True)
@click.option(
    "--redelivery-rate", type=click.FloatRange(0, 1, max_open=True), default=0.2, show_default=True
)
@click.option("--reorder-rate", type=click.FloatRange(0, 1), default=0.2, show_default=True)
@click.option("--seed", type=int, default=7, show_default=True, help="Workload seed.")
@click.option(
    "--commit-every", type=click.IntRange(min=1), default=DEFAULT_COMMIT_EVERY, show_default=True
)
@click.option(
    "--commit-interval-ms",
    type=click.IntRange(min=1),
    default=DEFAULT_COMMIT_INTERVAL_MS,
    show_default=True,
)
@click.option("--batch-size", type=click.IntRange(min=1), default=500, show_default=True)
@click.option(
    "--sqlite-events",
    type=click.IntRange(min=1),
    default=None,
    help="Events for the SQLite reference: a prefix of the workload (default 50,000; quick 5,000).",
)
@click.option(
    "--bridge-events",
    type=click.IntRange(min=1),
    default=200_000,
    show_default=True,
    help="Raw notifications for the bridge stage: a prefix of the workload.",
)
@click.option(
    "--latency-seconds",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Duration of the latency stage's offered load (default 20; quick 5).",
)
@click.option(
    "--rss-budget-mb",
    type=click.IntRange(min=1),
    default=512,
    show_default=True,
    help="The worker's peak RSS above this is reported as a miss.",
)
@click.option(
    "--rounds",
    type=click.IntRange(min=1),
    default=None,
    help="Alternating (limit, processor) pairs; the median-ratio pair is reported"
    " (default 3; quick 1).",
)
@click.option(
    "--vary",
    "vary",
    multiple=True,
    metavar="SETTING=VALUE",
    help="Only compare the Worker with this setting changed against the default, side by"
    " side (repeatable): producer.<key>=<v>, consumer.<key>=<v> (librdkafka),"
    " batch-size=<n>, commit-every=<n>, commit-interval-ms=<ms>, engine=python or"
    " schema-registry=<URL> (registry mode, mock://NAME for the client's"
    " in-memory one). Runs --rounds alternating rounds (default 2 here).",
)
@click.option(
    "--engine",
    type=click.Choice(ENGINES),
    default="compiled",
    show_default=True,
    help="The Worker's record step (see `seqgate worker --help`) and the bridge stage's"
    " reading and writing (`seqgate bridge file --help`); --vary engine=python measures the"
    " Worker's other one side by side.",
)
@click.option(
    "--warmup/--no-warmup",
    default=True,
    show_default=True,
    help="Run one (limit, Worker) round first and leave it out of the figures: a broker"
    " that has just started serves its first full read and transactions cold.",
)
@click.option(
    "--peers",
    "peers",
    default="",
    metavar="NAME[,NAME...]",
    help="Also run these peers in every round on the same input, each judged by the same"
    " oracle as the Worker: kafka-streams (Java, built with Maven), quix (Quix Streams, in a"
    " venv of its own), faust (faust-streaming). A peer that cannot run here is reported as"
    " 'not run: <why>'.",
)
@click.option(
    "--peer-torture",
    is_flag=True,
    help="Instead of measuring speed: put the Worker and each peer (--peers, default all)"
    " through the same kill -9 schedule on one input, then judge every outbox (missing,"
    " duplicated, unexpected). Default N/K 200,000 / 20,000 (quick 50,000 / 5,000).",
)
@click.option(
    "--kills",
    type=click.IntRange(min=1),
    default=6,
    show_default=True,
    help="SIGKILLs per system in --peer-torture.",
)
@click.option(
    "--failover",
    is_flag=True,
    help="Instead of measuring speed: time how long partitions go unserved when one of two"
    " workers is killed (SIGKILL, or inside its commit) or stopped (SIGTERM), with 0 and 1"
    " standby replicas, under a steady offered load (issue 39). Default K 100,000 and"
    " 1,000,000 (quick 20,000).",
)
@click.option(
    "--failover-identities",
    default=None,
    metavar="K[,K...]",
    help="--failover: the state sizes (distinct identities pre-loaded), one run each.",
)
@click.option(
    "--failover-rate",
    type=click.FloatRange(min=0, min_open=True),
    default=2_000.0,
    show_default=True,
    help="--failover: events/s offered during the kill and the takeover.",
)
@click.option(
    "--failover-membership",
    type=click.Choice(["static", "dynamic"]),
    default="static",
    show_default=True,
    help="--failover: the workers' --membership (static keeps a stopped worker's partitions"
    " for the session timeout; dynamic hands them over at the stop).",
)
@click.option(
    "--failover-rebalance",
    type=click.Choice(["cooperative", "eager"]),
    default="cooperative",
    show_default=True,
    help="--failover: the workers' --rebalance (eager stops the survivor's own partitions"
    " at each rebalance too).",
)
@click.option("--profile", is_flag=True, help="Also run the Worker under cProfile (not timed).")
@click.option("--keep-topics", is_flag=True, help="Do not delete the benchmark's topics.")
@click.option("--quick", is_flag=True, help="Small N/K (20,000 / 2,000): under a minute, for CI.")
@click.option(
    "--report",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("bench-report.json"),
    show_default=True,
)
@click.option(
    "--chart",
    type=click.Path(dir_okay=False, path_type=Path),
    default=Path("bench-chart.png"),
    show_default=True,
    help="The PNG of the figures; needs the development tools' chart extra (pip install"
    " './devtools[chart]'): without it, not drawn unless asked for, and an error before"
    " anything runs if it is.",
)
def bench(
    kafka: KafkaSettings | None,
    events: int | None,
    identities: int | None,
    partitions: int,
    redelivery_rate: float,
    reorder_rate: float,
    seed: int,
    commit_every: int,
    commit_interval_ms: int,
    batch_size: int,
    sqlite_events: int | None,
    bridge_events: int,
    latency_seconds: float | None,
    rss_budget_mb: int,
    rounds: int | None,
    vary: tuple[str, ...],
    engine: str,
    warmup: bool,
    peers: str,
    peer_torture: bool,
    kills: int,
    profile: bool,
    keep_topics: bool,
    quick: bool,
    report: Path,
    chart: Path,
    **failover_options: Any,  # --failover and its options (_failover_ran)
) -> None:
    """Measure the processor against its limit, the guide's SQLite reference,
    latency, restore and the bridge, in one run; print a table, write a JSON
    report and a PNG chart. Targets are reported as pass/miss, never as a failure.

    \b
    Example:
      seqgate bench --quick
      seqgate bench --events 200000 --identities 20000 --report r.json --chart r.png
      seqgate bench --events 400000 --vary producer.linger.ms=0 --vary batch-size=2000
      seqgate bench --events 200000 --identities 20000 --vary engine=python
      seqgate bench --quick --peers kafka-streams,quix,faust
      seqgate bench --failover --failover-identities 100000
    """
    from seqgate_devtools.bench.peers.comparison import parse_peer_names
    from seqgate_devtools.bench.runner import BenchSettings

    other_mode = peer_torture or bool(vary)
    if _failover_ran(failover_options, other_mode, quick, keep_topics, kafka, report):
        return
    defaults = _QUICK if quick else _FULL
    if peer_torture:
        defaults = {**defaults, **(_TORTURE_QUICK if quick else _TORTURE)}
    try:
        sizes = int(events or defaults["events"]), int(identities or defaults["identities"])
        spec = WorkloadSpec(*sizes, partitions, redelivery_rate, reorder_rate, seed)
        peer_names = parse_peer_names(peers)
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    settings = BenchSettings(
        spec=spec,
        commit_every=commit_every,
        commit_interval_ms=commit_interval_ms,
        batch_size=batch_size,
        sqlite_events=sqlite_events or int(defaults["sqlite_events"]),
        bridge_events=bridge_events,
        latency_seconds=latency_seconds or defaults["latency_seconds"],
        rss_budget_mb=rss_budget_mb,
        profile=profile,
        keep_topics=keep_topics,
        rounds=rounds or int(defaults["rounds"]),
        peers=peer_names,
        warmup=warmup,
        engine=engine,
    )
    if peer_torture:
        _torture(settings, peer_names or _ALL_PEERS, kills, kafka, report)
        return
    if vary:
        _compare_settings(settings, vary, rounds or 2, kafka, report)
        return
    _measure(settings, kafka, report, _chart_to_draw(chart))


def _chart_to_draw(chart: Path) -> Path | None:
    """--chart's path, or None when matplotlib is missing and the chart was not asked for;
    asked for without it, the one error line, before any broker starts."""
    from seqgate_devtools.bench.chart import NEEDS_CHART_EXTRA, chart_available

    if chart_available():
        return chart
    source = click.get_current_context().get_parameter_source("chart")
    if source is not click.core.ParameterSource.DEFAULT:
        raise UsageError(f"--chart {chart}: {NEEDS_CHART_EXTRA}")
    return None


def _measure(
    settings: BenchSettings, kafka: KafkaSettings | None, report: Path, chart: Path | None
) -> None:
    from seqgate_devtools.bench.chart import NEEDS_CHART_EXTRA, draw
    from seqgate_devtools.bench.report import as_json, table
    from seqgate_devtools.bench.runner import broker, run_bench

    if kafka is not None:
        ensure_reachable(kafka)
    with broker(kafka) as (target, kafka_version):
        result = run_bench(settings, target, kafka_version)
    click.echo(table(result.figures))
    report.write_text(json.dumps(as_json(result.figures), indent=2) + "\n")
    if chart is None:
        click.echo(f"report: {report}  chart: not drawn ({NEEDS_CHART_EXTRA})")
        return
    draw(result.figures, result.latencies_ms, chart)
    click.echo(f"report: {report}  chart: {chart}")


def _torture(
    settings: BenchSettings,
    peers: tuple[str, ...],
    kills: int,
    kafka: KafkaSettings | None,
    report: Path,
) -> None:
    from seqgate_devtools.bench.peers.torture import torture_table
    from seqgate_devtools.bench.runner import broker
    from seqgate_devtools.bench.torture_run import run_peer_torture

    if kafka is not None:
        ensure_reachable(kafka)
    with broker(kafka) as (target, _version):
        result = run_peer_torture(
            target,
            settings.spec,
            peers,
            kills=kills,
            commit_interval_ms=settings.commit_interval_ms,
            keep_topics=settings.keep_topics,
        )
    click.echo(torture_table(result.results, result.schedule))
    report.write_text(json.dumps(result.as_json(), indent=2) + "\n")
    click.echo(f"report: {report}")


def _failover_ran(
    options: dict[str, Any],
    other_mode: bool,
    quick: bool,
    keep_topics: bool,
    kafka: KafkaSettings | None,
    report: Path,
) -> bool:
    """Run --failover if asked for (alone: another mode's options are refused); whether it ran."""
    identities: str | None = options["failover_identities"]
    if options["failover"] and other_mode:
        raise click.UsageError("--failover runs alone: leave out --peer-torture and --vary")
    if not options["failover"]:
        if identities is not None:
            raise click.UsageError("--failover-identities is an option of --failover")
        return False
    chosen = _failover_settings(identities, options, quick, keep_topics)
    _failover(chosen, kafka, report)
    return True


def _failover_settings(
    identities: str | None, options: dict[str, Any], quick: bool, keep_topics: bool
) -> FailoverSettings:
    from seqgate_devtools.bench.failover import FailoverSettings
    from seqgate_devtools.bench.failover_report import parse_identity_counts

    try:
        counts = parse_identity_counts(identities) if identities else _FAILOVER_K[quick]
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    return FailoverSettings(
        identities=counts,
        offered_rate=options["failover_rate"],
        keep_topics=keep_topics,
        membership=options["failover_membership"],
        rebalance=options["failover_rebalance"],
    )


def _failover(settings: FailoverSettings, kafka: KafkaSettings | None, report: Path) -> None:
    from seqgate_devtools.bench.failover import run_failover
    from seqgate_devtools.bench.failover_report import failover_table
    from seqgate_devtools.bench.runner import broker

    if kafka is not None:
        ensure_reachable(kafka)
    with broker(kafka) as (target, kafka_version):
        run = run_failover(target, settings, kafka_version)
    click.echo(failover_table(run.results))
    report.write_text(json.dumps(run.as_json(), indent=2) + "\n")
    click.echo(f"report: {report}")


def _compare_settings(
    settings: BenchSettings,
    vary: tuple[str, ...],
    rounds: int,
    kafka: KafkaSettings | None,
    report: Path,
) -> None:
    from seqgate_devtools.bench.runner import broker, preload, progress
    from seqgate_devtools.bench.stage_process import run_stage, stage_timeout
    from seqgate_devtools.bench.vary import compare_variants, parse_variant, variants_table

    try:
        variants = [parse_variant(text) for text in vary]
    except ValueError as error:
        raise click.UsageError(str(error)) from error
    timeout = stage_timeout(settings.spec.events)
    common = {
        "engine": settings.engine,
        "commit_every": settings.commit_every,
        "commit_interval_ms": settings.commit_interval_ms,
        "batch_size": settings.batch_size,
    }
    if kafka is not None:
        ensure_reachable(kafka)
    with broker(kafka) as (target, _version):
        results = compare_variants(
            variants,
            spec=settings.spec,
            common={**common, "kafka": target},
            kafka=target,
            rounds=rounds,
            run_stage=lambda stage: run_stage(stage, timeout),
            preload=preload,
            progress=progress,
            prefix=f"seqgate-bench-{uuid.uuid4().hex[:8]}",
        )
    click.echo(variants_table(results))
    document = {
        "workload": {"events": settings.spec.events, "identities": settings.spec.identities},
        "settings": common,
        "variants": [{"setting": r.label, "rates": r.rates} for r in results],
    }
    report.write_text(json.dumps(document, indent=2) + "\n")
    click.echo(f"report: {report}")
