"""When the worker commits: every `--commit-every` records, and on a fixed cadence.

The interval counts from the start of the previous commit, as Kafka Streams'
`commit.interval.ms` does, not from the first record of the open transaction. A record
that arrives while a commit is running then waits for the next commit on the cadence
(at most one interval after the running one began) instead of a whole interval after
that commit ends: its time from acknowledgement to visibility is bounded by one interval
plus one commit, not by one interval plus two commits (measured by `seqgate bench`'s
latency stage; docs/benchmark.md). A worker that was idle longer than an interval commits
its first batch at once; the cadence still allows at most one interval-triggered commit
per interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# The defaults of `--commit-every` and `--commit-interval-ms` (the worker's and the bench's).
# The count is a trade measured both ways (docs/benchmark.md, "The commit count"): 10,000
# read 12 % more per second from a backlog (fewer commits, each a flush, two coordinator
# round trips and a RocksDB write), but at moderate load (~24,000 events/s) the worker then
# committed on the interval alone and the latency rose (p50 63 -> 81 ms, p99 133-140 ->
# 151-199 ms); 2,000 commits every ~80 ms there.
DEFAULT_COMMIT_EVERY = 2_000
DEFAULT_COMMIT_INTERVAL_MS = 100


@dataclass(slots=True)
class CommitCadence:
    """The commit decision of one worker (monotonic seconds throughout)."""

    interval_s: float
    every: int
    last_commit_started: float = field(default=-math.inf)

    def committing(self, now: float) -> None:
        """A commit starts now: the next one is due an interval from here."""
        self.last_commit_started = now

    def due(self, records: int, now: float) -> bool:
        """Whether an open transaction of `records` input records is committed now."""
        return records >= self.every or now - self.last_commit_started >= self.interval_s

    def wait_s(self, now: float, *, in_transaction: bool) -> float:
        """How long the next consume may wait: until the commit is due, within a
        transaction; otherwise an interval (at most half a second, the loop's beat)."""
        if not in_transaction:
            return min(self.interval_s, 0.5)
        remaining = self.interval_s - (now - self.last_commit_started)
        return max(0.0, min(remaining, self.interval_s))
