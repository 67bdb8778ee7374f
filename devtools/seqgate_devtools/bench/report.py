"""The benchmark's figures, ratios and target verdicts: pure (no I/O, no clock).

Targets are reported as pass / miss and never fail the command.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

LIMIT_SHARE = 0.8  # processor >= 0.8 x limit (issue 19)
SQLITE_FACTOR = 15.0  # processor >= 15 x the guide's SQLite reference
RESTORE_SHARE = 0.5  # restore >= 0.5 x raw changelog consume
BRIDGE_SHARE = 0.5  # bridge >= 0.5 x raw produce
LATENCY_MARGIN_MS = 50.0  # p99 <= commit interval + 50 ms, at half load (issue 19)


@dataclass(frozen=True, slots=True)
class Throughput:
    """`records` handled in `seconds`."""

    records: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, float]:
        return {"records": self.records, "seconds": round(self.seconds, 4), "rate": self.rate}


@dataclass(frozen=True, slots=True)
class LatencySummary:
    offered_rate: float
    achieved_rate: float
    samples: int
    expected: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    capacity_rate: float = math.nan  # what the latency layout sustained in place
    drain_s: float = math.nan  # last send -> last accepted event visible
    sustained: bool = True  # the offered load was kept up with (else: flagged)

    @classmethod
    def of(
        cls,
        offered: float,
        achieved: float,
        expected: int,
        latencies_ms: Sequence[float],
        *,
        capacity_rate: float = math.nan,
        drain_s: float = math.nan,
        sustained: bool = True,
    ) -> LatencySummary:
        ordered = sorted(latencies_ms)
        return cls(
            offered,
            achieved,
            len(ordered),
            expected,
            percentile(ordered, 50),
            percentile(ordered, 99),
            ordered[-1] if ordered else math.nan,
            capacity_rate,
            drain_s,
            sustained,
        )


@dataclass(frozen=True, slots=True)
class Target:
    name: str
    measured: float
    bound: float
    higher_is_better: bool
    unit: str
    flag: str | None = None  # why the figure is not a measurement of the product

    @property
    def passed(self) -> bool:
        if math.isnan(self.measured):
            return False
        if self.higher_is_better:
            return self.measured >= self.bound
        return self.measured <= self.bound

    @property
    def verdict(self) -> str:
        if self.flag is not None:
            return self.flag
        return "pass" if self.passed else "miss"

    def describe(self) -> str:
        relation = ">=" if self.higher_is_better else "<="
        return f"{_num(self.measured)}{self.unit} {relation} {_num(self.bound)}{self.unit}"


@dataclass
class BenchFigures:
    """Every measured figure of one run."""

    workload: dict[str, Any]
    settings: dict[str, Any]
    limit: Throughput
    processor: Throughput
    processor_peak_rss_bytes: int
    processor_outcomes: dict[str, int]
    sqlite: Throughput
    latency: LatencySummary
    restore: Throughput
    restored_watermarks: int
    raw_changelog: Throughput
    bridge: Throughput
    raw_produce: Throughput
    rss_budget_bytes: int
    # The same restore with the worker's restore-consumer fetch settings.
    restore_worker_config: Throughput = Throughput(0, 0.0)
    environment: dict[str, Any] = field(default_factory=dict)
    profile: list[dict[str, Any]] = field(default_factory=list)
    # The latency stage's worker: duration of each commit step (flush, send offsets, commit).
    latency_commit_ms: dict[str, float] = field(default_factory=dict)
    # The measuring (bench) process's own garbage collections during the latency stage.
    latency_gc_ms: dict[str, float] = field(default_factory=dict)
    # Every (limit, processor) pair measured; `limit`/`processor` are the median-ratio pair.
    rounds: list[dict[str, float]] = field(default_factory=list)
    # `--peers`: one summary per peer (seqgate_devtools.bench.peers.summary), and the
    # oracle's verdict on the Worker's first-round outbox.
    peers: list[dict[str, Any]] = field(default_factory=list)
    processor_verdict: dict[str, object] = field(default_factory=dict)


def spread(values: Sequence[float]) -> dict[str, float]:
    """count, p50, p99 and max of `values` (empty for none)."""
    if not values:
        return {}
    ordered = sorted(values)
    return {
        "count": float(len(ordered)),
        "p50": percentile(ordered, 50),
        "p99": percentile(ordered, 99),
        "max": ordered[-1],
    }


def percentile(ordered: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending sequence (NaN when empty)."""
    if not ordered:
        return math.nan
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return float(ordered[min(rank, len(ordered)) - 1])


def ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def ratios(figures: BenchFigures) -> dict[str, float]:
    return {
        "processor/limit": ratio(figures.processor.rate, figures.limit.rate),
        "processor/sqlite": ratio(figures.processor.rate, figures.sqlite.rate),
        "restore/raw": ratio(figures.restore.rate, figures.raw_changelog.rate),
        "bridge/raw": ratio(figures.bridge.rate, figures.raw_produce.rate),
    }


def latency_bound_ms(figures: BenchFigures) -> float:
    """The p99 target: the run's commit interval plus the margin."""
    return float(figures.settings["commit_interval_ms"]) + LATENCY_MARGIN_MS


def targets(figures: BenchFigures) -> list[Target]:
    r = ratios(figures)
    return [
        Target(f"processor >= {LIMIT_SHARE} x limit", r["processor/limit"], LIMIT_SHARE, True, "x"),
        Target("processor >= 15 x sqlite", r["processor/sqlite"], SQLITE_FACTOR, True, "x"),
        Target(
            f"p99 <= commit interval + {LATENCY_MARGIN_MS:.0f} ms",
            figures.latency.p99_ms,
            latency_bound_ms(figures),
            False,
            " ms",
            None if figures.latency.sustained else "load not sustained",
        ),
        Target("restore >= 0.5 x raw consume", r["restore/raw"], RESTORE_SHARE, True, "x"),
        Target("bridge >= 0.5 x raw produce", r["bridge/raw"], BRIDGE_SHARE, True, "x"),
        Target(
            f"worker peak RSS bounded ({figures.workload['identities']:,} identities)",
            figures.processor_peak_rss_bytes / 2**20,
            figures.rss_budget_bytes / 2**20,
            False,
            " MiB",
        ),
    ]


def outcomes_match(figures: BenchFigures) -> bool:
    """The worker's committed outcomes equal the workload's expected ones."""
    expected: dict[str, int] = figures.workload["expected"]
    return all(figures.processor_outcomes.get(name, 0) == n for name, n in expected.items())


def _num(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.2f}"


def _stage_row(name: str, t: Throughput, note: str = "") -> tuple[str, str, str]:
    return (name, f"{t.rate:,.0f} ev/s", f"{t.records:,} in {t.seconds:.2f} s{note}")


def _round_rows(rounds: list[dict[str, float]]) -> list[tuple[str, str, str]]:
    if len(rounds) < 2:
        return []
    described = ", ".join(
        f"{r['processor_rate']:,.0f}/{r['limit_rate']:,.0f} = {r['ratio']:.2f}x" for r in rounds
    )
    return [("  processor/limit, every round", f"{len(rounds)} rounds", described)]


def _peer_rows(figures: BenchFigures) -> list[tuple[str, str, str]]:
    """One row per peer (and its every-round ratios), after the Worker's oracle verdict."""
    if not figures.peers:
        return []
    verdict = figures.processor_verdict
    worker = "exact" if verdict.get("exact") else f"NOT exact: {verdict.get('examples')}"
    rows = [
        ("processor outbox vs replay (oracle)", worker, f"{verdict.get('expected', 0):,} events")
    ]
    for peer in figures.peers:
        if peer["rate"] is None or math.isnan(peer["rate"]):
            rows.append((f"peer {peer['framework']}", "-", str(peer["correctness"])))
            continue
        rows.append(
            (
                f"peer {peer['framework']}",
                f"{peer['rate']:,.0f} ev/s",
                f"processor/peer {_num(peer['worker_ratio'])}x, peak RSS"
                f" {peer['peak_rss_bytes'] / 2**20:,.0f} MiB, {peer['correctness']}",
            )
        )
        if len(peer["worker_ratios"]) > 1:
            every = ", ".join(f"{value:.2f}x" for value in peer["worker_ratios"])
            rows.append(("  processor/peer, every round", f"{len(peer['worker_ratios'])}", every))
    return rows


def _duration_rows(
    name: str, ms: dict[str, float], quantiles: tuple[str, ...], counted: str
) -> list[tuple[str, str, str]]:
    """One row of the `quantiles` of durations `ms` (none when nothing was measured), named
    `name` with the quantiles appended, the count of `counted` things in its note."""
    if not ms:
        return []
    shown = " / ".join(_num(ms[quantile]) for quantile in quantiles)
    return [(f"{name} {' / '.join(quantiles)}", f"{shown} ms", f"{ms['count']:,.0f} {counted}")]


