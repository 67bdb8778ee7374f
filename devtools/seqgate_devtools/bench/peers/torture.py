"""`seqgate bench --peer-torture`: the Worker and each peer through one kill -9 schedule.

Every system reads the same pre-loaded input into an outbox of its own. The schedule
is drawn once from the seed, so every system gets the same one: kill i lands once the
system's group has committed a drawn share of the input (and something since its last
start), plus a drawn delay of up to 300 ms, so that each kill lands while it is
processing, at the same place in the input for every system, whatever its speed.
After each SIGKILL the system is started again at once with the same arguments. After
the last kill it runs to the end of the input and is stopped with SIGTERM; once no
transaction is open on its outbox, the outbox is read with `read_committed` and judged
by the oracle: missing, duplicated and unexpected records.
"""

from __future__ import annotations

import math
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import TopicSpec, create_topics, pipeline_topics
from seqgate_devtools.bench.peers.catalog import PeerKind
from seqgate_devtools.bench.peers.oracle import (
    EventName,
    Verdict,
    event_id_of_event,
    event_id_of_outbox,
    judge,
    read_outbox,
)
from seqgate_devtools.bench.peers.process import (
    GroupProgress,
    Launch,
    SystemProcess,
    wait_for_open_transactions,
    wait_until_committed,
)
from seqgate_devtools.errors import PeerUnavailable, SystemExited

__all__ = [
    "Kill",
    "TortureResult",
    "TortureSystem",
    "kill_schedule",
    "torture",
    "torture_table",
]

Progress = Callable[[str], None]
# A killed system's open transaction holds its outbox's readers until the restart fences
# it or the broker aborts it at its transaction timeout: wait longer than any peer's.
_OUTBOX_READ_TIMEOUT_S = 180.0


@dataclass(frozen=True, slots=True)
class Kill:
    share: float  # of the input committed before this kill
    delay_s: float  # then this much longer

    def describe(self) -> str:
        return f"{self.share:.0%}+{self.delay_s * 1000:.0f}ms"


def kill_schedule(seed: int, kills: int) -> list[Kill]:
    """Where each SIGKILL lands, the same for every system."""
    rng = random.Random(seed)
    shares = sorted(rng.uniform(0.05, 0.85) for _ in range(kills))
    return [Kill(round(share, 3), round(rng.uniform(0.0, 0.3), 3)) for share in shares]


@dataclass(frozen=True, slots=True)
class TortureSystem:
    """A system to torture: how it starts, and how its outbox names an event."""

    name: str
    framework: str
    command: Callable[[Launch], list[str]]
    event_id: Callable[[bytes], str]
    extra_topics: Callable[[Launch, int], list[TopicSpec]]


@dataclass(frozen=True, slots=True)
class TortureResult:
    name: str
    framework: str
    kills: int = 0
    seconds: float = 0.0
    verdict: Verdict | None = None
    problem: str | None = None

    def as_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "framework": self.framework,
            "kills": self.kills,
            "seconds": round(self.seconds, 1),
            "verdict": self.verdict.as_dict() if self.verdict else None,
            "problem": self.problem,
        }


def worker_system() -> TortureSystem:
    """The Worker, as an operator runs it: `seqgate worker`, one fixed instance id."""

    def command(launch: Launch) -> list[str]:
        return [
            sys.executable,
            "-m",
            "seqgate.cli",
            "worker",
            "--bootstrap-servers",
            launch.bootstrap_servers,
            "--input-topic",
            launch.input_topic,
            "--outbox-topic",
            launch.output_topic,
            "--rejected-topic",
            f"{launch.application_id}-rejected",
            "--application-id",
            launch.application_id,
            "--instance-id",
            "torture-0",
            "--state-dir",
            str(launch.state_dir),
            "--commit-interval-ms",
            str(launch.commit_interval_ms),
            "--session-timeout-ms",
            str(launch.session_timeout_ms),
        ]

    def topics(launch: Launch, partitions: int) -> list[TopicSpec]:
        specs = pipeline_topics(
            input_topic=launch.input_topic,
            outbox_topic=launch.output_topic,
            rejected_topic=f"{launch.application_id}-rejected",
            application_id=launch.application_id,
            partitions=partitions,
        )
        return [spec for spec in specs if spec.name != launch.input_topic]

    return TortureSystem("worker", "seqgate Worker", command, event_id_of_outbox, topics)


def peer_system(kind: PeerKind, progress: Progress) -> TortureSystem | str:
    """A peer as a system to torture, or why it cannot run here."""
    try:
        words = kind.command(progress)
    except PeerUnavailable as error:
        return str(error)
    return TortureSystem(
        kind.name,
        kind.framework,
        lambda launch: words + launch.peer_args(),
        event_id_of_event,
        lambda launch, partitions: [TopicSpec(launch.output_topic, partitions)],
    )


@dataclass(frozen=True, slots=True)
class TortureRun:
    kafka: KafkaSettings
    input_topic: str
    partitions: int
    commit_interval_ms: int
    schema: Path
    workdir: Path
    prefix: str
    expected: Counter[EventName]
    schedule: Sequence[Kill]
    timeout_s: float
    progress: Progress


