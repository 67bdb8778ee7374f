"""A stuck consumer is told from an idle one (seqgate/streams/worker/liveness.py), and the worker
exits.

The pure rules are tested directly; the worker is tested against the real broker by
pausing its consumer's partitions from its own commit callback: a client that is
connected and fetches nothing, as was seen after a long broker outage.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from seqgate.streams.worker.processor import Decision, Worker, WorkerFatalError
from tests.support.events import s3_event
from tests.support.kafka_helpers import caught_up, make_config, produce_events, running, wait_for


@pytest.mark.kafka
def test_a_worker_that_reads_nothing_while_records_wait_exits_naming_the_partitions(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(
        kafka_bootstrap, unique_name, tmp_path, partitions=1, stall_timeout_ms=2_000
    )
    pause_after_next_commit = threading.Event()

    def on_commit(decisions: list[Decision]) -> None:
        # Runs in the worker's thread (the client is not to be called from another).
        if pause_after_next_commit.is_set():
            consumer = worker._consumer
            consumer.pause(consumer.assignment())

    worker = Worker(config, on_commit=on_commit)
    produce_events(kafka_bootstrap, config.input_topic, [s3_event("a1")])
    with running(worker, expect_errors=True) as run:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
        idle_since = time.monotonic()
        # Idle with nothing to read, longer than the stall timeout: never a stall.
        wait_for(lambda: time.monotonic() - idle_since > 3, 10, "an idle period")
        assert run.thread.is_alive() and not run.errors
        pause_after_next_commit.set()
        produce_events(kafka_bootstrap, config.input_topic, [s3_event("b2")])
        wait_for(caught_up(kafka_bootstrap, config), 20, "the worker to commit b2")
        produce_events(kafka_bootstrap, config.input_topic, [s3_event("c3")])
        run.thread.join(30)
        assert not run.thread.is_alive(), "the stuck worker did not exit"
    (error,) = run.errors
    assert isinstance(error, WorkerFatalError)
    message = str(error)
    assert "--stall-timeout-ms" in message
    assert "partitions 0 (at 2, readable up to 3)" in message, message
    assert "restart the worker" in message


@pytest.mark.kafka
def test_a_worker_whose_partitions_are_lost_and_never_given_back_exits(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """A rejoin that never completes (no new assignment after partitions were lost)
    has no assigned partition to find unread records in: it has its own rule."""
    config = make_config(
        kafka_bootstrap, unique_name, tmp_path, partitions=1, stall_timeout_ms=2_000
    )
    lose_after_next_commit = threading.Event()

    def on_commit(decisions: list[Decision]) -> None:
        # In the worker's thread: report the partitions lost, then stop fetching them
        # without telling the group, which so never assigns anything again.
        if lose_after_next_commit.is_set():
            lose_after_next_commit.clear()
            consumer = worker._consumer
            assignment = consumer.assignment()
            worker._on_lost(consumer, assignment)
            consumer.incremental_unassign(assignment)

    worker = Worker(config, on_commit=on_commit)
    lose_after_next_commit.set()
    produce_events(kafka_bootstrap, config.input_topic, [s3_event("a1")])
    with running(worker, expect_errors=True) as run:
        run.thread.join(60)
        assert not run.thread.is_alive(), "the worker without partitions did not exit"
    (error,) = run.errors
    assert isinstance(error, WorkerFatalError)
    message = str(error)
    assert "partitions lost" in message and "no new assignment" in message, message
    assert "--stall-timeout-ms 2000" in message and "restart the worker" in message


@pytest.mark.kafka
def test_a_worker_fenced_as_a_static_member_exits_with_one_line(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """Another consumer joining with the worker's group.instance.id fences it for good
    (also seen after broker outages longer than the session timeout). librdkafka then
    delivers `_FATAL` errors without the fatal flag: the worker must exit, not idle."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1)
    worker = Worker(config)
    produce_events(kafka_bootstrap, config.input_topic, [s3_event("a1")])
    usurper = Consumer(
        {
            "bootstrap.servers": kafka_bootstrap,
            "group.id": config.application_id,
            "group.instance.id": config.instance_id,
            "partition.assignment.strategy": "cooperative-sticky",
            "enable.auto.commit": False,
        }
    )
    try:
        with running(worker, expect_errors=True) as run:
            wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
            usurper.subscribe([config.input_topic])
            deadline = time.monotonic() + 60
            while run.thread.is_alive() and time.monotonic() < deadline:
                usurper.poll(0.2)  # joins, and so fences the worker's consumer
            assert not run.thread.is_alive(), "the fenced worker did not exit"
    finally:
        usurper.close()
    (error,) = run.errors
    assert isinstance(error, WorkerFatalError)
    message = str(error)
    assert message.startswith("the Kafka consumer failed for good"), message
    assert "restart the worker" in message
