"""Shared machinery of the torture tests (issue 4): workloads, worker processes, probes.

The torture tests run `seqgate worker` as real subprocesses, hurt them (SIGKILL,
SIGSTOP, deleted state, a killed broker) and check docs/design.md §5.7's invariant from
outside with `seqgate.streams.tools.verify.verify`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import (
    Consumer,
    IsolationLevel,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.identity import object_identity
from seqgate.schemas.records import ObjectEvent, Watermark
from seqgate.streams.state.store import StateDirectory
from seqgate.streams.tools.replay import InputRecord, replay_partition
from seqgate.streams.tools.verify import VerifyReport, VerifyTarget, verify
from seqgate.streams.worker.processor import WorkerConfig
from tests.support.kafka_helpers import LEADERLESS, read_all, wait_for

# ---- workload ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Workload:
    """Pre-serialized input: (key, value) pairs in delivery order, plus what it contains."""

    records: list[tuple[bytes, bytes]]
    identities: int
    writes: int
    redeliveries: int
    late: int
    expected: Counter[str]  # outcome -> count, decided in delivery order per identity

    def __len__(self) -> int:
        return len(self.records)

    def summary(self) -> str:
        return (
            f"events={len(self.records)} identities={self.identities} writes={self.writes}"
            f" redeliveries={self.redeliveries} late-deliveries={self.late}"
            f" expected accepted={self.expected['accepted']}"
            f" duplicate={self.expected['duplicate']} stale={self.expected['stale']}"
        )


def _event(obj: int, write: int) -> ObjectEvent:
    return ObjectEvent(
        id=f"s3-torture-{obj:06x}-{write:06x}",
        source="s3",
        bucket=f"torture-{obj % 4}",
        key=f"incoming/object-{obj:06d}.csv",
        kind="created",
        event_name="ObjectCreated:Put",
        position=f"{write:016x}",
        version_id=f"v{write}",
        size=1024 + write,
        etag=None,
        event_time=None,
        origin=f"torture:{obj}:{write}",
    )


def build_workload(
    seed: int,
    events: int,
    identities: int,
    *,
    redelivery_rate: float = 0.3,
    late_rate: float = 0.2,
    late_window: int = 40_000,
) -> Workload:
    """`events` deliveries of writes to `identities` objects.

    Each object's writes have increasing positions. A share `redelivery_rate` of
    the deliveries repeats an earlier write; a share `late_rate` of the writes
    arrives up to `late_window` deliveries late, so that later writes of the same
    object often overtake it (stale events). Every object is written at least once.
    """
    rng = random.Random(seed)
    writes_wanted = int(events * (1 - redelivery_rate))
    assert writes_wanted >= identities, "too few writes for that many identities"
    per_object = [0] * identities
    writes: list[tuple[int, int]] = []
    objects = list(range(identities))
    rng.shuffle(objects)
    for index in range(writes_wanted):
        obj = objects[index] if index < identities else rng.randrange(identities)
        per_object[obj] += 1
        writes.append((obj, per_object[obj]))
    # (delivery time, tie-breaker, write index): late writes and redeliveries move later.
    timeline: list[tuple[float, int, int]] = []
    late = 0
    for index in range(len(writes)):
        when = float(index)
        if rng.random() < late_rate:
            when += rng.uniform(1, late_window)
            late += 1
        timeline.append((when, len(timeline), index))
    redeliveries = events - len(writes)
    for _ in range(redeliveries):
        index = rng.randrange(len(writes))
        timeline.append((index + rng.uniform(0, late_window), len(timeline), index))
    timeline.sort()

    encoded: dict[int, tuple[bytes, bytes]] = {}
    records: list[tuple[bytes, bytes]] = []
    highest: dict[int, int] = {}
    outcomes: Counter[str] = Counter()
    for _, _, index in timeline:
        obj, write = writes[index]
        pair = encoded.get(index)
        if pair is None:
            event = _event(obj, write)
            key = object_identity(event.source, event.bucket, event.key).encode("utf-8")
            pair = encoded[index] = (key, OBJECT_EVENT.encode(event))
        records.append(pair)
        current = highest.get(obj, 0)
        if write > current:
            highest[obj] = write
            outcomes["accepted"] += 1
        else:
            outcomes["duplicate" if write == current else "stale"] += 1
    return Workload(records, identities, len(writes), redeliveries, late, outcomes)


# ---- feeding the input ---------------------------------------------------------------------------


# librdkafka's own log lines of the test's clients (connection errors while a broker is
# deliberately down, mostly) go to logging and are dropped, instead of raw `%3|...` lines.
CLIENT_LOGGER = logging.getLogger("torture.librdkafka")
CLIENT_LOGGER.setLevel(logging.CRITICAL)


def input_producer(bootstrap: str) -> Producer:
    """Idempotent, keyed by identity, with the Java client's partitioner (like the bridge)."""
    return Producer(
        {
            "bootstrap.servers": bootstrap,
            "logger": CLIENT_LOGGER,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 20,
            "partitioner": "murmur2_random",
            "message.timeout.ms": 300_000,
        }
    )


