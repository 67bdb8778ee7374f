"""TransactionalSession.init: a start during a write outage waits for the cluster.

The coordinator must write the transaction log to complete init_transactions, so a worker
(re)started while the cluster cannot take writes meets a retriable time-out; a restart
would meet the same outage. With stand-in clients: the failures a real outage gives are
produced on a cluster in tests/torture/test_cluster_faults.py (the kill -9 of the worker
while two of three nodes are down).
"""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException

from seqgate.runtime.errors import WorkerFatalError
from seqgate.runtime.session import TransactionalSession
from seqgate.runtime.transaction_failures import SessionRole

_TIMED_OUT = KafkaError(
    KafkaError._TIMED_OUT,
    "Timed out waiting for operation to finish, retry call to resume",
    retriable=True,
)
_REFUSED = KafkaError(
    KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "Transactional Id authorization failed"
)


class _InitProducer:
    """init_transactions fails with each of ``failures`` in turn, then succeeds."""

    def __init__(self, *failures: KafkaError) -> None:
        self.failures = list(failures)
        self.inits = 0

    def init_transactions(self, timeout: float) -> None:
        self.inits += 1
        if self.failures:
            raise KafkaException(self.failures.pop(0))


class _Outage:
    """The worker's write outage as the session sees it (worker/outage.py)."""

    def __init__(self, *, cluster_down: bool, stopping: bool = False) -> None:
        self.cluster_down = cluster_down
        self.stop = stopping
        self.asked = 0

    def waiting(self) -> bool:
        self.asked += 1
        return self.cluster_down and not self.stop

    def stopping(self) -> bool:
        return self.stop


def _session(
    producer: _InitProducer, outage: _Outage | None, transaction_timeout_ms: int = 60_000
) -> TransactionalSession:
    return TransactionalSession(
        producer,  # type: ignore[arg-type]
        SessionRole("worker", "app-w0", "--instance-id", transaction_timeout_ms),
        timeout_s=0.1,
        failed=WorkerFatalError,
        outage=outage,
    )


def test_init_waits_while_an_outage_explains_its_time_outs() -> None:
    producer, outage = _InitProducer(_TIMED_OUT, _TIMED_OUT), _Outage(cluster_down=True)
    _session(producer, outage).init()
    assert producer.inits == 3
    assert outage.asked == 2


@pytest.mark.parametrize(
    ("outage", "failure"),
    [
        (None, _TIMED_OUT),  # no outage to consult: bridge kafka, reset
        (_Outage(cluster_down=False), _TIMED_OUT),  # the cluster takes writes: not an outage
        (_Outage(cluster_down=True, stopping=True), _TIMED_OUT),  # the worker is stopping
        (_Outage(cluster_down=True), _REFUSED),  # not retriable: no outage cures it
    ],
)
def test_init_fails_at_once_otherwise(outage: _Outage | None, failure: KafkaError) -> None:
    producer = _InitProducer(failure)
    with pytest.raises(WorkerFatalError, match=r"init_transactions for transactional\.id app-w0"):
        _session(producer, outage).init()
    assert producer.inits == 1


def test_init_succeeds_at_once_without_asking() -> None:
    producer, outage = _InitProducer(), _Outage(cluster_down=True)
    _session(producer, outage).init()
    assert (producer.inits, outage.asked) == (1, 0)


_CONCURRENT = KafkaError(
    KafkaError.CONCURRENT_TRANSACTIONS,
    "Producer attempted to update a transaction while another concurrent operation on the"
    " same transaction was ongoing",
)


def test_init_waits_while_the_coordinator_completes_the_earlier_transaction() -> None:
    """Seen in CI right after node 1 of three returned, with no outage left to explain it:
    the worker exited 1 where the coordinator only needed a moment more."""
    producer = _InitProducer(_CONCURRENT, _CONCURRENT)
    _session(producer, _Outage(cluster_down=False)).init()
    assert producer.inits == 3
    producer = _InitProducer(_CONCURRENT)
    _session(producer, None).init()  # bridge kafka, reset: no outage to consult
    assert producer.inits == 2


def test_init_gives_up_on_concurrent_transactions_after_the_transaction_timeout() -> None:
    producer = _InitProducer(*[_CONCURRENT] * 100)
    with pytest.raises(WorkerFatalError, match="another concurrent operation"):
        _session(producer, None, 500).init()
    assert 2 <= producer.inits <= 3


class _EndingOutage(_Outage):
    """Down for the first ``down`` questions, then every partition takes writes again."""

    def __init__(self, down: int) -> None:
        super().__init__(cluster_down=True)
        self.down = down

    def waiting(self) -> bool:
        self.asked += 1
        return self.asked <= self.down


def test_init_keeps_asking_while_the_coordinator_reloads_after_an_outage() -> None:
    """Seen in CI (two of three nodes down, the worker killed and restarted): node 1 came
    back, every partition took writes, and init_transactions still timed out for 16 s
    while the coordinator reloaded the transaction log; the worker exited 1."""
    producer = _InitProducer(*[_TIMED_OUT] * 4)
    _session(producer, _EndingOutage(down=2)).init()
    assert producer.inits == 5


def test_after_an_outage_init_gives_up_once_the_settling_time_is_over() -> None:
    producer = _InitProducer(*[_TIMED_OUT] * 100)
    with pytest.raises(WorkerFatalError, match="Timed out waiting"):
        _session(producer, _EndingOutage(down=1), 500).init()
    assert 2 <= producer.inits <= 5  # 0.6 s of settling, 0.5 s between attempts
