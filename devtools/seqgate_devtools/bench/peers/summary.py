"""The peers' rows of the bench report: pure (no I/O, no clock).

Each round measured the limit, the Worker and every peer on the same input one after
the other, so a peer is compared with the Worker of its own round: the reported
ratio is the median over rounds of (Worker rate / peer rate), with every round's
figure alongside. A peer is "exact" only if its outbox was exact in every round.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from seqgate_devtools.bench.peers.stage import PeerRound
from seqgate_devtools.bench.report import ratio

__all__ = ["PeerSummary", "summarize"]


@dataclass(frozen=True, slots=True)
class PeerSummary:
    name: str
    framework: str
    rates: tuple[float, ...]  # per round
    worker_ratios: tuple[float, ...]  # Worker rate / peer rate, per round
    peak_rss_bytes: int
    exact: bool  # every round's outbox equal to the replay
    counts_match: bool  # every round's reported counts equal to the workload's
    problem: str | None  # the first round's problem, if any
    examples: tuple[str, ...]

    @property
    def rate(self) -> float:
        return statistics.median(self.rates) if self.rates else float("nan")

    @property
    def worker_ratio(self) -> float:
        return statistics.median(self.worker_ratios) if self.worker_ratios else float("nan")

    @property
    def correctness(self) -> str:
        if self.problem is not None and not self.rates:
            return self.problem
        if not self.exact:
            return "WRONG outbox: " + "; ".join(self.examples)
        if not self.counts_match:
            return "outbox exact, counts differ"
        return "exact"

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "framework": self.framework,
            "rate": self.rate,
            "rates": list(self.rates),
            "worker_ratio": self.worker_ratio,
            "worker_ratios": list(self.worker_ratios),
            "peak_rss_bytes": self.peak_rss_bytes,
            "exact": self.exact,
            "counts_match": self.counts_match,
            "correctness": self.correctness,
            "problem": self.problem,
        }


def summarize(
    rounds: Sequence[Sequence[PeerRound]],
    worker_rates: Sequence[float],
    expected_counts: dict[str, int],
) -> list[PeerSummary]:
    """One summary per peer, from `rounds[r]` (every peer's result in round r) and the
    Worker's rate in each round."""
    names = [peer.name for peer in rounds[0]] if rounds else []
    summaries = []
    for index, name in enumerate(names):
        results = [round_[index] for round_ in rounds]
        measured = [
            (result, worker)
            for result, worker in zip(results, worker_rates, strict=True)
            if result.throughput is not None
        ]
        verdicts = [result.verdict for result, _ in measured if result.verdict is not None]
        wanted = {k: v for k, v in expected_counts.items() if v}
        summaries.append(
            PeerSummary(
                name=name,
                framework=results[0].framework,
                rates=tuple(r.throughput.rate for r, _ in measured if r.throughput),
                worker_ratios=tuple(
                    ratio(worker, r.throughput.rate) for r, worker in measured if r.throughput
                ),
                peak_rss_bytes=max((r.peak_rss_bytes for r in results), default=0),
                exact=bool(verdicts) and all(v.exact for v in verdicts),
                counts_match=bool(measured)
                and all({k: v for k, v in r.counts.items() if v} == wanted for r, _ in measured),
                problem=next((r.problem for r in results if r.problem), None),
                examples=next((v.examples for v in verdicts if not v.exact), ()),
            )
        )
    return summaries
