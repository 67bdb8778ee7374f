"""runtime.renewal and TransactionalSession.renew: a lost producer replaced in place.

The decisions are pure; the session's part is tested with stand-in clients (a hung call
cannot be produced on demand by a real broker). The worker doing it against a real broker
is tests/kafka/test_producer_renewal.py; on a cluster, tests/torture/test_cluster_faults.py.
"""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from seqgate.runtime.errors import ProducerLost, WorkerFatalError
from seqgate.runtime.renewal import (
    MOST_HUNG_PRODUCERS,
    MOST_RENEWALS_WITHOUT_COMMIT,
    RenewalBudget,
    lost_producer,
    renewable,
)
from seqgate.runtime.session import TransactionalSession
from seqgate.runtime.transaction_failures import FatalErrorTrap, SessionRole
from tests.support.client_standins import HangingProducer, StandInConsumer

# ---- the decision ----------------------------------------------------------------------------


def test_a_hung_call_is_always_renewed() -> None:
    assert renewable(None, hung=True, transaction_age_s=None, transaction_timeout_s=60)


@pytest.mark.parametrize(
    "code",
    [
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
        KafkaError.INVALID_TXN_STATE,
    ],
)
def test_a_fence_of_a_transaction_open_past_its_timeout_is_renewed(code: int) -> None:
    assert renewable(code, hung=False, transaction_age_s=61.0, transaction_timeout_s=60)
    assert renewable(code, hung=False, transaction_age_s=60.0, transaction_timeout_s=60)


def test_a_fence_of_a_young_transaction_is_another_owner_and_not_renewed() -> None:
    # A second worker with the same --instance-id fenced this one: renewing would fence it back.
    assert not renewable(
        KafkaError._FENCED, hung=False, transaction_age_s=2.0, transaction_timeout_s=60
    )
    assert not renewable(
        KafkaError._FENCED, hung=False, transaction_age_s=None, transaction_timeout_s=60
    )


def test_other_fatal_errors_are_not_renewed() -> None:
    for code in (KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, KafkaError._FATAL):
        assert not renewable(code, hung=False, transaction_age_s=600, transaction_timeout_s=60)


def test_the_budget_allows_renewals_without_a_commit_up_to_its_cap() -> None:
    budget = RenewalBudget()
    for _ in range(MOST_RENEWALS_WITHOUT_COMMIT):
        assert budget.allows(hung=False)
        budget.renewed(hung=False)
    assert not budget.allows(hung=False)
    assert "failed before committing anything" in budget.spent(hung=False)
    budget.committed()
    assert budget.allows(hung=False) and budget.total == MOST_RENEWALS_WITHOUT_COMMIT


def test_the_budget_keeps_a_bounded_number_of_hung_producers() -> None:
    budget = RenewalBudget()
    for _ in range(MOST_HUNG_PRODUCERS):
        assert budget.allows(hung=True)
        budget.renewed(hung=True)
        budget.committed()
    assert not budget.allows(hung=True)
    assert budget.allows(hung=False)  # a fenced producer is closed, not kept
    assert "hung producers are already kept" in budget.spent(hung=True)


# ---- the session -----------------------------------------------------------------------------


class _FencedProducer(HangingProducer):
    """Every transactional call is refused: the broker fenced this producer."""

    def _fenced(self, name: str) -> None:
        self.calls.append(name)
        raise KafkaException(KafkaError(KafkaError._FENCED, "Producer fenced", fatal=True))

    def abort_transaction(self, *args: Any) -> None:
        self._fenced("abort_transaction")


class _Factory:
    def __init__(self) -> None:
        self.made: list[HangingProducer] = []

    def __call__(self, trap: FatalErrorTrap) -> Any:
        producer = HangingProducer()
        self.made.append(producer)
        return producer


def _session(producer: Any, factory: _Factory | None, timeout_ms: int) -> TransactionalSession:
    return TransactionalSession(
        producer,
        SessionRole("worker", "app-w0", "--instance-id", timeout_ms),
        timeout_s=0.1,
        failed=WorkerFatalError,
        consumer=StandInConsumer(),  # type: ignore[arg-type]
        hung_grace_s=0.1,
        abort_retry_s=1.0,
        renew_with=factory,
    )


