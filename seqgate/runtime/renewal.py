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

A third way is a takeover: the group dropped a silent worker (paused past its session
timeout) and the new owner of its partitions ended its open transaction at once
(worker/handover.py), leaving a mark that names itself. A fence with such a mark, newer than
the fenced producer, is renewed whatever the transaction's age.

Not renewed: any other fence while the open transaction is younger than its timeout, which
means another process took the ``transactional.id`` over (a second worker with the same
``--instance-id``); replacing the producer would fence that one in turn. And bounded: the
renewals without a commit between them, and the hung producers (each stays in memory, never
touched again), are capped; past the cap the caller stops as before.

The decisions are pure; `TransactionalSession.renew` carries them out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from seqgate.runtime.errors import ProducerLost
from seqgate.runtime.transaction_failures import ABORTED_ON_TIMEOUT, FENCED

__all__ = ["ProducerLost", "RenewalBudget", "TakenOver", "fenced", "lost_producer", "renewable"]

# Who ended this worker's transaction as they took its partitions over, after the given time
# (epoch seconds: when the fenced producer started); None when nobody did (worker/handover.py).
TakenOver = Callable[[float], str | None]

# A fence or an epoch the broker no longer accepts: the producer is done with.
_LOST_FOR_GOOD = FENCED | ABORTED_ON_TIMEOUT
# New producers in a row that failed before any commit: a cause a new one does not cure.
MOST_RENEWALS_WITHOUT_COMMIT = 3
# Hung producers kept for the life of the process (threads and sockets each).
MOST_HUNG_PRODUCERS = 3


def renewable(
    code: int | None,
    *,
    hung: bool,
    transaction_age_s: float | None,
    transaction_timeout_s: float,
    taken_over_by: str | None = None,
) -> bool:
    """Whether a new producer cures the loss: a hung call, a fence by the new owner of this
    worker's partitions (``taken_over_by``, read from its mark), or a fence of a
    transaction that was open at least as long as the transaction timeout (the broker's
    own abort); ``transaction_age_s`` is None when no transaction was open."""
    if hung:
        return True
    if code not in _LOST_FOR_GOOD:
        return False
    if taken_over_by is not None and code in FENCED:
        return True
    if transaction_age_s is None:
        return False
    return transaction_age_s >= transaction_timeout_s


def fenced(code: int | None) -> bool:
    """A newer producer of the transactional.id, or the broker's timeout, fenced this one."""
    return code in FENCED


def lost_producer(
    reason: str,
    code: int | None,
    error: str | None,
    *,
    hung: bool,
    what: str,
    transaction_age_s: float | None,
    timeout_ms: int,
    taken_over_by: str | None,
    budget: RenewalBudget,
) -> ProducerLost | str:
    """ProducerLost when a new producer cures the loss and the budget allows one, else the
    one line the caller stops with (``reason``, and why no renewal is allowed)."""
    if not renewable(
        code,
        hung=hung,
        transaction_age_s=transaction_age_s,
        transaction_timeout_s=timeout_ms / 1000,
        taken_over_by=taken_over_by,
    ):
        return reason
    if not budget.allows(hung=hung):
        return f"{reason} ({budget.spent(hung=hung)})"
    if error is not None:
        what = loss_cause(
            error,
            taken_over_by=taken_over_by,
            transaction_age_s=transaction_age_s,
            timeout_ms=timeout_ms,
        )
    return ProducerLost(reason, hung=hung, what=what)


def loss_cause(
    error: str, *, taken_over_by: str | None, transaction_age_s: float | None, timeout_ms: int
) -> str:
    """What ended a renewable fenced producer, for the line that tells of its renewal."""
    if taken_over_by is not None:
        return (
            f"{taken_over_by} ended this worker's transaction ({error}) as it took its"
            " partitions over: the group had dropped this worker, silent past"
            " --session-timeout-ms (paused or cut off)"
        )
    return (
        f"the broker ended the producer ({error}) after its transaction was open"
        f" {transaction_age_s or 0:.0f} s, past --transaction-timeout-ms ({timeout_ms} ms)"
    )


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
