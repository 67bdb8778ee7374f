"""runtime.bounded_call and the session's use of it: a client call that ignores its timeout.

The session test gives TransactionalSession a stand-in producer whose
send_offsets_to_transaction never returns (what librdkafka issues 5456/5511 do when the
group coordinator's broker is gone); the real fault is exercised on a three-node cluster
by tests/torture/test_cluster_faults.py.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from seqgate.runtime.bounded_call import call_within
from seqgate.runtime.errors import CallHung, WorkerFatalError
from seqgate.runtime.session import TransactionalSession
from seqgate.runtime.transaction_failures import SessionRole
from tests.support.client_standins import HangingProducer, StandInConsumer


def test_a_call_that_returns_gives_its_result() -> None:
    assert call_within(lambda: 42, 5, "answer") == 42


def test_a_call_that_raises_raises_in_the_caller() -> None:
    def fails() -> None:
        raise ValueError("refused")

    with pytest.raises(ValueError, match="refused"):
        call_within(fails, 5, "refusal")


def test_a_call_past_its_limit_is_hung() -> None:
    release = threading.Event()
    started = time.monotonic()
    with pytest.raises(CallHung, match=r"stuck did not return within 0 s") as caught:
        call_within(release.wait, 0.2, "stuck")
    release.set()
    assert caught.value.what == "stuck"
    assert 0.2 <= time.monotonic() - started < 5


def test_a_hung_send_offsets_stops_the_session_and_leaves_the_producer_alone() -> None:
    producer, consumer = HangingProducer(), StandInConsumer()
    session = TransactionalSession(
        producer,  # type: ignore[arg-type]
        SessionRole("worker", "app-w0", "--instance-id", 60_000),
        timeout_s=0.1,
        failed=WorkerFatalError,
        consumer=consumer,  # type: ignore[arg-type]
        hung_grace_s=0.1,
    )
    session.begin()
    started = time.monotonic()
    try:
        with pytest.raises(WorkerFatalError) as caught:
            session.commit([TopicPartition("in", 0, 10)])
        message = str(caught.value)
        assert "send_offsets_to_transaction did not complete within" in message
        assert "librdkafka issues 5456, 5511" in message
        assert "restarting the worker resumes from the committed offsets" in message
        assert time.monotonic() - started < 5
        session.close(flush_timeout_s=1)
        assert consumer.closed
        # Nothing after the hung call: no commit, no abort, no flush, no close.
        assert producer.calls == ["begin_transaction", "flush", "send_offsets_to_transaction"]
    finally:
        producer.release.set()


class _TimingOutProducer(HangingProducer):
    """send_offsets_to_transaction fails retriably (a timeout) `failures` times, then works."""

    def __init__(self, failures: int) -> None:
        super().__init__()
        self.failures = failures

    def send_offsets_to_transaction(self, *args: Any) -> None:
        self.calls.append("send_offsets_to_transaction")
        if self.failures > 0:
            self.failures -= 1
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out", retriable=True))


def _session(producer: Any, consumer: Any, timeout_s: float = 1.0) -> TransactionalSession:
    return TransactionalSession(
        producer,
        SessionRole("worker", "app-w0", "--instance-id", 60_000),
        timeout_s=timeout_s,
        failed=WorkerFatalError,
        consumer=consumer,
        hung_grace_s=1.0,
        abort_retry_s=5.0,
    )


def test_a_timed_out_send_offsets_is_resumed_then_the_commit_goes_on() -> None:
    producer = _TimingOutProducer(failures=1)
    session = _session(producer, StandInConsumer())
    session.begin()
    session.commit([TopicPartition("in", 0, 10)])
    assert producer.calls == [
        "begin_transaction",
        "flush",
        "send_offsets_to_transaction",
        "send_offsets_to_transaction",  # resumed: what librdkafka asks after a retriable error
        "commit_transaction",
    ]
    assert not session.hung and not session.in_transaction


def test_send_offsets_that_keeps_timing_out_is_hung_and_commits_nothing_more() -> None:
    producer, consumer = _TimingOutProducer(failures=1_000), StandInConsumer()
    session = _session(producer, consumer)
    session.begin()
    with pytest.raises(WorkerFatalError, match="did not complete within 2 s"):
        session.commit([TopicPartition("in", 0, 10)])
    assert session.hung
    tries = producer.calls.count("send_offsets_to_transaction")
    assert 1 <= tries <= 6  # paused 0.5 s between attempts, not spinning
    with pytest.raises(WorkerFatalError, match="librdkafka issues 5456, 5511"):
        session.commit([TopicPartition("in", 0, 11)])  # the same failure, no call
    assert producer.calls.count("send_offsets_to_transaction") == tries
    assert "commit_transaction" not in producer.calls


class _ConflictingAbortProducer(HangingProducer):
    def abort_transaction(self, *args: Any) -> None:
        self.calls.append("abort_transaction")
        raise KafkaException(
            KafkaError(
                KafkaError._CONFLICT,
                "Conflicting send_offsets_to_transaction API call is already in progress",
                retriable=True,
            )
        )


def test_an_abort_refused_for_another_pending_call_is_not_retried() -> None:
    """librdkafka calls _CONFLICT retriable, but retrying the abort cannot help: once this
    spun 325,126 times in 20 s, each a warning line."""
    producer = _ConflictingAbortProducer()
    session = _session(producer, StandInConsumer())
    session.begin()
    started = time.monotonic()
    with pytest.raises(WorkerFatalError, match="Conflicting send_offsets_to_transaction") as e:
        session.abort_and_rewind()
    assert "an earlier transactional call is unfinished" in str(e.value)
    assert "restart the worker (it resumes from the committed offsets)" in str(e.value)
    assert producer.calls.count("abort_transaction") == 1
    assert time.monotonic() - started < 2


def test_a_call_past_its_limit_is_waited_for_while_the_wait_is_explained() -> None:
    release = threading.Event()
    asked: list[float] = []

    def explained() -> bool:
        asked.append(time.monotonic())
        if len(asked) == 3:
            release.set()  # the cluster is back: the call returns
        return True

    assert call_within(lambda: release.wait(10), 0.1, "waiting", keep_waiting=explained)
    assert len(asked) == 3


class _Outage:
    """A write outage that lasts `calls` questions, then is over; or a stopped worker."""

    def __init__(
        self, calls: int, *, stopped: bool = False, back: threading.Event | None = None
    ) -> None:
        self.calls = calls
        self.asked = 0
        self.stopped = stopped
        self.back = back  # set at the third question: the cluster takes writes again

    def waiting(self) -> bool:
        self.asked += 1
        if self.asked == 3 and self.back is not None:
            self.back.set()
        return not self.stopped and self.asked <= self.calls

    def stopping(self) -> bool:
        return self.stopped


def test_send_offsets_waiting_out_a_write_outage_completes_and_is_not_hung() -> None:
    producer = HangingProducer()
    outage = _Outage(calls=1_000, back=producer.release)
    session = TransactionalSession(
        producer,  # type: ignore[arg-type]
        SessionRole("worker", "app-w0", "--instance-id", 60_000),
        timeout_s=0.1,
        failed=WorkerFatalError,
        consumer=StandInConsumer(),  # type: ignore[arg-type]
        hung_grace_s=0.1,
        outage=outage,
    )
    session.begin()
    session.commit([TopicPartition("in", 0, 10)])
    assert outage.asked >= 3 and not session.hung
    assert producer.calls[-1] == "commit_transaction"


def test_send_offsets_past_its_bound_after_the_outage_ended_is_hung() -> None:
    producer, outage = HangingProducer(), _Outage(calls=2)
    session = _session_with(producer, outage)
    session.begin()
    try:
        with pytest.raises(WorkerFatalError, match="librdkafka issues 5456, 5511"):
            session.commit([TopicPartition("in", 0, 10)])
        assert outage.asked == 3 and session.hung
    finally:
        producer.release.set()


def test_a_stop_during_a_write_outage_says_so_and_commits_nothing() -> None:
    producer, outage = HangingProducer(), _Outage(calls=1_000, stopped=True)
    session = _session_with(producer, outage)
    session.begin()
    try:
        with pytest.raises(WorkerFatalError, match="stopped while send_offsets_to_transaction"):
            session.commit([TopicPartition("in", 0, 10)])
        assert session.hung and "commit_transaction" not in producer.calls
    finally:
        producer.release.set()


def _session_with(producer: Any, outage: _Outage) -> TransactionalSession:
    return TransactionalSession(
        producer,
        SessionRole("worker", "app-w0", "--instance-id", 60_000),
        timeout_s=0.1,
        failed=WorkerFatalError,
        consumer=StandInConsumer(),
        hung_grace_s=0.1,
        outage=outage,
    )


def test_send_offsets_failing_retriably_through_a_write_outage_is_resumed_past_its_bound() -> None:
    producer, outage = _TimingOutProducer(failures=5), _Outage(calls=1_000)
    session = _session_with(producer, outage)
    session.begin()
    session.commit([TopicPartition("in", 0, 10)])
    assert outage.asked >= 1 and not session.hung
    assert producer.calls.count("send_offsets_to_transaction") == 6


class _UnansweredConsumer(StandInConsumer):
    """committed() times out `failures` times (a cut the local abort did not need to cross)."""

    def __init__(self, failures: int) -> None:
        self.failures = failures
        self.seeks: list[TopicPartition] = []

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition("in", 0)]

    def committed(self, partitions: list[TopicPartition], timeout: float) -> Any:
        if self.failures > 0:
            self.failures -= 1
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "Failed to get committed"))
        return [TopicPartition("in", 0, 42)]

    def seek(self, partition: TopicPartition) -> None:
        self.seeks.append(partition)


def test_a_rewind_whose_committed_offsets_time_out_is_retried_then_done() -> None:
    consumer = _UnansweredConsumer(failures=2)
    session = _session(HangingProducer(), consumer)
    session.begin()
    session.abort_and_rewind()
    assert consumer.failures == 0
    assert [(tp.partition, tp.offset) for tp in consumer.seeks] == [(0, 42)]


def test_a_rewind_unanswered_past_the_retry_time_raises() -> None:
    consumer = _UnansweredConsumer(failures=1_000)
    session = _session(HangingProducer(), consumer)  # abort retry time 5 s
    session.begin()
    with pytest.raises(KafkaException, match="Failed to get committed"):
        session.abort_and_rewind(outage_retry_s=0.6)
    assert consumer.seeks == []


class _SlowDeliveryProducer(HangingProducer):
    """flush() leaves records unacknowledged `times` times (a cluster not taking writes)."""

    def __init__(self, times: int) -> None:
        super().__init__()
        self.times = times

    def flush(self, timeout: float) -> int:
        self.calls.append("flush")
        self.times -= 1
        return 7 if self.times >= 0 else 0

    def send_offsets_to_transaction(self, *args: Any) -> None:
        self.calls.append("send_offsets_to_transaction")


def test_records_unacknowledged_in_a_write_outage_are_waited_for_before_the_offsets() -> None:
    producer, outage = _SlowDeliveryProducer(times=3), _Outage(calls=1_000)
    session = _session_with(producer, outage)
    session.begin()
    session.commit([TopicPartition("in", 0, 10)])
    assert outage.asked == 3  # asked after each flush that left records, not after the last
    assert producer.calls[1:] == [
        "flush",
        "flush",
        "flush",
        "flush",
        "send_offsets_to_transaction",
        "commit_transaction",
    ]


class _CommitTimingOutProducer(_SlowDeliveryProducer):
    """commit_transaction times out retriably `failures` times ("retry call to resume")."""

    def __init__(self, failures: int) -> None:
        super().__init__(times=0)
        self.failures = failures

    def commit_transaction(self, timeout: float) -> None:
        self.calls.append("commit_transaction")
        if self.failures > 0:
            self.failures -= 1
            raise KafkaException(
                KafkaError(KafkaError._TIMED_OUT, "Timed out, retry call to resume", retriable=True)
            )


def _commit_retry_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.getMessage() == "commit retry" and record.levelno == logging.WARNING
    ]


def _committed_through_timeouts(
    producer: _CommitTimingOutProducer, outage: _Outage, caplog: pytest.LogCaptureFixture
) -> TransactionalSession:
    """A transaction committed by `producer`, whose commit times out 3 times, then goes."""
    session = _session_with(producer, outage)
    session.begin()
    with caplog.at_level(logging.INFO, logger="seqgate.runtime.session"):
        session.commit([TopicPartition("in", 0, 10)])
    assert producer.calls.count("commit_transaction") == 4
    return session


def test_a_commit_timing_out_through_a_write_outage_is_the_outages_to_say(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Seen on three nodes: a commit already waiting when two nodes went down retried for
    45 s with one "commit retry" warning and never the outage's line. The outage is asked
    at every retry (it logs its one line and keeps liveness beating)."""
    producer, outage = _CommitTimingOutProducer(failures=3), _Outage(calls=1_000)
    session = _committed_through_timeouts(producer, outage, caplog)
    assert outage.asked == 3
    assert _commit_retry_warnings(caplog) == []
    assert not session.in_transaction


def test_a_commit_timing_out_without_an_outage_warns_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    _committed_through_timeouts(_CommitTimingOutProducer(failures=3), _Outage(calls=0), caplog)
    assert len(_commit_retry_warnings(caplog)) == 1