def test_a_hung_producer_is_kept_untouched_and_a_new_one_takes_over() -> None:
    old, factory = HangingProducer(), _Factory()
    session = _session(old, factory, 60_000)
    session.begin()
    try:
        with pytest.raises(ProducerLost) as caught:
            session.commit([TopicPartition("in", 0, 10)])
        assert caught.value.hung and "hung past" in caught.value.what
        session.renew(caught.value, stopping=lambda: False)
        assert old.calls == ["begin_transaction", "flush", "send_offsets_to_transaction"]
        assert session.producer is factory.made[0] and not session.hung
        assert factory.made[0].calls == ["init_transactions"]
        assert not session.in_transaction
    finally:
        old.release.set()


def test_without_a_factory_a_hung_producer_stops_the_caller() -> None:
    old = HangingProducer()
    session = _session(old, None, 60_000)
    session.begin()
    try:
        with pytest.raises(WorkerFatalError, match="librdkafka issues 5456, 5511"):
            session.commit([TopicPartition("in", 0, 10)])
    finally:
        old.release.set()


def test_a_fence_after_the_transaction_timeout_closes_the_old_producer_and_renews() -> None:
    old, factory = _FencedProducer(), _Factory()
    session = _session(old, factory, 0)  # any open transaction is past a 0 ms timeout
    session.begin()
    with pytest.raises(ProducerLost) as caught:
        session.abort_and_rewind()
    assert not caught.value.hung and "past --transaction-timeout-ms (0 ms)" in caught.value.what
    session.renew(caught.value, stopping=lambda: False)
    assert old.calls[-1] == "close" and factory.made[0].calls == ["init_transactions"]


def test_a_fence_of_a_young_transaction_stops_the_caller() -> None:
    session = _session(_FencedProducer(), _Factory(), 60_000)
    session.begin()
    with pytest.raises(WorkerFatalError, match="another worker runs with the same --instance-id"):
        session.abort_and_rewind()


def test_renewals_without_a_commit_are_capped() -> None:
    factory = _Factory()
    session = _session(_FencedProducer(), factory, 0)
    for _ in range(MOST_RENEWALS_WITHOUT_COMMIT):
        session.begin()
        with pytest.raises(ProducerLost) as caught:
            session.abort_and_rewind()
        session.renew(caught.value, stopping=lambda: False)
        session.producer = _FencedProducer()  # type: ignore[assignment]  # fenced again
    session.begin()
    with pytest.raises(WorkerFatalError, match="3 new producers in a row failed"):
        session.abort_and_rewind()


# ---- a fence by the new owner of this worker's partitions (worker/handover.py) -------------


@pytest.mark.parametrize("code", [KafkaError._FENCED, KafkaError.PRODUCER_FENCED])
def test_a_fence_by_a_takeover_is_renewed_whatever_the_transaction_age(code: int) -> None:
    for age in (None, 0.5, 59.0):
        assert renewable(
            code, hung=False, transaction_age_s=age, transaction_timeout_s=60, taken_over_by="b"
        )


def test_a_takeover_mark_does_not_make_other_losses_renewable() -> None:
    # The epoch the broker no longer accepts without a fence, young: not a takeover's fence.
    for code in (KafkaError.INVALID_PRODUCER_EPOCH, KafkaError._FATAL):
        assert not renewable(
            code, hung=False, transaction_age_s=1.0, transaction_timeout_s=60, taken_over_by="b"
        )


def fenced(age_s: float, by: str | None) -> ProducerLost | str:
    """The decision for a fence of a transaction open `age_s`, marked by `by` or not."""
    return lost_producer(
        "the one line",
        KafkaError._FENCED,
        "fenced",
        hung=False,
        what="",
        transaction_age_s=age_s,
        timeout_ms=60_000,
        taken_over_by=by,
        budget=RenewalBudget(),
    )


def test_the_renewal_line_names_the_takeover_or_the_timeout() -> None:
    by_b = fenced(3.0, "b")
    assert isinstance(by_b, ProducerLost)
    assert by_b.what.startswith("b ended this worker's transaction (fenced)")
    assert "--session-timeout-ms" in by_b.what
    timed_out = fenced(61.0, None)
    assert isinstance(timed_out, ProducerLost)
    assert "past --transaction-timeout-ms (60000 ms)" in timed_out.what
    assert fenced(1.0, None) == "the one line"