def table(figures: BenchFigures) -> str:
    """The human-readable report: figures, ratios, target verdicts."""
    r = ratios(figures)
    lat = figures.latency
    rows: list[tuple[str, str, str]] = [
        _stage_row("limit (transactional pass-through)", figures.limit),
        _stage_row("processor (Worker)", figures.processor),
        *_round_rows(figures.rounds),
        *_peer_rows(figures),
        _stage_row("sqlite reference (guide)", figures.sqlite),
        _stage_row("restore (restore_partition)", figures.restore),
        _stage_row("raw changelog consume", figures.raw_changelog),
        _stage_row("restore, worker's consumer settings", figures.restore_worker_config),
        _stage_row("bridge (normalize + publish)", figures.bridge),
        _stage_row("raw produce", figures.raw_produce),
        (
            "latency p50 / p99 / max",
            f"{_num(lat.p50_ms)} / {_num(lat.p99_ms)} / {_num(lat.max_ms)} ms",
            f"{lat.samples:,}/{lat.expected:,} events at {lat.achieved_rate:,.0f} ev/s"
            f" (offered {lat.offered_rate:,.0f})",
        ),
        (
            "  offered load sustained",
            "yes" if lat.sustained else "NO: a queue's latency, not the product's",
            f"half of {_num(lat.capacity_rate)} ev/s calibrated in place; outbox drained"
            f" {_num(lat.drain_s)} s after the last send",
        ),
        *_duration_rows(
            "  of which commit step",
            figures.latency_commit_ms,
            ("p50", "p99", "max"),
            "commits of the latency stage's worker",
        ),
        *(
            _duration_rows(
                "  bench's own GC pauses",
                figures.latency_gc_ms,
                ("p50", "max"),
                "collections in the measuring process",
            )
            or [("  bench's own GC pauses", "none", "collector off while the bench stamps")]
        ),
        (
            "worker peak RSS",
            f"{figures.processor_peak_rss_bytes / 2**20:,.0f} MiB",
            f"{figures.workload['identities']:,} identities",
        ),
        ("restored watermarks", f"{figures.restored_watermarks:,}", "= identities"),
        (
            "processor outcomes = workload",
            "yes" if outcomes_match(figures) else "NO",
            ", ".join(f"{k} {v:,}" for k, v in figures.processor_outcomes.items() if v),
        ),
    ]
    rows += [(f"ratio {name}", f"{_num(value)}x", "") for name, value in r.items()]
    rows += [(f"target {t.name}", t.verdict, t.describe()) for t in targets(figures)]
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows
    ]
    if figures.profile:
        lines.append("")
        lines.append("worker profile (cProfile, by own time):")
        lines += [
            f"  {p['tottime_s']:7.2f} s own  {p['cumtime_s']:7.2f} s cum  {p['ncalls']:>10}"
            f"  {p['function']}"
            for p in figures.profile
        ]
    return "\n".join(lines)


def json_safe(value: Any) -> Any:
    """NaN is not JSON: write null."""
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value


def as_json(figures: BenchFigures) -> dict[str, Any]:
    stages = {
        name: getattr(figures, name).as_dict()
        for name in (
            "limit",
            "processor",
            "sqlite",
            "restore",
            "raw_changelog",
            "restore_worker_config",
            "bridge",
            "raw_produce",
        )
    }
    document: dict[str, Any] = json_safe(
        {
            "workload": figures.workload,
            "settings": figures.settings,
            "environment": figures.environment,
            "stages": stages,
            "latency": asdict(figures.latency),
            "latency_commit_ms": figures.latency_commit_ms,
            "rounds": figures.rounds,
            "latency_gc_ms": figures.latency_gc_ms,
            "processor_peak_rss_bytes": figures.processor_peak_rss_bytes,
            "processor_outcomes": figures.processor_outcomes,
            "processor_outcomes_match_workload": outcomes_match(figures),
            "restored_watermarks": figures.restored_watermarks,
            "ratios": ratios(figures),
            "targets": [
                {
                    "name": t.name,
                    "measured": t.measured,
                    "bound": t.bound,
                    "unit": t.unit.strip(),
                    "verdict": t.verdict,
                }
                for t in targets(figures)
            ],
            "profile": figures.profile,
            "peers": figures.peers,
            "processor_verdict": figures.processor_verdict,
        }
    )
    return document