def produce_records(producer: Producer, topic: str, records: Sequence[tuple[bytes, bytes]]) -> None:
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, _message: object) -> None:
        if error is not None:
            errors.append(error.str())

    for key, value in records:
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
    remaining = producer.flush(300)
    assert remaining == 0, f"{remaining} input records not acknowledged"
    assert not errors, f"input not delivered: {errors[:3]}"


class Feeder:
    """Produces a workload in chunks from a thread, pausing between chunks (pacing only).

    With ``redeliver``, once the workload is produced it goes on sending random records of
    it (more redeliveries: they change no outcome but keep the input flowing) at the same
    pace until :meth:`join`, so that a small workload still keeps a worker busy through a
    long sequence of faults (the fast tier's fault runs, tests/support/cluster_faults.py)."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        records: Sequence[tuple[bytes, bytes]],
        *,
        chunk: int = 5_000,
        pause_s: float = 0.2,
        redeliver: bool = False,
        seed: int = 0,
    ) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self.records = records
        self.chunk = chunk
        self.pause_s = pause_s
        self.redeliver = redeliver
        self.produced = 0
        self.errors: list[BaseException] = []
        self.done = threading.Event()
        self._rng = random.Random(seed)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="feeder", daemon=True)

    def start(self) -> Feeder:
        self._thread.start()
        return self

    def _run(self) -> None:
        producer = input_producer(self.bootstrap)
        try:
            for start in range(0, len(self.records), self.chunk):
                batch = self.records[start : start + self.chunk]
                produce_records(producer, self.topic, batch)
                self.produced += len(batch)
                time.sleep(self.pause_s)  # pacing only: spread the input over time
            while self.redeliver and self.records and not self._stop.is_set():
                batch = self._rng.choices(self.records, k=self.chunk)
                produce_records(producer, self.topic, batch)
                self.produced += len(batch)
                self._stop.wait(self.pause_s)  # pacing only
        except BaseException as error:
            self.errors.append(error)
        finally:
            self.done.set()

    def join(self, timeout: float) -> None:
        """Wait for the workload to be produced (and stop redelivering); fail the test if the
        thread raised or did not end within ``timeout``."""
        deadline = time.monotonic() + timeout
        while self.redeliver and self.produced < len(self.records) and time.monotonic() < deadline:
            time.sleep(0.1)  # the workload itself comes first
        self._stop.set()
        self._thread.join(max(deadline - time.monotonic(), 0.0))
        assert not self._thread.is_alive(), f"the feeder did not finish within {timeout:.0f}s"
        assert not self.errors, f"the feeder failed: {self.errors[0]!r}"
        assert self.produced >= len(self.records)
        assert self.redeliver or self.produced == len(self.records)


# ---- worker processes ----------------------------------------------------------------------------


@dataclass
class WorkerProcess:
    """One incarnation of `seqgate worker` as a subprocess; stderr goes to a file."""

    instance_id: str
    process: subprocess.Popen[bytes]
    stderr_path: Path
    started: float = field(default_factory=time.monotonic)

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """SIGKILL (a no-op if it already died) and reap."""
        if self.alive():
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)

    def signal(self, signum: int) -> None:
        self.process.send_signal(signum)

    def frozen(self) -> bool:
        """Whether the process is stopped (SIGSTOP: state T in /proc/PID/stat)."""
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        return stat.rsplit(")", 1)[1].split()[0] == "T"

    def catches_sigterm(self) -> bool:
        """Whether the process has installed its SIGTERM handler (Linux: SigCgt in
        /proc/PID/status); before that, SIGTERM kills it instead of stopping it."""
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
        except OSError:
            return False
        caught = next(
            (line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), "0"
        )
        return bool(int(caught, 16) >> (signal.SIGTERM - 1) & 1)

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM (graceful: commit the open transaction) and wait for the exit code.
        A worker still starting is given until it handles SIGTERM (a race seen in CI:
        the group was already caught up, and the signal came during the imports)."""
        deadline = time.monotonic() + timeout
        while self.alive() and not self.catches_sigterm() and time.monotonic() < deadline:
            time.sleep(0.05)  # polling interval: /proc has no notification
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"worker {self.instance_id} ignored SIGTERM for {timeout:.0f}s;"
                f" stderr:\n{self.stderr()[-3000:]}"
            ) from None

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            raise AssertionError(
                f"worker {self.instance_id} still running after {timeout:.0f}s;"
                f" stderr:\n{self.stderr()[-3000:]}"
            ) from None

    def survives(self, seconds: float) -> None:
        """Fails at once if the worker exits within ``seconds``."""
        try:
            code = self.process.wait(seconds)
        except subprocess.TimeoutExpired:
            return
        raise AssertionError(
            f"worker {self.instance_id} exited with {code} within {seconds:.0f}s;"
            f" stderr:\n{self.stderr()[-3000:]}"
        )

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""


