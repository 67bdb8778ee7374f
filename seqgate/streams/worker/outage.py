"""A Kafka cluster that does not take the worker's writes for a while: said once, waited out.

Two of three nodes down leave partitions below ``min.insync.replicas`` or, with the KRaft
quorum lost, with in-sync replicas that are dead: every commit fails or times out. That is
not a stuck worker, and a restart would not cure it (the restarted one cannot even start a
transaction). So while the failures are write-outage failures and partitions the worker
writes cannot take writes (runtime/replication.py), the worker:

* logs one warning line naming them (the repeats at info level, runtime/failure_spell.py);
* waits between attempts with a growing pause, and does not count the time towards its
  abort-loop exit;
* lets a transactional call that waits for the cluster go on waiting, instead of declaring
  the client hung (one broker down is not an outage: a call that hangs then still is);
* says once when writes are accepted again.

The decision is pure (:class:`WriteOutage` takes the clock and the diagnosis as functions);
the worker's checkpoint calls it after each failed commit and after each successful one.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import KafkaError

from seqgate.runtime.failure_spell import FailureSpell
from seqgate.runtime.replication import blocks_writes

__all__ = ["WriteOutage"]

log = logging.getLogger(__name__)

_FIRST_PAUSE_S = 1.0
_LONGEST_PAUSE_S = 15.0
# The broker's own word that the ISR is below min.insync.replicas: an outage on its face.
_TOO_FEW_REPLICAS = frozenset(
    {KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND}
)


@dataclass
class WriteOutage:
    """The worker's view of a write outage: the spell of failures, the next pause; ``stop``
    is the worker's stop (SIGTERM), which ends every wait of an outage."""

    diagnose: Callable[[], str]  # "" when every partition can take writes
    clock: Callable[[], float] = time.monotonic
    stop: threading.Event = field(default_factory=threading.Event)
    # Told at each look that finds the outage going on: waiting it out is the loop's work,
    # so /healthz keeps saying alive (a restart would not help).
    beat: Callable[[], None] = lambda: None
    pause_s: float = _FIRST_PAUSE_S
    spell: FailureSpell = field(init=False)

    def __post_init__(self) -> None:
        self.spell = FailureSpell(
            log,
            "Kafka is not taking the worker's writes; waiting for the cluster to recover",
            "Kafka takes the worker's writes again",
            clock=self.clock,
        )

    @property
    def active(self) -> bool:
        return self.spell.active

    def stopping(self) -> bool:
        return self.stop.is_set()

    def failed(self, error: KafkaError) -> float | None:
        """After a failed commit: the pause before the next attempt while the cluster cannot
        take writes, or None when this failure is not an outage (the usual rules apply)."""
        if not blocks_writes(error) or not self._observe(error):
            return None
        pause, self.pause_s = self.pause_s, min(self.pause_s * 2, _LONGEST_PAUSE_S)
        return pause

    def waiting(self) -> bool:
        """While a transactional call overruns its bound: True when the cluster's state
        explains the wait (the call is then waited for again), False when it does not or
        the worker is stopping (the call is then declared hung)."""
        return not self.stopping() and self._observe(None)

    def _observe(self, error: KafkaError | None) -> bool:
        diagnosis = self.diagnose()
        if not diagnosis and error is not None and error.code() in _TOO_FEW_REPLICAS:
            diagnosis = "the broker says too few in-sync replicas (min.insync.replicas)"
        if not diagnosis:
            return False  # every partition can take writes: not the cluster's doing
        symptom = "a transactional call is still waiting" if error is None else error.str()
        self.spell.failed(error=symptom, cluster=diagnosis)
        self.beat()
        return True

    def committed(self) -> None:
        """A commit went through: an outage in progress has ended."""
        self.spell.succeeded()
        self.pause_s = _FIRST_PAUSE_S
