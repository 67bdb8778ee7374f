"""runtime.bounded_call and the session's use of it: a client call that ignores its timeout.

The session test gives TransactionalSession a stand-in producer whose
send_offsets_to_transaction never returns (what librdkafka issues 5456/5511 do when the
group coordinator's broker is gone); the real fault is exercised on a three-node cluster
by tests/torture/test_cluster_faults.py.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from seqgate.streams.runtime.bounded_call import CallHung, call_within
from seqgate.streams.runtime.errors import WorkerFatalError
from seqgate.streams.runtime.session import SessionRole, TransactionalSession


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


class _Consumer:
    closed = False

    def consumer_group_metadata(self) -> object:
        return object()

    def close(self) -> None:
        self.closed = True


class _HangingProducer:
    """send_offsets_to_transaction blocks until released; anything else after it is a bug."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[str] = []

    def flush(self, timeout: float) -> int:
        self.calls.append("flush")
        return 0

    def send_offsets_to_transaction(self, *args: Any) -> None:
        self.calls.append("send_offsets_to_transaction")
        self.release.wait(30)

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> None:
            self.calls.append(name)

        return call


def test_a_hung_send_offsets_stops_the_session_and_leaves_the_producer_alone() -> None:
    producer, consumer = _HangingProducer(), _Consumer()
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


class _TimingOutProducer(_HangingProducer):
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
    session = _session(producer, _Consumer())
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
    producer, consumer = _TimingOutProducer(failures=1_000), _Consumer()
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


class _ConflictingAbortProducer(_HangingProducer):
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
    session = _session(producer, _Consumer())
    session.begin()
    started = time.monotonic()
    with pytest.raises(WorkerFatalError, match="Conflicting send_offsets_to_transaction"):
        session.abort_and_rewind()
    assert producer.calls.count("abort_transaction") == 1
    assert time.monotonic() - started < 2