class WorkerLauncher:
    """Starts `python -m seqgate.cli worker` for one pipeline; cleans up what it started."""

    def __init__(
        self,
        bootstrap: str,
        config: WorkerConfig,
        state_root: Path,
        log_dir: Path,
        *,
        commit_every: int = 500,
        commit_interval_ms: int = 100,
        session_timeout_ms: int | None = None,
        transaction_timeout_ms: int | None = None,
        log_level: str = "warning",
    ) -> None:
        self.bootstrap = bootstrap
        self.config = config
        self.state_root = state_root
        self.log_dir = log_dir
        self.commit_every = commit_every
        self.commit_interval_ms = commit_interval_ms
        self.session_timeout_ms = session_timeout_ms
        self.transaction_timeout_ms = transaction_timeout_ms
        self.log_level = log_level
        self.started: list[WorkerProcess] = []
        log_dir.mkdir(parents=True, exist_ok=True)

    def state_path(self, instance_id: str) -> Path:
        """<state-dir>/<application-id>/<instance-id>, as the CLI lays it out."""
        return self.state_root / self.config.application_id / instance_id

    def state_directory(self, instance_id: str) -> StateDirectory:
        return StateDirectory(self.state_path(instance_id), self.config.input_topic)

    def start(
        self,
        instance_id: str,
        *,
        fault: str | None = None,
        bootstrap: str | None = None,
        extra_args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        prefix: Sequence[str] = (),
    ) -> WorkerProcess:
        """Start one incarnation; `prefix` runs it through another command (`ip netns exec`)."""
        config = self.config
        command = [
            *prefix,
            sys.executable,
            "-m",
            "seqgate.cli",
            "--log-level",
            self.log_level,
            "worker",
            "--bootstrap-servers",
            bootstrap or self.bootstrap,
            "--application-id",
            config.application_id,
            "--instance-id",
            instance_id,
            "--input-topic",
            config.input_topic,
            "--outbox-topic",
            config.outbox_topic,
            "--rejected-topic",
            config.rejected_topic,
            "--ordering",
            config.policy.order.name,
            "--state-dir",
            str(self.state_root),
            "--commit-every",
            str(self.commit_every),
            "--commit-interval-ms",
            str(self.commit_interval_ms),
        ]
        if self.session_timeout_ms is not None:
            command += ["--session-timeout-ms", str(self.session_timeout_ms)]
        if self.transaction_timeout_ms is not None:
            command += ["--transaction-timeout-ms", str(self.transaction_timeout_ms)]
        command += list(extra_args)
        environment = {
            key: value for key, value in os.environ.items() if not key.startswith("SEQGATE_FAULT")
        }
        environment.update(env or {})
        if fault is not None:
            environment["SEQGATE_FAULT"] = fault
        number = sum(1 for worker in self.started if worker.instance_id == instance_id)
        stderr_path = self.log_dir / f"{instance_id}-{number:02d}.stderr"
        with stderr_path.open("wb") as stderr:
            process = subprocess.Popen(
                command, env=environment, stdin=subprocess.DEVNULL, stdout=stderr, stderr=stderr
            )
        worker = WorkerProcess(instance_id, process, stderr_path)
        self.started.append(worker)
        return worker

    def cleanup(self) -> None:
        """SIGKILL whatever is still running (also SIGCONT, in case it was stopped)."""
        for worker in self.started:
            if worker.alive():
                worker.signal(signal.SIGCONT)
                worker.kill()


