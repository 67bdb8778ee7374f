"""Helpers for tests against the real broker: topics, a worker thread, readers."""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from seqgate_devtools.broker import (
    BrokerError,
    BrokerHandle,
    start_broker,
    stop_broker,
)

from seqgate.runtime.faults import FaultInjector
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import create_topics, pipeline_topics
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD
from seqgate.schemas.identity import event_identity
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.rules.policy import Policy
from seqgate.streams.tools.replay import InputRecord
from seqgate.streams.tools.verify import VerifyTarget
from seqgate.streams.worker.processor import Decision, Worker, WorkerConfig


def closed_port() -> int:
    """A loopback port nothing listens on (bound once, then released): connection refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `condition` until true; fail with `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.05)


def make_config(
    bootstrap: str,
    name: str,
    state_dir: Path,
    *,
    ordering: str = "aws",
    partitions: int = 3,
    instance_id: str = "w0",
    broker_time: bool = True,
    replication_factor: int = 1,
    **overrides: object,
) -> WorkerConfig:
    config = WorkerConfig(
        kafka=KafkaSettings(bootstrap),
        state_dir=state_dir / instance_id,
        application_id=f"{name}-app",
        instance_id=instance_id,
        input_topic=f"{name}.object-events",
        outbox_topic=f"{name}.object-events.outbox",
        rejected_topic=f"{name}.object-events.rejected",
        policy=Policy.build(ordering),
        commit_interval_ms=50,
        **overrides,  # type: ignore[arg-type]
    )
    specs = pipeline_topics(
        input_topic=config.input_topic,
        outbox_topic=config.outbox_topic,
        rejected_topic=config.rejected_topic,
        application_id=config.application_id,
        partitions=partitions,
        broker_time=broker_time,
    )
    create_topics(AdminClient({"bootstrap.servers": bootstrap}), specs, replication_factor)
    return config


@dataclass
class RunningWorker:
    worker: Worker
    stop: threading.Event
    thread: threading.Thread
    decisions: list[Decision] = field(default_factory=list)
    errors: list[BaseException] = field(default_factory=list)


def group_args(config: WorkerConfig) -> list[str]:
    """The options naming a worker group's broker, application and input, as the operator
    commands (`status`, `watermark`, `verify`, `reset`) take them."""
    return [
        "--bootstrap-servers",
        config.kafka.bootstrap_servers,
        "--application-id",
        config.application_id,
        "--input-topic",
        config.input_topic,
    ]


@contextlib.contextmanager
def worker_thread(
    config: WorkerConfig, faults: FaultInjector | None = None, *, expect_errors: bool = False
) -> Iterator[RunningWorker]:
    """`running` for a worker built from `config`, recording what each commit decided."""
    decisions: list[Decision] = []
    worker = Worker(config, faults=faults, on_commit=decisions.extend)
    with running(worker, expect_errors=expect_errors) as run:
        run.decisions = decisions
        yield run


@contextlib.contextmanager
def running(worker: Worker, *, expect_errors: bool = False) -> Iterator[RunningWorker]:
    """Run an already built worker in a thread; on leaving, stop it and wait for it.

    A worker that raised fails the test on leaving, unless the test said it expects
    errors (an injected fault, a fencing): then it is the test's to assert on `.errors`.
    """
    stop = threading.Event()
    run = RunningWorker(worker, stop, threading.Thread(target=lambda: None))

    def target() -> None:
        try:
            worker.run(stop)
        except BaseException as error:
            run.errors.append(error)

    run.thread = threading.Thread(target=target, daemon=True)
    run.thread.start()
    try:
        yield run
    finally:
        stop.set()
        run.thread.join(60)
        assert not run.thread.is_alive(), "worker did not stop within 60s"
        if run.errors and not expect_errors:
            raise AssertionError(
                f"the worker thread raised {run.errors[0]!r}; pass expect_errors=True "
                "if the test provokes it"
            ) from run.errors[0]


def produce_events(bootstrap: str, topic: str, events: list[ObjectEvent]) -> None:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": True,
            "partitioner": "murmur2_random",
        }
    )
    for event in events:
        key = event_identity(event.source, event.bucket, event.key).encode("utf-8")
        while True:
            try:
                producer.produce(topic, key=key, value=OBJECT_EVENT.encode(event))
                break
            except BufferError:
                producer.poll(0.1)
    assert producer.flush(60) == 0


def read_all(bootstrap: str, topic: str, *, committed_only: bool = True) -> list[InputRecord]:
    """Every record of `topic` up to its current end, in partition/offset order."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "seqgate-test-reader",
            "isolation.level": "read_committed" if committed_only else "read_uncommitted",
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        partitions = sorted(metadata.partitions)
        consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        at_end: set[int] = set()
        records: list[InputRecord] = []
        while len(at_end) < len(partitions):
            message = consumer.poll(30)
            assert message is not None, f"reading {topic} stalled"
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error.str()
                at_end.add(message.partition() or 0)
                continue
            at_end.discard(message.partition() or 0)
            partition, offset = message.partition(), message.offset()
            assert partition is not None and offset is not None
            timestamp = message.timestamp()[1]
            records.append(
                InputRecord(partition, offset, message.key(), message.value() or b"", timestamp)
            )
        records.sort(key=lambda record: (record.partition, record.offset))
        return records
    finally:
        consumer.close()


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    """The group's last committed offsets, without waiting for pending transactions.

    A read_committed consumer asks for *stable* offsets (KIP-447) and waits
    while a transaction holding offsets for the group is open — for example
    one left by a killed worker, until the next incarnation fences it.
    """
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": group, "isolation.level": "read_uncommitted"}
    )
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        tps = [TopicPartition(topic, p) for p in metadata.partitions]
        return {tp.partition: tp.offset for tp in consumer.committed(tps, timeout=30)}
    finally:
        consumer.close()


