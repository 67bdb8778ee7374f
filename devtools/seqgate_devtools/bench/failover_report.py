"""`seqgate bench --failover`: its figures, targets, table and JSON; pure (no I/O, no clock).

The stage kills (or stops) one of two workers and reads, from the survivor's JSON log,
one "partition serving" line per partition it took over:

* detection = assigned_at - kill instant (the group noticing and handing the partition on);
* takeover = serving_at - assigned_at (restoring the store and the first commit);
* total = serving_at - kill instant (what a consumer of the outbox waits).

Targets are reported as pass / miss, like the bench's others, and never fail the command.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seqgate_devtools.bench.report import Target, json_safe

__all__ = [
    "GRACEFUL_BOUND_S",
    "MODES",
    "SCALING_BOUND",
    "TAKEOVER_BOUND_S",
    "Move",
    "Scenario",
    "ScenarioResult",
    "Serving",
    "choose_victim",
    "failover_json",
    "failover_table",
    "failover_targets",
    "log_entry",
    "message_of",
    "moves_after",
    "parse_identity_counts",
    "serving_of",
    "standby_caught_up",
]

# SIGKILL; the victim killing itself between sending its offsets and committing (its open
# transaction then holds them: the survivor's wait for it is what this mode measures); or
# SIGTERM (commit and leave).
MODES = ("kill", "commit-kill", "graceful")
TAKEOVER_BOUND_S = 2.0  # with a standby: takeover (max) after a kill
SCALING_BOUND = 1.5  # the largest K's takeover within 1.5 x the smallest K's
GRACEFUL_BOUND_S = 2.0  # with a standby: SIGTERM -> serving (max)

SERVING = "partition serving"
STANDBY_CAUGHT_UP = "standby caught up"


# ---- the worker's log lines ----------------------------------------------------------------


def log_entry(line: str) -> dict[str, Any] | None:
    """One JSON log line as a dict; None for anything else (librdkafka noise, a line cut
    short by a SIGKILL)."""
    try:
        entry = json.loads(line)
    except ValueError:
        return None
    return entry if isinstance(entry, dict) else None


def message_of(entry: Mapping[str, Any]) -> str | None:
    """The line's message: seqgate's formatter writes it as "msg"; "message" is accepted
    too, the name the failover contract uses."""
    text = entry.get("msg", entry.get("message"))
    return text if isinstance(text, str) else None


@dataclass(frozen=True, slots=True)
class Serving:
    """One "partition serving" line: the worker took `partition` and committed with it."""

    partition: int
    assigned_at: float  # epoch s: its on_assign began
    serving_at: float  # epoch s: its first commit including the partition returned
    restore_s: float
    restored: int  # records replayed from the changelog
    standby: bool  # a warm standby store was used


def serving_of(entry: Mapping[str, Any]) -> Serving | None:
    """The "partition serving" line `entry`, or None for any other line."""
    if message_of(entry) != SERVING:
        return None
    try:
        return Serving(
            partition=int(entry["partition"]),
            assigned_at=float(entry["assigned_at"]),
            serving_at=float(entry["serving_at"]),
            restore_s=float(entry.get("restore_s", math.nan)),
            restored=int(entry.get("restored", 0)),
            standby=bool(entry.get("standby", False)),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise ValueError(f"a 'partition serving' line without its fields: {entry}") from error


def standby_caught_up(entries: Iterable[Mapping[str, Any]]) -> set[int]:
    """The partitions whose standby a worker has logged as caught up."""
    return {
        int(entry["partition"])
        for entry in entries
        if message_of(entry) == STANDBY_CAUGHT_UP and "partition" in entry
    }


# ---- one scenario's figures ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Move:
    """One partition that changed hands, timed from the kill instant."""

    partition: int
    detection_s: float
    takeover_s: float
    total_s: float
    restore_s: float
    restored: int
    standby: bool

    @classmethod
    def of(cls, serving: Serving, kill_at: float) -> Move:
        return cls(
            partition=serving.partition,
            detection_s=serving.assigned_at - kill_at,
            takeover_s=serving.serving_at - serving.assigned_at,
            total_s=serving.serving_at - kill_at,
            restore_s=serving.restore_s,
            restored=serving.restored,
            standby=serving.standby,
        )


def moves_after(
    servings: Iterable[Serving], moved: Collection[int], kill_at: float
) -> dict[int, Move]:
    """Partition -> its move, for the partitions of `moved` the survivor took after
    `kill_at`. Its own partitions' lines from the start, which came before the kill, are
    not moves; of several lines for one partition the first after the kill counts."""
    moves: dict[int, Move] = {}
    for serving in sorted(servings, key=lambda s: s.assigned_at):
        if serving.partition in moved and serving.assigned_at >= kill_at:
            moves.setdefault(serving.partition, Move.of(serving, kill_at))
    return moves


def choose_victim(assignment: Mapping[str, Collection[int]]) -> str:
    """The member (instance id) owning the most partitions: killing it moves the most.
    A tie goes to the first instance id, so that a run is repeatable."""
    if not assignment:
        raise ValueError("the group has no members to choose a victim from")
    return min(assignment, key=lambda member: (-len(assignment[member]), member))


@dataclass(frozen=True, slots=True)
class Scenario:
    identities: int
    standby_replicas: int
    mode: str  # one of MODES

    @property
    def name(self) -> str:
        return f"K={self.identities:,} S={self.standby_replicas} {self.mode}"


@dataclass(frozen=True, slots=True)
class ScenarioResult:
    scenario: Scenario
    victim: str
    victim_partitions: tuple[int, ...]
    moves: tuple[Move, ...]
    ready_s: float  # workers started -> both serving, preload committed (standbys caught up)
    offered_rate: float  # the load during the kill, events/s as sent
    offered_events: int
    victim_exit: int | None = None  # its exit code (-9 killed; 0 a clean graceful stop)
    # The survivor's own partitions the takeover stopped (eager rebalancing), timed as moves.
    own_stopped: tuple[Move, ...] = ()

    def spread(self, figure: str) -> dict[str, float]:
        """median and max of one of a move's figures (detection_s, takeover_s, total_s)."""
        values = [float(getattr(move, figure)) for move in self.moves]
        if not values:
            return {"median": math.nan, "max": math.nan}
        return {"median": round(statistics.median(values), 4), "max": round(max(values), 4)}

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.scenario.name,
            "identities": self.scenario.identities,
            "standby_replicas": self.scenario.standby_replicas,
            "mode": self.scenario.mode,
            "victim": self.victim,
            "victim_partitions": list(self.victim_partitions),
            "victim_exit": self.victim_exit,
            "ready_s": round(self.ready_s, 3),
            "offered_rate": round(self.offered_rate, 1),
            "offered_events": self.offered_events,
            "detection_s": self.spread("detection_s"),
            "takeover_s": self.spread("takeover_s"),
            "total_s": self.spread("total_s"),
            "moves": [_move_dict(m) for m in self.moves],
            "own_stopped": [_move_dict(m) for m in self.own_stopped],
        }


