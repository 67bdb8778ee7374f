"""`seqgate demo`: the guide's demonstration, end to end on a real broker.

The guide feeds one object the sequencers f, 000F, e, 10, reopens its store
and feeds 10 again. Here the same deliveries travel the real path: bridge
(normalize + idempotent produce) → `object-events` → a worker (Kafka
transaction + RocksDB) → outbox, and the worker is really stopped and
started again between the two phases.
"""

from __future__ import annotations

import contextlib
import queue
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.publish.publisher import EventPublisher, Topics
from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import create_topics, pipeline_topics
from seqgate.schemas.outcomes import Outcome
from seqgate.streams.rules.policy import Policy
from seqgate.streams.worker.processor import Decision, Worker, WorkerConfig
from seqgate_devtools.samples import s3_notification, s3_record, to_bytes

Echo = Callable[[str], None]

GUIDE_DELIVERIES = ("f", "000F", "e", "10")
REDELIVERY_AFTER_RESTART = "10"
_LABELS = {Outcome.ACCEPTED: "queued"}  # the guide's word for an accepted event
_DECISION_TIMEOUT_S = 60.0

WHY_THEY_DIFFER = (
    "AWS compares sequencers as strings after right-padding the shorter one with zeros,"
    " so 'f' becomes 'f0' against '10' and 'f000' against '000F' and outranks both,"
    " whereas the guide compares their numeric values (15, 15, 14, 16)."
)


@contextlib.contextmanager
def _broker(kafka: KafkaSettings | None, echo: Echo) -> Iterator[KafkaSettings]:
    if kafka is not None:
        yield kafka
        return
    from seqgate_devtools.broker.launcher import running_broker

    echo("starting a local Apache Kafka broker (first run downloads it through Maven)...")
    with running_broker() as handle:
        echo(f"broker ready at {handle.bootstrap_servers}")
        yield KafkaSettings(handle.bootstrap_servers)
    echo("broker stopped")


class _DemoRun:
    """One ordering's run: its own topics, group and state, so runs never interact."""

    def __init__(self, kafka: KafkaSettings, ordering: str, state_root: Path) -> None:
        suffix = uuid.uuid4().hex[:8]
        self.kafka = kafka
        self.ordering = ordering
        self.config = WorkerConfig(
            kafka=kafka,
            state_dir=state_root / ordering,
            application_id=f"seqgate-demo-{ordering}-{suffix}",
            instance_id="demo",
            input_topic=f"demo-{suffix}.object-events",
            outbox_topic=f"demo-{suffix}.object-events.outbox",
            rejected_topic=f"demo-{suffix}.object-events.rejected",
            policy=Policy.build(ordering),
            commit_interval_ms=50,
        )
        self.decisions: queue.Queue[Decision] = queue.Queue()
        self._errors: list[BaseException] = []  # of the running worker
        self.publisher = EventPublisher(
            kafka, Topics(self.config.input_topic, self.config.rejected_topic)
        )

    def create_topics(self) -> None:
        specs = pipeline_topics(
            input_topic=self.config.input_topic,
            outbox_topic=self.config.outbox_topic,
            rejected_topic=self.config.rejected_topic,
            application_id=self.config.application_id,
            partitions=3,
        )
        create_topics(AdminClient(client_config(self.kafka)), specs)

    @contextlib.contextmanager
    def worker(self) -> Iterator[None]:
        stop = threading.Event()
        errors = self._errors = []
        processor = Worker(self.config, on_commit=self._collect)

        def target() -> None:
            try:
                processor.run(stop)
            except BaseException as error:
                errors.append(error)

        thread = threading.Thread(target=target, name=f"demo-worker-{self.ordering}")
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=_DECISION_TIMEOUT_S)
        if errors:
            raise errors[0]

    def _collect(self, decisions: list[Decision]) -> None:
        for decision in decisions:
            self.decisions.put(decision)

    def deliver(self, sequencer: str) -> Outcome:
        raw = to_bytes(s3_notification(s3_record(sequencer=sequencer)))
        origin = f"demo:{sequencer}"
        result = normalize(raw, origin)
        self.publisher.submit(result, raw, origin)
        self.publisher.flush()
        deadline = time.monotonic() + _DECISION_TIMEOUT_S
        while time.monotonic() < deadline:
            if self._errors:  # the worker stopped: say why, not that it said nothing
                raise self._errors[0]
            try:
                return self.decisions.get(timeout=0.5).outcome
            except queue.Empty:
                continue
        raise RuntimeError(f"the worker decided nothing within {_DECISION_TIMEOUT_S:.0f}s")

    def count_outbox(self) -> int:
        """Count outbox records as a downstream read_committed consumer sees them."""
        consumer = Consumer(
            client_config(
                self.kafka,
                **{
                    "group.id": f"{self.config.application_id}-reader",
                    "isolation.level": "read_committed",
                    "enable.partition.eof": True,
                    "auto.offset.reset": "earliest",
                    "enable.auto.commit": False,
                },
            )
        )
        try:
            metadata = consumer.list_topics(self.config.outbox_topic, timeout=30)
            partitions = list(metadata.topics[self.config.outbox_topic].partitions)
            consumer.assign([TopicPartition(self.config.outbox_topic, p, 0) for p in partitions])
            at_end: set[int] = set()
            count = 0
            while len(at_end) < len(partitions):
                message = consumer.poll(30)
                if message is None:
                    raise RuntimeError("reading the outbox stalled")
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition() or 0)
                elif error is None:
                    count += 1
            return count
        finally:
            consumer.close()


def _label(outcome: Outcome) -> str:
    return _LABELS.get(outcome, outcome.value)


def run_scenario(kafka: KafkaSettings, ordering: str, state_root: Path, echo: Echo) -> list[str]:
    """Feed the guide's deliveries under one ordering; return the printed lines."""
    run = _DemoRun(kafka, ordering, state_root)
    run.create_topics()
    lines: list[str] = []

    def say(line: str) -> None:
        lines.append(line)
        echo(line)

    with run.worker():
        for sequencer in GUIDE_DELIVERIES:
            say(f"{sequencer} {_label(run.deliver(sequencer))}")
    echo("(worker stopped and started again: same instance id, same RocksDB state directory)")
    with run.worker():
        say(f"{REDELIVERY_AFTER_RESTART} {_label(run.deliver(REDELIVERY_AFTER_RESTART))}")
    run.publisher.close()
    say(f"outbox records: {run.count_outbox()}")
    return lines


def run_demo(kafka: KafkaSettings | None, echo: Echo) -> dict[str, list[str]]:
    sample = normalize(to_bytes(s3_notification(s3_record())), "demo").events[0]
    results: dict[str, list[str]] = {}
    with (
        _broker(kafka, echo) as target,
        tempfile.TemporaryDirectory(prefix="seqgate-demo-") as state,
    ):
        sent_key = s3_record()["s3"]["object"]["key"]
        echo(f"object: s3://{sample.bucket}/{sample.key}  (key as sent: {sent_key})")
        echo("")
        echo("== the guide's ordering (--ordering numeric): sequencers compared as numbers ==")
        results["numeric"] = run_scenario(target, "numeric", Path(state), echo)
        echo("")
        echo("== the default ordering (--ordering aws): AWS's documented right-pad rule ==")
        results["aws"] = run_scenario(target, "aws", Path(state), echo)
        echo("")
        echo(f"Why they differ: {WHY_THEY_DIFFER}")
    return results
