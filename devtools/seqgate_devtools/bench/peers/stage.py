"""One peer's round of `seqgate bench --peers`: the same pre-loaded input, its own outbox.

The peer starts with a fresh application id (fresh group, fresh state); the bench
waits until its group has committed the whole input, notes its peak RSS, stops it
with SIGTERM and judges its outbox with the oracle. Its throughput runs from the
first record it reports to the moment its last offsets were seen committed (polled
every 50 ms, so a rate is at most 50 ms pessimistic). A peer that cannot be made
ready, or that dies or stalls, is reported with the reason; it never ends the bench.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka.admin import AdminClient

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import TopicSpec, create_topics
from seqgate_devtools.bench.peers.catalog import PeerKind
from seqgate_devtools.bench.peers.oracle import (
    EventName,
    Verdict,
    event_id_of_event,
    judge,
    read_outbox,
)
from seqgate_devtools.bench.peers.process import (
    GroupProgress,
    Launch,
    SystemProcess,
    wait_until_committed,
)
from seqgate_devtools.bench.report import Throughput
from seqgate_devtools.errors import PeerUnavailable, SystemExited

__all__ = ["PeerRound", "PeerStage", "peers_unusable_reason"]

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class PeerRound:
    """What one round of one peer measured, or why it has no figures."""

    name: str
    framework: str
    throughput: Throughput | None = None
    peak_rss_bytes: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    verdict: Verdict | None = None
    problem: str | None = None  # "not run: ..." or "failed: ..."

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "framework": self.framework,
            "throughput": self.throughput.as_dict() if self.throughput else None,
            "peak_rss_bytes": self.peak_rss_bytes,
            "counts": self.counts,
            "verdict": self.verdict.as_dict() if self.verdict else None,
            "problem": self.problem,
        }


def peers_unusable_reason(kafka: KafkaSettings) -> str | None:
    """Why the peers cannot run against `kafka` (they take a PLAINTEXT address only)."""
    if kafka.properties:
        names = ", ".join(sorted(kafka.properties))
        return f"the peers take a PLAINTEXT bootstrap address only, not client properties ({names})"
    return None


@dataclass
class PeerStage:
    """Runs peers on one pre-loaded input topic; prepares each peer once."""

    kafka: KafkaSettings
    input_topic: str
    partitions: int
    commit_interval_ms: int
    schema: Path
    workdir: Path
    expected: Counter[EventName]
    expected_counts: dict[str, int]
    timeout_s: float
    progress: Progress
    _commands: dict[str, list[str] | str] = field(default_factory=dict)

    def command(self, kind: PeerKind) -> list[str] | str:
        """The peer's command, or why it cannot run (asked once per bench)."""
        if kind.name not in self._commands:
            unusable = peers_unusable_reason(self.kafka)
            if unusable is not None:
                self._commands[kind.name] = unusable
            else:
                try:
                    self._commands[kind.name] = kind.command(self.progress)
                except PeerUnavailable as error:
                    self._commands[kind.name] = str(error)
        return self._commands[kind.name]

    def run(self, kind: PeerKind, stem: str) -> PeerRound:
        """One round of `kind`; whatever goes wrong is the round's problem, never the
        bench's end (the reason is kept for the report)."""
        try:
            return self._run(kind, stem)
        except Exception as error:  # a peer must never crash the bench
            return PeerRound(
                kind.name, kind.framework, problem=f"failed: {type(error).__name__}: {error}"
            )

    def _run(self, kind: PeerKind, stem: str) -> PeerRound:
        command = self.command(kind)
        if isinstance(command, str):
            return PeerRound(kind.name, kind.framework, problem=f"not run: {command}")
        launch = Launch.named(
            stem,
            bootstrap_servers=self.kafka.bootstrap_servers,
            input_topic=self.input_topic,
            workdir=self.workdir,
            commit_interval_ms=self.commit_interval_ms,
            schema=self.schema,
        )
        admin = AdminClient(client_config(self.kafka))
        create_topics(admin, [TopicSpec(launch.output_topic, self.partitions)])
        launch.state_dir.mkdir(parents=True, exist_ok=True)
        system = SystemProcess(
            kind.name, command + launch.peer_args(), self.workdir / f"{stem}.log", {}
        )
        group = GroupProgress(self.kafka, launch.application_id, self.input_topic, self.partitions)
        try:
            done_s = wait_until_committed(system, group, group.end, self.timeout_s)
            rss = system.peak_rss_bytes
        except (SystemExited, TimeoutError) as error:
            system.stop()
            return PeerRound(kind.name, kind.framework, problem=f"failed: {error}")
        finally:
            group.close()
        code = system.stop()
        first_ms = system.first_record_ms
        if first_ms is None:
            return PeerRound(kind.name, kind.framework, problem="failed: no first_record_ms line")
        found = read_outbox(self.kafka, launch.output_topic, self.partitions, event_id_of_event)
        problem = None if code == 0 else f"failed: exit {code} on SIGTERM: {system.log_tail()}"
        return PeerRound(
            kind.name,
            kind.framework,
            throughput=Throughput(group.end, done_s - first_ms / 1000),
            peak_rss_bytes=rss,
            counts=system.counts,
            verdict=judge(self.expected, found),
            problem=problem,
        )
