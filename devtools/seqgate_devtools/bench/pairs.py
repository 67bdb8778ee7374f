"""The limit and the processor, measured in alternating pairs.

On a shared 2-core machine a stage's throughput can halve from one minute to
the next (seen: the same pass-through at 117,000 and at 60,000 records/s). A
ratio of two stages measured one after the other is only as good as the
machine was steady between them, so `seqgate bench` runs the pass-through
limit and the Worker in `rounds` alternating pairs on the same pre-loaded
input (fresh consumer group, fresh changelog and state per round), and
reports the pair whose processor/limit ratio is the median, with every
round's figures alongside.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqgate_devtools.bench.peers.stage import PeerRound
from seqgate_devtools.bench.report import Throughput, ratio

StageRunner = Callable[[dict[str, Any]], dict[str, Any]]
PeersRunner = Callable[[int], list[PeerRound]]  # round index -> every peer's result


@dataclass(frozen=True, slots=True)
class Pair:
    limit: Throughput
    processor: Throughput
    limit_result: dict[
        str, Any
    ]  # the stage processes' JSON results (seqgate_devtools.bench.subproc)
    worker_result: dict[str, Any]
    peers: list[PeerRound] = field(default_factory=list)  # measured after the Worker

    @property
    def ratio(self) -> float:
        return ratio(self.processor.rate, self.limit.rate)

    def as_dict(self) -> dict[str, float]:
        return {
            "limit_rate": self.limit.rate,
            "processor_rate": self.processor.rate,
            "ratio": self.ratio,
        }


def stage_throughput(result: dict[str, Any]) -> Throughput:
    """From a stage's first record to its last commit."""
    return Throughput(result["committed"], result["last_commit"] - result["first_record"])


WARMUP = -1  # the round index of the warm-up round


def _round_suffix(round_index: int) -> str:
    return "-warmup" if round_index == WARMUP else f"-r{round_index}"


def round_application_id(application_id: str, round_index: int) -> str:
    """The Worker's application id in a round (round 0 keeps the bench's own: the
    restore stage reads its changelog)."""
    return application_id if round_index == 0 else application_id + _round_suffix(round_index)


def round_outbox_topic(outbox_topic: str, round_index: int) -> str:
    """The Worker's outbox in a round: each round writes its own, which the oracle reads."""
    return outbox_topic if round_index == 0 else outbox_topic + _round_suffix(round_index)


def measure_pairs(
    run_stage: StageRunner,
    common: dict[str, Any],
    *,
    application_id: str,
    limit_output_topic: str,
    expect: int,
    rounds: int,
    state_root: Path,
    progress: Callable[[str], None],
    peers: PeersRunner | None = None,
    warmup: bool = False,
) -> list[Pair]:
    """`rounds` pairs of (limit, Worker), each stage in its own process; then, in the
    same round, every peer (`peers`).

    With `warmup`, one (limit, Worker) pair runs first and is not reported: a broker
    that has just started serves the first full read of a topic from disk and its
    first transactions cold (seen: the limit's first round at 64,000 records/s, the
    next two at 111,000), which no later round pays.
    """
    pairs: list[Pair] = []
    for index in [WARMUP] * warmup + list(range(rounds)):
        if index == WARMUP:
            label = "warm-up round (not reported): "
        else:
            label = f"round {index + 1}/{rounds}: " if rounds > 1 else ""
        progress(f"{label}limit: transactional pass-through")
        limit_result = run_stage(
            {
                **common,
                "mode": "limit",
                "application_id": f"{application_id}-limit{_round_suffix(index)}",
                "expect": expect,
                "output_topic": limit_output_topic,
                "state_dir": str(state_root / "unused"),
            }
        )
        limit = stage_throughput(limit_result)
        progress(f"{label}limit: {limit.rate:,.0f} records/s; processor: the Worker")
        worker_result = run_stage(
            {
                **common,
                "mode": "worker",
                "application_id": round_application_id(application_id, index),
                "outbox_topic": round_outbox_topic(common["outbox_topic"], index),
                "expect": expect,
                "state_dir": str(state_root / f"worker{_round_suffix(index)}"),
            }
        )
        processor = stage_throughput(worker_result)
        pair = Pair(limit, processor, limit_result, worker_result)
        progress(f"{label}processor: {processor.rate:,.0f} events/s ({pair.ratio:.2f}x)")
        if index == WARMUP:
            continue
        if peers is not None:
            pair.peers.extend(peers(index))
        pairs.append(pair)
    return pairs


def median_pair(pairs: list[Pair]) -> Pair:
    """The pair whose ratio is the median (the lower middle one for an even count)."""
    ordered = sorted(pairs, key=lambda pair: pair.ratio)
    return ordered[(len(ordered) - 1) // 2]