def _move_dict(m: Move) -> dict[str, Any]:
    return {
        "partition": m.partition,
        "detection_s": round(m.detection_s, 4),
        "takeover_s": round(m.takeover_s, 4),
        "total_s": round(m.total_s, 4),
        "restore_s": m.restore_s,
        "restored": m.restored,
        "standby": m.standby,
    }


# ---- targets -------------------------------------------------------------------------------


def _found(results: Sequence[ScenarioResult], standby: int, mode: str) -> dict[int, ScenarioResult]:
    """Identities -> the result of that K with `standby` replicas, killed by `mode`."""
    return {
        r.scenario.identities: r
        for r in results
        if r.scenario.standby_replicas == standby and r.scenario.mode == mode
    }


def failover_targets(results: Sequence[ScenarioResult]) -> list[Target]:
    """The issue's targets over the scenarios that ran (a target whose scenarios did not
    run is left out)."""
    kills, stops = _found(results, 1, "kill"), _found(results, 1, "graceful")
    inside = _found(results, 1, "commit-kill")
    targets = [
        Target(
            f"takeover <= {TAKEOVER_BOUND_S:.0f} s (max), K={k:,}, S=1, {mode}",
            found[k].spread("takeover_s")["max"],
            TAKEOVER_BOUND_S,
            False,
            " s",
        )
        for mode, found in (("kill", kills), ("commit-kill", inside))
        for k in sorted(found)
    ]
    if len(kills) > 1:
        smallest, largest = min(kills), max(kills)
        low = kills[smallest].spread("takeover_s")["max"]
        high = kills[largest].spread("takeover_s")["max"]
        targets.append(
            Target(
                f"takeover K={largest:,} <= {SCALING_BOUND} x K={smallest:,} (max, S=1, kill)",
                high / low if low > 0 else math.nan,
                SCALING_BOUND,
                False,
                "x",
            )
        )
    targets += [
        Target(
            f"SIGTERM -> serving <= {GRACEFUL_BOUND_S:.0f} s (max), K={k:,}, S=1",
            stops[k].spread("total_s")["max"],
            GRACEFUL_BOUND_S,
            False,
            " s",
        )
        for k in sorted(stops)
    ]
    return targets


