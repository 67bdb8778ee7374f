"""`seqgate bench --failover`: the workers it runs, and the group it watches from outside.

Each worker is a real `seqgate worker` process with a state directory of its own, as
separate pods would have; its stderr (JSON log lines) goes to a file that the stage
reads as it grows. The group is looked at with an admin client (members and their
assignments) and a consumer that never joins it (committed offsets).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate_devtools.bench.failover_report import log_entry
from seqgate_devtools.errors import FailoverError

__all__ = ["FailoverError", "GroupWatch", "WorkerPlan", "WorkerProcess", "wait_until"]

_POLL_S = 0.05  # how often a wait looks again: the figures are read from the logs, not here
_STOP_S = 60.0


# ---- the worker processes ------------------------------------------------------------------


class WorkerLog:
    """A worker's stderr file, read as it grows: its JSON lines, parsed once each."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.entries: list[dict[str, Any]] = []
        self._offset = 0
        self._partial = b""

    def read(self) -> list[dict[str, Any]]:
        """Every JSON line so far (a line still being written waits for its end)."""
        try:
            with self.path.open("rb") as file:
                file.seek(self._offset)
                chunk = file.read()
        except FileNotFoundError:
            return self.entries
        self._offset += len(chunk)
        *lines, self._partial = (self._partial + chunk).split(b"\n")
        for line in lines:
            entry = log_entry(line.decode("utf-8", errors="replace"))
            if entry is not None:
                self.entries.append(entry)
        return self.entries

    def tail(self, chars: int = 3000) -> str:
        try:
            return self.path.read_text(errors="replace")[-chars:]
        except FileNotFoundError:
            return ""


@dataclass
class WorkerProcess:
    instance_id: str
    process: subprocess.Popen[bytes]
    log: WorkerLog
    started_at: float = field(default_factory=time.monotonic)

    def alive(self) -> bool:
        return self.process.poll() is None

    def check_alive(self) -> None:
        """Raise, with the end of its log, if the worker has exited."""
        code = self.process.poll()
        if code is not None:
            raise FailoverError(
                f"worker {self.instance_id} exited with {code}; its log ends:\n{self.log.tail()}"
            )

    def send(self, signum: int) -> None:
        self.process.send_signal(signum)

    def stop(self, timeout_s: float = _STOP_S) -> None:
        """SIGTERM and wait; SIGKILL if it is still there after `timeout_s` (cleanup must
        not hang on a worker that cannot finish its commit)."""
        if self.alive():
            self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(30)


@dataclass(frozen=True, slots=True)
class WorkerPlan:
    """What every worker of one scenario is started with."""

    kafka: KafkaSettings
    application_id: str
    input_topic: str
    outbox_topic: str
    rejected_topic: str
    standby_replicas: int
    session_timeout_ms: int
    transaction_timeout_ms: int
    membership: str = "static"  # or "dynamic": the worker's --membership
    rebalance: str = "cooperative"  # or "eager": the worker's --rebalance

    def command(self, instance_id: str, state_dir: Path) -> list[str]:
        return [
            sys.executable,
            "-m",
            "seqgate.cli",
            "--log-level",
            "info",  # the "partition serving" and "standby caught up" lines are info
            "worker",
            "--bootstrap-servers",
            self.kafka.bootstrap_servers,
            "--application-id",
            self.application_id,
            "--instance-id",
            instance_id,
            "--input-topic",
            self.input_topic,
            "--outbox-topic",
            self.outbox_topic,
            "--rejected-topic",
            self.rejected_topic,
            "--state-dir",
            str(state_dir),
            "--session-timeout-ms",
            str(self.session_timeout_ms),
            "--transaction-timeout-ms",
            str(self.transaction_timeout_ms),
            "--standby-replicas",
            str(self.standby_replicas),
            "--membership",
            self.membership,
            "--rebalance",
            self.rebalance,
            # A dynamic member has no group.instance.id: its client.id names it in the
            # group's description instead (GroupWatch.assignment).
            "-X",
            f"client.id={instance_id}",
        ]

    def start(self, instance_id: str, workdir: Path, *, commit_kill: bool = False) -> WorkerProcess:
        """Start one worker; its state under workdir/<instance id>/state, its log beside it.
        With `commit_kill` it kills itself inside its next commit once `commit_kill_file`
        exists (the worker's own fault point, between sending its offsets and committing)."""
        home = workdir / instance_id
        home.mkdir(parents=True, exist_ok=True)
        log_path = home / "stderr.jsonl"
        # The client properties go in the environment, not on the command line, where
        # other users could read a password (as the bench's stage processes do).
        environment = {**os.environ, **self.kafka.environment()}
        if commit_kill:
            environment["SEQGATE_FAULT"] = "kill:before_commit"
            environment["SEQGATE_FAULT_ARMED"] = str(commit_kill_file(workdir, instance_id))
        with log_path.open("wb") as log_file:
            process = subprocess.Popen(
                self.command(instance_id, home / "state"),
                env=environment,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=log_file,
            )
        return WorkerProcess(instance_id, process, WorkerLog(log_path))