@contextlib.contextmanager
def launched(*args: Any, **kwargs: Any) -> Iterator[WorkerLauncher]:
    """A WorkerLauncher whose processes are all killed when the block exits."""
    launcher = WorkerLauncher(*args, **kwargs)
    try:
        yield launcher
    finally:
        launcher.cleanup()


# ---- probes --------------------------------------------------------------------------------------


def _retriable(error: KafkaException) -> bool:
    kafka_error = error.args[0]
    return bool(
        kafka_error.retriable()
        or kafka_error.code()
        in (
            KafkaError.NOT_COORDINATOR,
            KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
            KafkaError.COORDINATOR_NOT_AVAILABLE,
            KafkaError._TIMED_OUT,
            KafkaError._TRANSPORT,
            KafkaError._ALL_BROKERS_DOWN,
            # The probe's client has no metadata for the partition yet: right after a
            # broker restart (clean-clone run 12: `get_watermark_offsets` in the
            # 35-second bounce). The loops that ask are bounded, so a partition that
            # never appears still fails them.
            KafkaError._UNKNOWN_PARTITION,
            *LEADERLESS,
        )
    )


class GroupProbe:
    """Looks at a worker group from outside, with long-lived clients (cheap to poll).

    Committed offsets are read with read_uncommitted: that returns the last
    *committed* offsets at once instead of waiting for a transaction that still
    holds offsets for the group (KIP-447).
    """

    def __init__(self, bootstrap: str, config: WorkerConfig) -> None:
        self.config = config
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "logger": CLIENT_LOGGER,
                "group.id": config.application_id,
                "isolation.level": "read_uncommitted",
                "enable.auto.commit": False,
            }
        )
        self._admin = AdminClient({"bootstrap.servers": bootstrap, "logger": CLIENT_LOGGER})  # type: ignore[dict-item]
        metadata = self._consumer.list_topics(config.input_topic, timeout=30)
        self.partitions = sorted(metadata.topics[config.input_topic].partitions)

    def committed(self) -> dict[int, int] | None:
        """Committed input offset per partition, None while the coordinator is unavailable."""
        tps = [TopicPartition(self.config.input_topic, p) for p in self.partitions]
        try:
            result = self._consumer.committed(tps, timeout=10)
        except KafkaException as error:
            if _retriable(error):
                return None
            raise
        return {tp.partition: max(tp.offset, 0) for tp in result}

    def committed_total(self) -> int | None:
        committed = self.committed()
        return None if committed is None else sum(committed.values())

    def input_ends(self) -> dict[int, int] | None:
        try:
            return {
                p: self._consumer.get_watermark_offsets(
                    TopicPartition(self.config.input_topic, p), timeout=10
                )[1]
                for p in self.partitions
            }
        except KafkaException as error:
            if _retriable(error):
                return None
            raise

    def caught_up(self) -> bool:
        """True once the group has committed every input record produced so far."""
        ends = self.input_ends()
        committed = self.committed()
        if ends is None or committed is None:
            return False
        return all(committed.get(p, 0) >= end for p, end in ends.items())

    def wait_committed(self, at_least: int, timeout: float, what: str) -> int:
        seen: list[int] = []

        def reached() -> bool:
            total = self.committed_total()
            if total is not None:
                seen.append(total)
            return total is not None and total >= at_least

        wait_for(reached, timeout, what)
        return seen[-1]

    def wait_caught_up(self, timeout: float, what: str) -> None:
        wait_for(self.caught_up, timeout, what)

    def assignment(self) -> dict[str, set[int]]:
        """group.instance.id (or member id) -> assigned input partitions, as the group says."""
        return {name: partitions for name, (_, partitions) in self.members().items()}

    def members(self) -> dict[str, tuple[str, set[int]]]:
        """group.instance.id (or client.id, or member id) -> (member id, assigned input
        partitions). A static member's restart gets a new member id under the same
        instance id."""
        try:
            future = self._admin.describe_consumer_groups([self.config.application_id])[
                self.config.application_id
            ]
            description = future.result(timeout=10)
        except KafkaException as error:
            if _retriable(error):
                return {}
            raise
        found: dict[str, tuple[str, set[int]]] = {}
        for member in description.members:
            # A dynamic member is named by its client.id where the test set one.
            named = member.client_id if member.client_id != "rdkafka" else None
            name = member.group_instance_id or named or member.member_id
            _, partitions = found.setdefault(name, (member.member_id, set()))
            if member.assignment is not None:
                partitions.update(
                    tp.partition
                    for tp in member.assignment.topic_partitions
                    if tp.topic == self.config.input_topic
                )
        return found

    def last_stable_offsets(self, topic: str) -> dict[int, int] | None:
        """read_committed end (the LSO) of each partition of `topic`."""
        return self._list_offsets(topic, IsolationLevel.READ_COMMITTED)

    def high_watermarks(self, topic: str) -> dict[int, int] | None:
        return self._list_offsets(topic, IsolationLevel.READ_UNCOMMITTED)

    def _list_offsets(self, topic: str, isolation: IsolationLevel) -> dict[int, int] | None:
        latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
        request = {TopicPartition(topic, p): latest for p in self.partitions}
        try:
            futures = self._admin.list_offsets(request, isolation_level=isolation)
            return {
                tp.partition: future.result(timeout=10).offset for tp, future in futures.items()
            }
        except KafkaException as error:
            if _retriable(error):
                return None
            raise

    def close(self) -> None:
        self._consumer.close()