# ---- table and JSON ------------------------------------------------------------------------


def _seconds(spread: Mapping[str, float]) -> str:
    return " / ".join("n/a" if math.isnan(v) else f"{v:.2f}" for v in spread.values())


def _scenario_row(result: ScenarioResult) -> tuple[str, ...]:
    moves = result.moves
    restored = sum(move.restored for move in moves)
    warm = sum(1 for move in moves if move.standby)
    return (
        result.scenario.name,
        f"{result.victim} ({len(result.victim_partitions)})",
        _seconds(result.spread("detection_s")),
        _seconds(result.spread("takeover_s")),
        _seconds(result.spread("total_s")),
        f"{restored:,}",
        f"{warm}/{len(moves)}",
        _own(result),
        f"{result.offered_rate:,.0f} ev/s",
    )


def _own(result: ScenarioResult) -> str:
    """How many of the survivor's own partitions stopped, and the longest from their
    assignment back to serving (they stopped a little earlier, at the revocation)."""
    stopped = result.own_stopped
    if not stopped:
        return "0"
    return f"{len(stopped)} ({max(m.takeover_s for m in stopped):.2f} s)"


_HEADER = (
    "scenario",
    "victim (partitions)",
    "detection s med / max",
    "takeover s med / max",
    "total s med / max",
    "replayed",
    "from standby",
    "own stopped",
    "offered",
)


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def failover_table(results: Sequence[ScenarioResult]) -> str:
    """The human-readable report: one row per scenario, then the target verdicts."""
    lines = _aligned([_HEADER, *(_scenario_row(r) for r in results)])
    targets = failover_targets(results)
    if targets:
        lines.append("")
        lines += _aligned([(f"target {t.name}", t.verdict, t.describe()) for t in targets])
    return "\n".join(lines)


def failover_json(
    results: Sequence[ScenarioResult],
    settings: Mapping[str, Any],
    environment: Mapping[str, Any],
) -> dict[str, Any]:
    document: dict[str, Any] = json_safe(
        {
            "stage": "failover",
            "settings": dict(settings),
            "environment": dict(environment),
            "scenarios": [result.as_dict() for result in results],
            "targets": [
                {
                    "name": t.name,
                    "measured": t.measured,
                    "bound": t.bound,
                    "unit": t.unit.strip(),
                    "verdict": t.verdict,
                }
                for t in failover_targets(results)
            ],
        }
    )
    return document


def parse_identity_counts(text: str) -> tuple[int, ...]:
    """`--failover-identities 100000,1000000`: positive counts, in the order given."""
    try:
        counts = tuple(int(part.replace("_", "")) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(
            f"--failover-identities {text!r}: give counts like 100000,1000000"
        ) from None
    if not counts or any(count < 1 for count in counts):
        raise ValueError(f"--failover-identities {text!r}: give one or more positive counts")
    return counts