class _Runs:
    """The successive processes of one system under torture."""

    def __init__(self, system: TortureSystem, words: list[str], log: Path) -> None:
        self._system, self._words, self._log = system, words, log
        self._current: SystemProcess | None = None
        self.kills = 0
        self.late = 0  # kills after the system had already finished the input

    def start(self) -> SystemProcess:
        self._current = SystemProcess(self._system.name, self._words, self._log, {})
        return self._current

    def killed(self, *, finished: bool) -> None:
        self.kills += 1
        self.late += finished
        self._current = None

    def kill_current(self) -> None:
        if self._current is not None:
            self._current.kill()
            self._current = None


def torture(run: TortureRun, system: TortureSystem) -> TortureResult:
    """`system` through the run's kill schedule, then to the end; the oracle's verdict.
    Whatever goes wrong is the system's result, never the torture's end."""
    try:
        return _torture(run, system)
    except Exception as error:  # a system must never end the torture of the others
        problem = f"failed: {type(error).__name__}: {error}"
        return TortureResult(system.name, system.framework, problem=problem)


def _torture(run: TortureRun, system: TortureSystem) -> TortureResult:
    stem = f"{run.prefix}-torture-{system.name}"
    launch = Launch.named(
        stem,
        bootstrap_servers=run.kafka.bootstrap_servers,
        input_topic=run.input_topic,
        workdir=run.workdir,
        commit_interval_ms=run.commit_interval_ms,
        schema=run.schema,
    )
    create_topics(
        AdminClient(client_config(run.kafka)), system.extra_topics(launch, run.partitions)
    )
    launch.state_dir.mkdir(parents=True, exist_ok=True)
    words = system.command(launch)
    group = GroupProgress(run.kafka, launch.application_id, run.input_topic, run.partitions)
    started = time.monotonic()
    runs = _Runs(system, words, run.workdir / f"{stem}.log")
    try:
        for kill in run.schedule:
            process = runs.start()
            target = max(math.ceil(kill.share * group.end), group.committed() + 1)
            wait_until_committed(process, group, target, run.timeout_s)
            time.sleep(kill.delay_s)
            process.kill()
            at = group.committed()
            runs.killed(finished=at >= group.end)
            run.progress(
                f"torture {system.framework}: kill -9 #{runs.kills} at {at:,}/{group.end:,}"
            )
        process = runs.start()
        wait_until_committed(process, group, group.end, run.timeout_s)
        code = process.stop()
    except (SystemExited, TimeoutError) as error:
        runs.kill_current()
        return TortureResult(
            system.name,
            system.framework,
            runs.kills,
            time.monotonic() - started,
            problem=f"failed: {error}",
        )
    finally:
        group.close()
    waited = wait_for_open_transactions(
        run.kafka, launch.output_topic, run.partitions, _OUTBOX_READ_TIMEOUT_S
    )
    run.progress(f"torture {system.framework}: outbox settled after {waited:.1f} s")
    found = read_outbox(
        run.kafka,
        launch.output_topic,
        run.partitions,
        system.event_id,
        timeout=_OUTBOX_READ_TIMEOUT_S,
    )
    problems = [f"exit {code} on SIGTERM"] * (code != 0)
    late = runs.late
    problems += [f"{late} kills landed after the end: give it more --events"] * (late > 0)
    problem = "; ".join(problems) or None
    seconds = time.monotonic() - started
    return TortureResult(
        system.name, system.framework, runs.kills, seconds, judge(run.expected, found), problem
    )


def _brief(problem: str) -> str:
    """A failure's first words and the last line of its log (the exception), not the
    whole tail of the log the report keeps."""
    if " | " not in problem:
        return problem
    head, *_, last = problem.split(" | ")
    cut = head.find(": ", head.find("exited with"))
    return f"{head[:cut]}: {last.strip()}" if cut > 0 else f"{head} … {last.strip()}"


def torture_table(results: Sequence[TortureResult], schedule: Sequence[Kill]) -> str:
    delays = ", ".join(kill.describe() for kill in schedule)
    rows = [("system", "kill -9", "expected", "found", "missing", "duplicated", "unexpected", "")]
    for result in results:
        verdict = result.verdict
        if verdict is None:
            note = _brief(result.problem or "")
            rows.append((result.framework, str(result.kills), "-", "-", "-", "-", "-", note))
            continue
        note = (
            "exact"
            if verdict.exact and result.problem is None
            else ("; ".join(filter(None, [result.problem, *verdict.examples])))
        )
        rows.append(
            (
                result.framework,
                str(result.kills),
                f"{verdict.expected:,}",
                f"{verdict.found:,}",
                f"{verdict.missing:,}",
                f"{verdict.duplicated:,}",
                f"{verdict.unexpected:,}",
                note,
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows
    ]
    lines.append(f"kill -9 once this share of the input was committed, plus: {delays}")
    return "\n".join(lines)
