"""When a lost transactional producer is replaced in place rather than ending the process.

A producer can be lost for good in two ways that a restart cures, and only by giving the
``transactional.id`` a new producer (docs/design.md §5.3):

* the broker aborted its transaction because it stayed open past the transaction timeout
  (a network cut, a broker outage, a paused process): the broker bumped the producer's
  epoch, and every further call of this producer is fenced;
* a transactional call never returned (librdkafka's hang, runtime/bounded_call.py).

A new producer with the same ``transactional.id`` is what a restart would bring: its
``init_transactions`` fences the old one and has the coordinator abort whatever it left
open, and the input is read again from the committed offsets. Doing it in place saves the
restart and the re-read of the state (Kafka Streams, EOS v2, does the same when its producer
is fenced). A consumer that lost its partitions meanwhile cannot commit stale offsets
through the new producer either: the group refuses them (its generation moved on).

Not renewed: a fence while the open transaction is younger than its timeout, which means
another process took the ``transactional.id`` over (a second worker with the same
``--instance-id``); replacing the producer would fence that one in turn. And bounded: the
renewals without a commit between them, and the hung producers (each stays in memory, never
touched again), are capped; past the cap the caller stops as before.

The decisions are pure; `TransactionalSession.renew` carries them out.
"""

from __future__ import annotations

from dataclasses import dataclass

from seqgate.streams.runtime.transaction_failures import ABORTED_ON_TIMEOUT, FENCED

__all__ = ["ProducerLost", "RenewalBudget", "renewable"]

# A fence or an epoch the broker no longer accepts: the producer is done with.
_LOST_FOR_GOOD = FENCED | ABORTED_ON_TIMEOUT
# New producers in a row that failed before any commit: a cause a new one does not cure.
MOST_RENEWALS_WITHOUT_COMMIT = 3
# Hung producers kept for the life of the process (threads and sockets each).
MOST_HUNG_PRODUCERS = 3


class ProducerLost(Exception):
    """The session's producer cannot be used again, and a new one may take its place.

    ``reason`` is the one line the caller stops with when it does not renew; ``what`` says
    the loss in short, for the line that tells of the renewal; ``hung`` tells that the old
    producer is inside a call that never returned."""

    def __init__(self, reason: str, *, hung: bool, what: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hung = hung
        self.what = what


def renewable(
    code: int | None, *, hung: bool, transaction_age_s: float | None, transaction_timeout_s: float
) -> bool:
    """Whether a new producer cures the loss: a hung call, or a fence of a transaction
    that was open at least as long as the transaction timeout (the broker's own abort);
    ``transaction_age_s`` is None when no transaction was open."""
    if hung:
        return True
    if code not in _LOST_FOR_GOOD or transaction_age_s is None:
        return False
    return transaction_age_s >= transaction_timeout_s


@dataclass
class RenewalBudget:
    """How many more renewals the session may make."""

    since_commit: int = 0
    hung_kept: int = 0
    total: int = 0

    def allows(self, *, hung: bool) -> bool:
        if self.since_commit >= MOST_RENEWALS_WITHOUT_COMMIT:
            return False
        return not hung or self.hung_kept < MOST_HUNG_PRODUCERS

    def renewed(self, *, hung: bool) -> None:
        self.since_commit += 1
        self.total += 1
        if hung:
            self.hung_kept += 1

    def committed(self) -> None:
        self.since_commit = 0

    def spent(self, *, hung: bool) -> str:
        """Why no further renewal is allowed, for the stop line."""
        if self.since_commit >= MOST_RENEWALS_WITHOUT_COMMIT:
            return f"{self.since_commit} new producers in a row failed before committing anything"
        return f"{self.hung_kept} hung producers are already kept in this process"