def commit_kill_file(workdir: Path, instance_id: str) -> Path:
    """The file whose creation arms a worker's kill inside its next commit."""
    return workdir / instance_id / "kill-inside-the-next-commit"


def wait_until(
    condition: Callable[[], bool],
    timeout_s: float,
    what: str,
    workers: Sequence[WorkerProcess] = (),
) -> float:
    """Poll `condition` until true; the seconds it took. Raise, naming `what`, after
    `timeout_s`, or at once when one of `workers` exits."""
    started = time.monotonic()
    deadline = started + timeout_s
    while not condition():
        for worker in workers:
            worker.check_alive()
        if time.monotonic() > deadline:
            raise FailoverError(f"timed out after {timeout_s:.0f} s waiting for {what}")
        time.sleep(_POLL_S)
    return time.monotonic() - started


# ---- the group, from outside ---------------------------------------------------------------


# What a young group or a broker that has just started answers for a while: a wait
# looks again rather than failing (every wait is bounded).
_PASSING = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.GROUP_ID_NOT_FOUND,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._UNKNOWN_PARTITION,
    }
)


def _retriable(error: KafkaException) -> bool:
    kafka_error = error.args[0]
    return bool(kafka_error.retriable() or kafka_error.code() in _PASSING)


class GroupWatch:
    """The members of one worker group and its committed offsets, as the broker says.

    Committed offsets are read with read_uncommitted: that returns the last committed
    offsets at once instead of waiting for a transaction still holding offsets for the
    group (KIP-447)."""

    def __init__(self, kafka: KafkaSettings, group: str, topic: str, partitions: int) -> None:
        self.group, self.topic = group, topic
        self._partitions = [TopicPartition(topic, p) for p in range(partitions)]
        self._admin = AdminClient(client_config(kafka))
        self._consumer = Consumer(
            client_config(
                kafka,
                **{
                    "group.id": group,
                    "enable.auto.commit": False,
                    "isolation.level": "read_uncommitted",
                },
            )
        )

    def assignment(self) -> dict[str, set[int]]:
        """Instance id -> its partitions of the input topic; empty while the group's
        coordinator does not answer. A static member carries its instance id as
        group.instance.id, a dynamic one as its client.id (WorkerPlan.command)."""
        try:
            future = self._admin.describe_consumer_groups([self.group])[self.group]
            description = future.result(timeout=10)
        except KafkaException as error:
            if _retriable(error):
                return {}
            raise
        members: dict[str, set[int]] = {}
        for member in description.members:
            name = member.group_instance_id or member.client_id or member.member_id
            owned = members.setdefault(name, set())
            if member.assignment is not None:
                owned.update(
                    tp.partition
                    for tp in member.assignment.topic_partitions
                    if tp.topic == self.topic
                )
        return members

    def settled(self, members: int) -> bool:
        """`members` members, each owning a partition, and every partition owned."""
        assignment = self.assignment()
        owned = set().union(*assignment.values()) if assignment else set()
        return (
            len(assignment) == members
            and all(assignment.values())
            and len(owned) == len(self._partitions)
        )

    def caught_up(self) -> bool:
        """The group has committed every input record produced so far."""
        try:
            committed = self._consumer.committed(self._partitions, timeout=10)
            ends = [
                self._consumer.get_watermark_offsets(tp, timeout=10)[1] for tp in self._partitions
            ]
        except KafkaException as error:
            if _retriable(error):
                return False
            raise
        # An empty partition has nothing to commit (its committed offset stays unset).
        return all(end == 0 or tp.offset >= end for tp, end in zip(committed, ends, strict=True))

    def close(self) -> None:
        self._consumer.close()
