"""Counters of what became of every input (docs/design.md §1.1's conservation law)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from seqgate.schemas.outcomes import OUTCOMES, Outcome


@dataclass
class OutcomeCounters:
    """Outcomes per input partition; only committed work is counted."""

    by_partition: dict[int, Counter[Outcome]] = field(default_factory=dict)

    def add(self, partition: int, outcome: Outcome, count: int = 1) -> None:
        self.by_partition.setdefault(partition, Counter())[outcome] += count

    def merge(self, other: OutcomeCounters) -> None:
        for partition, counts in other.by_partition.items():
            self.by_partition.setdefault(partition, Counter()).update(counts)

    def totals(self) -> dict[str, int]:
        total: Counter[Outcome] = Counter()
        for counts in self.by_partition.values():
            total.update(counts)
        return {outcome.value: total[outcome] for outcome in OUTCOMES}

    def per_partition(self) -> dict[int, dict[str, int]]:
        return {
            partition: {outcome.value: counts[outcome] for outcome in OUTCOMES}
            for partition, counts in sorted(self.by_partition.items())
        }

    def inputs(self) -> int:
        return sum(self.totals().values())