# ---- checking ------------------------------------------------------------------------------------


def verify_target(bootstrap: str, config: WorkerConfig, timeout_s: float = 120.0) -> VerifyTarget:
    return VerifyTarget(
        kafka=KafkaSettings(bootstrap),
        application_id=config.application_id,
        input_topic=config.input_topic,
        outbox_topic=config.outbox_topic,
        changelog_topic=config.changelog_topic,
        policy=config.policy,
        rejected_topic=config.rejected_topic,
        timeout_s=timeout_s,
    )


def check_verified(
    bootstrap: str, config: WorkerConfig, *, inputs: int, min_accepted: int
) -> VerifyReport:
    """Run `verify`; assert the invariant holds over every input and the totals are real."""
    report = verify(verify_target(bootstrap, config))
    totals = report.totals()
    examples = [f"p{r.partition}: {text}" for r in report.partitions for text in r.examples]
    assert report.ok(), f"verify failed: {totals}; examples: {examples[:20]}"
    assert totals["inputs"] == inputs, f"verify checked {totals['inputs']} inputs, not {inputs}"
    assert totals["expected"] >= min_accepted, totals
    assert totals["found"] == totals["expected"], totals
    return report


def check_stores_match_replay(
    bootstrap: str, config: WorkerConfig, directories: Sequence[StateDirectory]
) -> int:
    """Each partition's RocksDB store (in whichever directory holds it most recently)
    equals the replay's final state. Returns the number of watermarks compared."""
    inputs = read_all(bootstrap, config.input_topic)
    by_partition: dict[int, list[InputRecord]] = {}
    for record in inputs:
        by_partition.setdefault(record.partition, []).append(record)
    compared = 0
    for partition, records in sorted(by_partition.items()):
        _, expected = replay_partition(records, config.policy)
        stored = _freshest_store(directories, partition)
        assert stored == expected, (
            f"RocksDB of partition {partition} differs from the replay:"
            f" {len(stored)} stored, {len(expected)} expected,"
            f" {sum(1 for k in expected if stored.get(k) != expected[k])} differ"
        )
        compared += len(stored)
    return compared


def _freshest_store(directories: Sequence[StateDirectory], partition: int) -> dict[str, Watermark]:
    candidates = [d for d in directories if d.partition_path(partition).is_dir()]
    assert candidates, f"no RocksDB store for partition {partition}"
    best: tuple[int, dict[str, Watermark]] | None = None
    for directory in candidates:
        store = directory.open(partition)
        try:
            offset = store.changelog_next_offset() or 0
            if best is None or offset > best[0]:
                best = (offset, dict(store.items()))
        finally:
            store.close()
    assert best is not None
    return best[1]


def stable(probe: GroupProbe, topics: Sequence[str]) -> bool:
    """True when no open transaction holds back read_committed readers of `topics`
    (the last stable offset of every partition is its high watermark)."""
    for topic in topics:
        lso = probe.last_stable_offsets(topic)
        high = probe.high_watermarks(topic)
        if lso is None or high is None or any(lso[p] < high[p] for p in high):
            return False
    return True


def wait_stable(probe: GroupProbe, topics: Sequence[str], timeout: float) -> None:
    wait_for(lambda: stable(probe, topics), timeout, f"no open transaction on {list(topics)}")