# Right after a topic is created or a broker restarts, its partitions have no leader for a moment.
LEADERLESS = (KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)


def end_offsets(bootstrap: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "seqgate-test-ends"})
    try:
        metadata = consumer.list_topics(topic, timeout=30).topics[topic]
        return {p: _end_offset(consumer, TopicPartition(topic, p)) for p in metadata.partitions}
    finally:
        consumer.close()


def _end_offset(consumer: Consumer, tp: TopicPartition) -> int:
    # A partition of a topic created a moment ago may have no leader yet: asked again.
    deadline = time.monotonic() + 30
    while True:
        try:
            return int(consumer.get_watermark_offsets(tp, timeout=30)[1])
        except KafkaException as error:
            if error.args[0].code() not in LEADERLESS or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def caught_up(bootstrap: str, config: WorkerConfig) -> Callable[[], bool]:
    """True once the worker group has committed up to the end of the input."""

    def check() -> bool:
        ends = end_offsets(bootstrap, config.input_topic)
        try:
            done = committed_offsets(bootstrap, config.application_id, config.input_topic)
        except KafkaException as error:
            if error.args[0].retriable() or error.args[0].code() == KafkaError.NOT_COORDINATOR:
                return False  # the group coordinator is still loading
            raise
        if all(done.get(p, -1) >= end for p, end in ends.items() if end > 0):
            return True
        # A transactional producer's input ends with commit markers, which no
        # consumer position passes: compare with the last visible record instead.
        visible: dict[int, int] = {}
        for record in read_all(bootstrap, config.input_topic):
            visible[record.partition] = record.offset + 1
        return all(done.get(p, -1) >= end for p, end in visible.items())

    return check


def worker_config(bootstrap: str, input_topic: str, state_dir: Path) -> WorkerConfig:
    """A worker for topics made by `pipeline_topics` named `<name>.object-events…`
    with application id `<name>-app` (the bridge tests' layout)."""
    name = input_topic.removesuffix(".object-events")
    return WorkerConfig(
        kafka=KafkaSettings(bootstrap),
        state_dir=state_dir / "worker",
        application_id=f"{name}-app",
        instance_id="w0",
        input_topic=input_topic,
        outbox_topic=f"{name}.object-events.outbox",
        rejected_topic=f"{name}.object-events.rejected",
        commit_interval_ms=50,
    )


def verify_target(config: WorkerConfig) -> VerifyTarget:
    return VerifyTarget(
        kafka=config.kafka,
        application_id=config.application_id,
        input_topic=config.input_topic,
        outbox_topic=config.outbox_topic,
        changelog_topic=config.changelog_topic,
        policy=config.policy,
        rejected_topic=config.rejected_topic,
    )


@contextlib.contextmanager
def private_broker(data_dir: Path) -> Iterator[list[BrokerHandle]]:
    """A broker of one test's own, for outages that must not hurt other tests.

    Yields a list whose last item is the live broker: a test that kills and restarts it
    (seqgate_devtools.broker.bounce) appends the new handle; every handle is stopped at the
    end.
    """
    import pytest  # only tests use this helper

    try:
        first = start_broker(
            data_dir,
            state_file=data_dir / "state.json",
            reuse_running=False,
            detach=False,
            timeout=120,
        )
    except BrokerError as error:
        if os.environ.get("SEQGATE_ALLOW_NO_KAFKA") == "1":
            pytest.skip(f"no private broker (SEQGATE_ALLOW_NO_KAFKA=1): {error}")
        raise
    handles = [first]
    try:
        yield handles
    finally:
        for handle in reversed(handles):
            stop_broker(handle)


def produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes]]) -> None:
    # Idempotent: records keep their order even when a batch is retried (offsets = list order).
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True})
    for key, value in records:
        producer.produce(topic, key=key, value=value, partition=0)
    assert producer.flush(30) == 0


def run_until_caught_up(
    config: WorkerConfig, what: str, seen: list[Worker] | None = None, timeout: float = 120
) -> list[str]:
    """Run a worker until the input is committed; its committed outcomes, in input order.
    The worker is appended to `seen`."""
    with worker_thread(config) as running:
        if seen is not None:
            seen.append(running.worker)
        wait_for(
            lambda: bool(running.errors) or caught_up(config.kafka.bootstrap_servers, config)(),
            timeout,
            what,
        )
    decisions = sorted(running.decisions, key=lambda d: (d.partition, d.offset))
    return [d.outcome.value for d in decisions]


def last_outbox_events(bootstrap: str, topic: str) -> dict[str, ObjectEvent]:
    """Object key -> its last event in the outbox `topic` (what a downstream consumer of
    one bucket ends with)."""
    last: dict[str, ObjectEvent] = {}
    for record in read_all(bootstrap, topic):
        event = OUTBOX_RECORD.decode(record.value or b"").event
        last[event.key] = event
    return last
