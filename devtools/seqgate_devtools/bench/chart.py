"""The benchmark's PNG: throughput per stage, and the latency distribution.

matplotlib comes with the development tools' `chart` extra only (it and numpy are most of an
install's size), so it is imported when a chart is drawn, and `chart_available` tells beforehand.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path

from seqgate_devtools.bench.report import BenchFigures, latency_bound_ms

NEEDS_CHART_EXTRA = (
    "the chart needs the development tools' chart extra: pip install './devtools[chart]'"
)

_STAGES = (
    ("limit", "limit"),
    ("processor", "processor"),
    ("sqlite", "SQLite\nreference"),
    ("restore", "restore"),
    ("raw_changelog", "raw\nchangelog"),
    ("bridge", "bridge"),
    ("raw_produce", "raw\nproduce"),
)


def chart_available() -> bool:
    """Whether matplotlib is installed, without importing it (a second or more)."""
    return importlib.util.find_spec("matplotlib") is not None


def draw(figures: BenchFigures, latencies_ms: Sequence[float], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")  # files only, never a display
    import matplotlib.pyplot as plt

    fig, (bars, hist) = plt.subplots(1, 2, figsize=(13 + len(figures.peers), 5))
    names = [label for _, label in _STAGES]
    rates = [getattr(figures, attr).rate for attr, _ in _STAGES]
    colors = ["#999999", "#1f77b4", "#d62728", "#2ca02c", "#999999", "#ff7f0e", "#999999"]
    # The peers that ran stand beside the processor (median rate over the rounds).
    ran = [p for p in figures.peers if p["rate"] is not None and not math.isnan(p["rate"])]
    names[2:2] = [str(p["framework"]).replace(" ", "\n", 1).replace("-", "-\n", 1) for p in ran]
    rates[2:2] = [float(p["rate"]) for p in ran]
    colors[2:2] = ["#9467bd"] * len(ran)
    drawn = bars.bar(names, rates, color=colors)
    bars.bar_label(drawn, labels=[f"{rate:,.0f}" for rate in rates], fontsize=8)
    bars.set_yscale("log")  # the SQLite reference is two orders of magnitude below the rest
    bars.set_ylabel("events (records) per second, log scale")
    bars.set_title(
        f"Throughput per stage ({figures.workload['events']:,} events,"
        f" {figures.workload['identities']:,} identities)"
    )
    bars.tick_params(axis="x", labelsize=8)

    bound = latency_bound_ms(figures)
    lat = figures.latency
    if latencies_ms:
        top = max(latencies_ms)
        bins = max(10, min(100, int(math.sqrt(len(latencies_ms)))))
        hist.hist(latencies_ms, bins=bins, color="#1f77b4", alpha=0.8)
        hist.set_xlim(0, max(top, bound) * 1.05)
    for value, label, style in (
        (lat.p50_ms, f"p50 {lat.p50_ms:.0f} ms", "--"),
        (lat.p99_ms, f"p99 {lat.p99_ms:.0f} ms", "-"),
        (bound, f"target {bound:.0f} ms", ":"),
    ):
        if not math.isnan(value):
            hist.axvline(value, color="black", linestyle=style, label=label)
    hist.set_xlabel("bridge ack → visible in outbox (read_committed), ms")
    hist.set_ylabel("events")
    hist.set_title(f"Latency at {lat.offered_rate:,.0f} events/s offered")
    hist.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
