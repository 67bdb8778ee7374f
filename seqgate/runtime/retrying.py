"""A transactional client call retried the way librdkafka asks: after a retriable failure,
with a pause, said once.

librdkafka marks a transactional call's failure retriable when the same call may still
complete ("retry call to resume"); the caller must then call it again rather than abort.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Protocol

from confluent_kafka import KafkaError, KafkaException

__all__ = [
    "OTHER_CALL_PENDING",
    "RETRY_PAUSE_S",
    "InitRetries",
    "init_may_retry",
    "retriable",
    "retrying",
]

# The retries are the session's: its logger name, which operators filter on, stays the same.
log = logging.getLogger("seqgate.runtime.session")

# Between two attempts of a transactional call that failed retriably.
RETRY_PAUSE_S = 0.5
# librdkafka marks these retriable, yet retrying *this* call cannot help: another
# transactional call is still in progress inside the client (rdkafka_txnmgr.c).
OTHER_CALL_PENDING = frozenset({KafkaError._CONFLICT, KafkaError._PREV_IN_PROGRESS})


def retriable(error: KafkaError) -> bool:
    return bool(error.retriable()) and error.code() not in OTHER_CALL_PENDING


def init_may_retry(error: KafkaError, settled_by: float, after_outage: bool = False) -> bool:
    """Whether a failed init_transactions that no write outage explains now is asked again
    (the caller asks again while one does): until ``settled_by``, CONCURRENT_TRANSACTIONS
    (the coordinator still completing an earlier incarnation's transaction, which
    librdkafka hands back) and, once an outage has explained earlier failures
    (``after_outage``), any retriable failure (the partitions take writes again before
    the transaction coordinator has reloaded its log)."""
    if time.monotonic() >= settled_by:
        return False
    if error.code() == KafkaError.CONCURRENT_TRANSACTIONS:
        return True
    return after_outage and retriable(error)


class _Outage(Protocol):
    def waiting(self) -> bool: ...


class InitRetries:
    """Whether each failed init_transactions of one start is asked again: while a write
    outage explains it (``outage.waiting()``), else as `init_may_retry` says, the settling
    time running ``settle_s`` from the start and from the outage's last explanation.
    Seen in CI: node 1 of three back, every partition writable, and the coordinator
    still timing the call out while it reloaded the transaction log."""

    def __init__(self, settle_s: float, outage: _Outage | None) -> None:
        self.settle_s = settle_s
        self.outage = outage
        self.settled_by = time.monotonic() + settle_s
        self.after_outage = False

    def again(self, error: KafkaError) -> bool:
        if retriable(error) and self.outage is not None and self.outage.waiting():
            self.after_outage = True
            self.settled_by = max(self.settled_by, time.monotonic() + self.settle_s)
            return True
        return init_may_retry(error, self.settled_by, self.after_outage)


def retrying(
    call: Callable[[], None],
    what: str,
    deadline: float | None = None,
    stopping: Callable[[], bool] = lambda: False,
    also: frozenset[int] = frozenset(),
    warn: bool = True,
    explained: Callable[[], bool] = lambda: False,
) -> None:
    """``call()`` again after each retriable failure, pausing between attempts, until it
    succeeds or (past ``deadline``, a monotonic time, or once ``stopping()``) the failure
    is raised; ``also`` are codes retried though the client does not call them retriable.
    Only the first retry that ``explained()`` does not account for is a warning (none when
    not ``warn``: the caller has said why), the others are at info: an outage is one line,
    not a flood. ``explained()`` is asked at each retry: a write outage says itself there
    that it is the cause (worker/outage.py), and keeps the worker's liveness beating."""
    warned = not warn
    while True:
        try:
            call()
            return
        except KafkaException as error:
            late = deadline is not None and time.monotonic() >= deadline
            again = retriable(error.args[0]) or error.args[0].code() in also
            if not again or late or stopping():
                raise
            level = logging.INFO
            if not explained() and not warned:
                warned, level = True, logging.WARNING
            log.log(level, what, extra={"error": error.args[0].str()})
        pause = RETRY_PAUSE_S if deadline is None else deadline - time.monotonic()
        time.sleep(min(RETRY_PAUSE_S, max(0.0, pause)))
