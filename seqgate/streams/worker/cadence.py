"""When the worker commits: as soon as it has caught up, and at the latest every
`--commit-every` records or `--commit-interval-ms`.

Within a transaction the worker reads only what its Kafka client has already fetched
(processor.py, `Worker._read`). A batch shorter than `--batch-size` means it has read
everything there was: it commits then, whatever the count. Under moderate load that is
after each short burst of work, so a record waits for the commit under way and its own,
not for a count or an interval to fill up; reading a backlog, batches stay full and the
count bounds the transaction, so commits stay few (each one a flush, two coordinator round
trips, a RocksDB write). Measured side by side by `seqgate bench` (docs/benchmark.md, "Committing
when caught up").

The interval counts from the start of the previous commit, as Kafka Streams'
`commit.interval.ms` does: a worker that keeps finding full batches (a backlog slower to
decide than `--commit-every` records per interval) still commits at least once per
interval.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# The defaults of `--commit-every` and `--commit-interval-ms` (the worker's and the bench's).
# The count only bounds a transaction while the worker reads a backlog; there 10,000 read
# 12 % more per second than 2,000 under the old rule (docs/benchmark.md, "The commit
# count") and 16-36 % with this one ("Committing when caught up").
DEFAULT_COMMIT_EVERY = 10_000
DEFAULT_COMMIT_INTERVAL_MS = 100
# How long an idle worker waits for a record before it looks around (stop, liveness).
_IDLE_WAIT_S = 0.5


@dataclass(slots=True)
class CommitCadence:
    """The commit decision of one worker (monotonic seconds throughout)."""

    interval_s: float
    every: int
    last_commit_started: float = field(default=-math.inf)

    def committing(self, now: float) -> None:
        """A commit starts now: the next one is due an interval from here."""
        self.last_commit_started = now

    def due(self, records: int, now: float, *, caught_up: bool) -> bool:
        """Whether an open transaction of `records` input records is committed now;
        `caught_up`: the last batch was shorter than --batch-size (nothing more fetched)."""
        return (
            caught_up or records >= self.every or now - self.last_commit_started >= self.interval_s
        )

    def idle_wait_s(self) -> float:
        """How long a worker without an open transaction waits for its next record: an
        interval, at most half a second (the loop's beat)."""
        return min(self.interval_s, _IDLE_WAIT_S)
