"""One system under measurement (a peer, or the Worker's own command) as an OS process.

The bench watches a system from outside, the same way for all of them: its consumer
group's committed offsets on the input topic say how far it is (a transaction's
offsets become visible when it commits, so "all committed" means every outbox record
is committed too); `/proc/<pid>/status` gives its peak RSS; its stdout JSON lines (the
peers' contract, README.md here) give the instant of its first record and its counts.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from confluent_kafka import Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.streams.tools.inspect import list_offsets
from seqgate_devtools.errors import SystemExited

__all__ = [
    "GroupProgress",
    "Launch",
    "SystemProcess",
    "wait_for_open_transactions",
    "wait_until_committed",
]

_STOP_TIMEOUT_S = 60.0
_LOG_TAIL = 6


@dataclass(frozen=True, slots=True)
class Launch:
    """Where one system reads, writes and keeps its state (the peers' command line)."""

    bootstrap_servers: str
    input_topic: str
    output_topic: str
    application_id: str
    state_dir: Path
    commit_interval_ms: int
    schema: Path
    # The same for every system: a killed member is noticed after this long (the
    # frameworks' defaults are 45 s to 60 s, which would make a torture mostly waiting).
    session_timeout_ms: int = 10_000

    @classmethod
    def named(
        cls,
        stem: str,
        *,
        bootstrap_servers: str,
        input_topic: str,
        workdir: Path,
        commit_interval_ms: int,
        schema: Path,
    ) -> Launch:
        """One system's run: outbox `<stem>-out`, application `<stem>-app`, state in
        `<workdir>/<stem>`."""
        return cls(
            bootstrap_servers=bootstrap_servers,
            input_topic=input_topic,
            output_topic=f"{stem}-out",
            application_id=f"{stem}-app",
            state_dir=workdir / stem,
            commit_interval_ms=commit_interval_ms,
            schema=schema,
        )

    def peer_args(self) -> list[str]:
        return [
            "--bootstrap-servers",
            self.bootstrap_servers,
            "--input-topic",
            self.input_topic,
            "--output-topic",
            self.output_topic,
            "--application-id",
            self.application_id,
            "--state-dir",
            str(self.state_dir),
            "--commit-interval-ms",
            str(self.commit_interval_ms),
            "--schema",
            str(self.schema),
            "--session-timeout-ms",
            str(self.session_timeout_ms),
        ]


@dataclass
class _Reported:
    first_record_ms: float | None = None
    counts: dict[str, int] = field(default_factory=dict)


class SystemProcess:
    """A started system; its stderr goes to `log`, its stdout JSON lines are read as they come."""

    def __init__(self, name: str, words: list[str], log: Path, env: dict[str, str]) -> None:
        self.name = name
        self.log = log
        self._reported = _Reported()
        self._peak_rss = 0
        with log.open("ab") as sink:
            self._process = subprocess.Popen(
                words,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=sink,
                env={**os.environ, **env},
                start_new_session=True,  # a signal for the system, not for the bench
            )
        assert self._process.stdout is not None
        self._reader = threading.Thread(
            target=self._read, args=(self._process.stdout,), daemon=True
        )
        self._reader.start()

    def _read(self, stdout: IO[bytes]) -> None:
        for line in stdout:
            with contextlib.suppress(ValueError):
                report: Any = json.loads(line)
                if not isinstance(report, dict):
                    continue
                if "first_record_ms" in report and self._reported.first_record_ms is None:
                    self._reported.first_record_ms = float(report["first_record_ms"])
                if "accepted" in report:
                    self._reported.counts = {k: int(v) for k, v in report.items()}

    @property
    def first_record_ms(self) -> float | None:
        return self._reported.first_record_ms

    @property
    def counts(self) -> dict[str, int]:
        return dict(self._reported.counts)

    @property
    def peak_rss_bytes(self) -> int:
        return max(self._peak_rss, self._read_rss())

    def _read_rss(self) -> int:
        """VmHWM of the process, while it lives (0 after)."""
        try:
            with open(f"/proc/{self._process.pid}/status", encoding="ascii") as status:
                for line in status:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def check_alive(self) -> None:
        self._peak_rss = max(self._peak_rss, self._read_rss())
        code = self._process.poll()
        if code is not None:
            raise SystemExited(f"{self.name} exited with {code}: {self.log_tail()}")

    def log_tail(self) -> str:
        try:
            lines = self.log.read_text(errors="replace").strip().splitlines()
        except OSError:
            return "(no log)"
        return " | ".join(lines[-_LOG_TAIL:]) or "(empty log)"

    def kill(self) -> None:
        """SIGKILL, as a crash or an OOM kill would end it."""
        self._peak_rss = max(self._peak_rss, self._read_rss())
        with contextlib.suppress(ProcessLookupError):
            self._process.send_signal(signal.SIGKILL)
        self._process.wait()
        self._reader.join(5)

    def stop(self) -> int:
        """SIGTERM, then wait for a clean end (SIGKILL after a minute); the exit code."""
        self._peak_rss = max(self._peak_rss, self._read_rss())
        with contextlib.suppress(ProcessLookupError):
            self._process.send_signal(signal.SIGTERM)
        try:
            code = self._process.wait(_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.kill()
            return -int(signal.SIGKILL)
        self._reader.join(5)
        return code


class GroupProgress:
    """How many input records a consumer group has committed, against the input's end."""

    def __init__(self, kafka: KafkaSettings, group: str, topic: str, partitions: int) -> None:
        # A consumer that never subscribes does not join the group: it only asks
        # the group coordinator for the committed offsets.
        self._consumer = Consumer(client_config(kafka, **{"group.id": group}))
        self._partitions = [TopicPartition(topic, p) for p in range(partitions)]
        self._timeout = kafka.timeout_s
        ends = [
            self._consumer.get_watermark_offsets(tp, self._timeout)[1] for tp in self._partitions
        ]
        self.end = sum(ends)
        self._last = 0

    def committed(self) -> int:
        """The committed total; the last one seen while the group coordinator does not
        answer (it may be busy for a while after a member was killed)."""
        try:
            offsets = self._consumer.committed(self._partitions, timeout=self._timeout)
        except KafkaException:
            return self._last
        self._last = sum(max(0, tp.offset) for tp in offsets)
        return self._last

    def close(self) -> None:
        self._consumer.close()


def wait_until_committed(
    system: SystemProcess, group: GroupProgress, target: int, timeout: float, poll_s: float = 0.05
) -> float:
    """Wait until `group` has committed `target` records; the wall-clock instant (epoch
    seconds) it was first seen. Raises SystemExited if the system dies, TimeoutError
    after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        system.check_alive()
        if group.committed() >= target:
            return time.time()
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{system.name} committed {group.committed():,}/{target:,} records"
                f" in {timeout:.0f} s: {system.log_tail()}"
            )
        time.sleep(poll_s)


def _open_transaction_lag(admin: AdminClient, topic: str, partitions: int) -> int:
    """Records of `topic` not yet visible to read_committed readers: between each
    partition's last stable offset and its end."""
    latest = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    ends = [
        sum(
            offset
            for offset, _ in list_offsets(
                admin, topic, range(partitions), latest, committed_only=committed
            ).values()
        )
        for committed in (False, True)
    ]
    return ends[0] - ends[1]


def wait_for_open_transactions(
    kafka: KafkaSettings, topic: str, partitions: int, timeout: float, poll_s: float = 0.5
) -> float:
    """Wait until no transaction is open on `topic` (a killed producer's transaction stays
    open until a restart with the same transactional id fences it, or until the broker
    aborts it after its transaction timeout); the seconds waited. A read_committed reader
    stops at the first open transaction, so reading before this would take the records
    behind it for missing. TimeoutError after `timeout` seconds."""
    admin = AdminClient(client_config(kafka))
    started = time.monotonic()
    while _open_transaction_lag(admin, topic, partitions) > 0:
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"a transaction on {topic} stayed open for {timeout:.0f} s")
        time.sleep(poll_s)
    return time.monotonic() - started
