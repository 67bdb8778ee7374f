"""`seqgate bench --failover`: how long a partition is unserved when its worker goes away.

Per scenario (K identities, S standby replicas, kill or graceful stop), on topics and an
application id of its own:

1. pre-load K distinct identities, so that the changelog holds K watermarks;
2. start one worker (`seqgate worker`, with a state directory of its own) and wait until
   it has committed the whole pre-load; then a second, and wait until both own partitions,
   everything is committed and, with S=1, each has logged its standbys caught up;
3. offer a steady load of new events for random identities;
4. SIGKILL (or SIGTERM) the worker owning the most partitions (of an even split, the
   first one), noting the instant; or, for `commit-kill`, have it kill itself between
   sending its input offsets to its transaction and committing it (the worker's fault
   point, armed by a file), noting the instant it is seen dead;
5. read the survivor's "partition serving" line of each partition it took over, and time
   detection, takeover and total from them (`failover_report`).

Every wait is bounded and names what did not happen. Topics are deleted after each
scenario unless --keep-topics.
"""

from __future__ import annotations

import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import create_topics, pipeline_topics
from seqgate_devtools.bench.failover_group import (
    GroupWatch,
    WorkerPlan,
    WorkerProcess,
    commit_kill_file,
    wait_until,
)
from seqgate_devtools.bench.failover_load import OfferedLoad
from seqgate_devtools.bench.failover_report import (
    MODES,
    Move,
    Scenario,
    ScenarioResult,
    Serving,
    choose_victim,
    failover_json,
    moves_after,
    serving_of,
    standby_caught_up,
)
from seqgate_devtools.bench.machine import environment
from seqgate_devtools.bench.runner import delete_topics, preload, progress
from seqgate_devtools.bench.workload import WorkloadSpec, build_workload
from seqgate_devtools.errors import FailoverError

__all__ = ["FailoverError", "FailoverRun", "FailoverSettings", "run_failover"]

_WORKERS = ("w0", "w1")
_SIGNALS = {"kill": signal.SIGKILL, "graceful": signal.SIGTERM}
_VICTIM_EXIT_S = 60.0
# After the moves are served: how long the survivor's own partitions may take to be served
# again when the rebalance stopped them (eager), before they count as never stopped.
_OWN_WINDOW_S = 3.0


@dataclass(frozen=True, slots=True)
class FailoverSettings:
    identities: tuple[int, ...] = (100_000, 1_000_000)
    partitions: int = 6
    offered_rate: float = 2_000.0  # events/s during the kill and the takeover
    standby_replicas: tuple[int, ...] = (0, 1)
    modes: tuple[str, ...] = MODES
    session_timeout_ms: int = 6_000
    transaction_timeout_ms: int = 10_000
    # The load runs this long before the kill, so the survivor is mid-stream, not idle.
    settle_s: float = 2.0
    seed: int = 7
    keep_topics: bool = False
    # The workers' --membership: static (their default) keeps a stopped worker's partitions
    # for the session timeout, since librdkafka sends no LeaveGroup for a static member.
    membership: str = "static"
    # The workers' --rebalance: eager stops the survivor's own partitions at the takeover too.
    rebalance: str = "cooperative"

    def scenarios(self) -> list[Scenario]:
        return [
            Scenario(k, s, mode)
            for k in self.identities
            for s in self.standby_replicas
            for mode in self.modes
        ]

    def ready_timeout_s(self, identities: int) -> float:
        """Workers started -> pre-load committed and standbys caught up (about 2,000
        identities a second at worst, both restores and processing included)."""
        return 120 + identities / 2_000

    def takeover_timeout_s(self, identities: int) -> float:
        """Kill -> every moved partition serving, at worst: the session timeout; the
        victim's open transaction, which holds its offsets until it ends (a static
        survivor ends it at once, worker/handover.py; with dynamic members the broker
        aborts it at the transaction timeout, plus up to as long again before its check
        runs); then a cold restore of the victim's share."""
        seconds = (self.session_timeout_ms + 2 * self.transaction_timeout_ms) / 1000
        return seconds + 60 + identities / 5_000

    def as_dict(self) -> dict[str, Any]:
        return {
            "identities": list(self.identities),
            "partitions": self.partitions,
            "offered_rate": self.offered_rate,
            "standby_replicas": list(self.standby_replicas),
            "modes": list(self.modes),
            "session_timeout_ms": self.session_timeout_ms,
            "transaction_timeout_ms": self.transaction_timeout_ms,
            "membership": self.membership,
            "rebalance": self.rebalance,
            "settle_s": self.settle_s,
            "seed": self.seed,
            "ready": "w0 alone committed the pre-load, then w1 joined; both logged"
            " 'partition serving' for every partition they own (under the load); with"
            " standbys, each logged 'standby caught up' for every partition it does not own",
        }


@dataclass(frozen=True, slots=True)
class FailoverRun:
    settings: FailoverSettings
    results: list[ScenarioResult]
    environment: dict[str, Any]
    total_s: float

    def as_json(self) -> dict[str, Any]:
        settings = {**self.settings.as_dict(), "total_seconds": round(self.total_s, 1)}
        return failover_json(self.results, settings, self.environment)


def run_failover(
    kafka: KafkaSettings, settings: FailoverSettings, kafka_version: str | None
) -> FailoverRun:
    """Every scenario of `settings`, in order; the pre-load of each K is built once."""
    started = time.monotonic()
    admin = AdminClient(client_config(kafka))
    results: list[ScenarioResult] = []
    for identities in settings.identities:
        progress(f"failover: building {identities:,} identities to pre-load")
        records = _preload_records(identities, settings)
        for scenario in settings.scenarios():
            if scenario.identities != identities:
                continue
            progress(f"failover {scenario.name}: starting")
            result = _run_scenario(kafka, admin, scenario, records, settings)
            progress(f"failover {scenario.name}: {_outcome(result)}")
            results.append(result)
    return FailoverRun(settings, results, environment(kafka_version), time.monotonic() - started)


def _preload_records(identities: int, settings: FailoverSettings) -> list[tuple[bytes, bytes]]:
    """One first write of each of `identities` objects (no redelivery, no reordering:
    every record is accepted, so the changelog ends with exactly K watermarks)."""
    spec = WorkloadSpec(identities, identities, settings.partitions, 0.0, 0.0, settings.seed)
    return build_workload(spec).records


def _outcome(result: ScenarioResult) -> str:
    takeover, total = result.spread("takeover_s"), result.spread("total_s")
    return (
        f"{len(result.moves)} partitions moved from {result.victim}; takeover max"
        f" {takeover['max']:.2f} s, total max {total['max']:.2f} s"
    )


def _run_scenario(
    kafka: KafkaSettings,
    admin: AdminClient,
    scenario: Scenario,
    records: list[tuple[bytes, bytes]],
    settings: FailoverSettings,
) -> ScenarioResult:
    prefix = f"seqgate-bench-{uuid.uuid4().hex[:8]}-failover"
    plan = WorkerPlan(
        kafka=kafka,
        application_id=f"{prefix}-app",
        input_topic=f"{prefix}-in",
        outbox_topic=f"{prefix}-outbox",
        rejected_topic=f"{prefix}-rejected",
        standby_replicas=scenario.standby_replicas,
        session_timeout_ms=settings.session_timeout_ms,
        transaction_timeout_ms=settings.transaction_timeout_ms,
        membership=settings.membership,
        rebalance=settings.rebalance,
    )
    specs = pipeline_topics(
        input_topic=plan.input_topic,
        outbox_topic=plan.outbox_topic,
        rejected_topic=plan.rejected_topic,
        application_id=plan.application_id,
        partitions=settings.partitions,
    )
    create_topics(admin, specs)
    try:
        progress(f"failover {scenario.name}: pre-loading {len(records):,} records")
        preload(kafka, plan.input_topic, records)
        with tempfile.TemporaryDirectory(prefix="seqgate-failover-") as tmp:
            return _Takeover(plan, scenario, settings, Path(tmp)).run()
    finally:
        if not settings.keep_topics:
            delete_topics(admin, prefix)


@dataclass
class _Takeover:
    """One scenario's workers, from their start to the survivor serving everything."""

    plan: WorkerPlan
    scenario: Scenario
    settings: FailoverSettings
    workdir: Path
    workers: list[WorkerProcess] = field(default_factory=list)

    def run(self) -> ScenarioResult:
        with ExitStack() as stack:
            stack.callback(self._stop_workers)
            watch = GroupWatch(
                self.plan.kafka,
                self.plan.application_id,
                self.plan.input_topic,
                self.settings.partitions,
            )
            stack.callback(watch.close)
            ready_s = self._start_workers(watch)
            load = stack.enter_context(self._offered_load())
            # A worker logs "partition serving" at its first commit with the partition,
            # so this needs the load: w1 has then finished restoring its share too.
            wait_until(
                lambda: self._serving_everywhere(watch),
                60,
                f"both workers of {self.scenario.name} to serve every partition they own",
                self.workers,
            )
            time.sleep(self.settings.settle_s)
            victim, moved, kill_at = self._take_one_away(watch)
            survivor = next(w for w in self.workers if w is not victim)
            moves = self._wait_serving(survivor, moved, kill_at)
            own = self._own_stopped(survivor, set(range(self.settings.partitions)) - moved, kill_at)
            sent, seconds = load.stop()
            exit_code = self._victim_exit(victim)
        return ScenarioResult(
            scenario=self.scenario,
            victim=victim.instance_id,
            victim_partitions=tuple(sorted(moved)),
            moves=tuple(moves[p] for p in sorted(moves)),
            ready_s=ready_s,
            offered_rate=sent / seconds if seconds > 0 else 0.0,
            offered_events=sent,
            victim_exit=exit_code,
            own_stopped=tuple(own[p] for p in sorted(own)),
        )

    def _start_workers(self, watch: GroupWatch) -> float:
        """Start w0 alone and let it commit the whole pre-load, then w1; the seconds until
        both are ready.

        One after the other, so that w1 never owned w0's partitions: when w0 is the
        victim (the first instance id wins an even split), the survivor has no store of
        its own for them, and without a standby restores them from the changelog whole.
        Started together, either worker could own every partition for a moment and keep
        its store, which would make a cold takeover look warm."""
        name, timeout = self.scenario.name, self.settings.ready_timeout_s(self.scenario.identities)
        deadline = time.monotonic() + timeout
        started = time.monotonic()
        self.workers.append(
            self.plan.start(_WORKERS[0], self.workdir, commit_kill=self._commit_kill)
        )
        wait_until(
            lambda: watch.settled(1),
            timeout,
            f"worker {_WORKERS[0]} of {name} to own every partition",
            self.workers,
        )
        wait_until(
            watch.caught_up,
            max(deadline - time.monotonic(), 1.0),
            f"worker {_WORKERS[0]} of {name} to commit the whole pre-load",
            self.workers,
        )
        self.workers.append(
            self.plan.start(_WORKERS[1], self.workdir, commit_kill=self._commit_kill)
        )
        self._wait_ready(watch, deadline)
        waited = time.monotonic() - started
        progress(f"failover {name}: ready after {waited:.1f} s")
        return waited

    def _wait_ready(self, watch: GroupWatch, deadline: float) -> None:
        """Both workers own partitions, everything is committed and, with standbys, each
        worker has caught up the standby of every partition the other owns."""
        name = self.scenario.name
        wait_until(
            lambda: watch.settled(len(self.workers)),
            max(deadline - time.monotonic(), 1.0),
            f"both workers of {name} to own partitions",
            self.workers,
        )
        wait_until(
            watch.caught_up,
            max(deadline - time.monotonic(), 1.0),
            f"{name}'s group to commit the whole pre-load",
            self.workers,
        )
        if self.scenario.standby_replicas > 0:
            wait_until(
                lambda: self._standbys_caught_up(watch),
                max(deadline - time.monotonic(), 1.0),
                f"each worker of {name} to log 'standby caught up' for every partition"
                " the other owns",
                self.workers,
            )

    def _serving_everywhere(self, watch: GroupWatch) -> bool:
        assignment = watch.assignment()
        if len(assignment) != len(self.workers):
            return False
        return all(
            {serving.partition for serving in _servings(worker)}
            >= assignment.get(worker.instance_id, set())
            for worker in self.workers
        )

    def _standbys_caught_up(self, watch: GroupWatch) -> bool:
        assignment = watch.assignment()
        if len(assignment) != len(self.workers):
            return False
        every = set(range(self.settings.partitions))
        return all(
            standby_caught_up(worker.log.read())
            >= every - assignment.get(worker.instance_id, set())
            for worker in self.workers
        )

    @contextmanager
    def _offered_load(self) -> Iterator[OfferedLoad]:
        load = OfferedLoad(
            self.plan.kafka,
            self.plan.input_topic,
            self.scenario.identities,
            self.settings.offered_rate,
            self.settings.seed,
        )
        load.start()
        try:
            yield load
        finally:
            load.halt()  # a no-op once stopped; never masks the error that ended the block

    def _take_one_away(self, watch: GroupWatch) -> tuple[WorkerProcess, set[int], float]:
        """Kill (or stop) the member owning the most partitions: (it, its partitions, the
        instant the signal was sent, epoch seconds like the survivor's log)."""
        wait_until(
            lambda: watch.settled(len(self.workers)),
            30,
            f"{self.scenario.name}'s group to be settled before the {self.scenario.mode}",
            self.workers,
        )
        assignment = watch.assignment()
        victim_id = choose_victim(assignment)
        victim = next(w for w in self.workers if w.instance_id == victim_id)
        moved = set(assignment[victim_id])
        if self._commit_kill:
            kill_at = self._killed_inside_a_commit(victim)
        else:
            kill_at = time.time()
            victim.send(_SIGNALS[self.scenario.mode])
        progress(f"failover {self.scenario.name}: {self.scenario.mode} {victim_id} ({len(moved)})")
        return victim, moved, kill_at

    @property
    def _commit_kill(self) -> bool:
        return self.scenario.mode == "commit-kill"

    def _killed_inside_a_commit(self, victim: WorkerProcess) -> float:
        """Arm the victim's kill inside its next commit; the instant it was seen dead (within
        a few milliseconds of its death: under load it commits several times a second)."""
        commit_kill_file(self.workdir, victim.instance_id).touch()
        wait_until(
            lambda: victim.process.poll() is not None,
            _VICTIM_EXIT_S,
            f"worker {victim.instance_id} of {self.scenario.name} to die inside a commit",
        )
        return time.time()

    def _wait_serving(
        self, survivor: WorkerProcess, moved: set[int], kill_at: float
    ) -> dict[int, Move]:
        found: dict[int, Move] = {}

        def all_serving() -> bool:
            found.update(moves_after(_servings(survivor), moved, kill_at))
            return set(found) >= moved

        wait_until(
            all_serving,
            self.settings.takeover_timeout_s(self.scenario.identities),
            f"worker {survivor.instance_id} to log 'partition serving' for partitions"
            f" {sorted(moved)} after the {self.scenario.mode}",
            [survivor],
        )
        return found

    def _own_stopped(
        self, survivor: WorkerProcess, own: set[int], kill_at: float
    ) -> dict[int, Move]:
        """The survivor's own partitions that it stopped and served again after the kill
        (eager rebalancing revokes them all), as seen within a short window: none with
        cooperative rebalancing, which leaves them running."""
        deadline = time.monotonic() + _OWN_WINDOW_S
        found = moves_after(_servings(survivor), own, kill_at)
        while set(found) < own and time.monotonic() < deadline:
            time.sleep(0.1)  # polling the survivor's log
            found = moves_after(_servings(survivor), own, kill_at)
        return found

    def _victim_exit(self, victim: WorkerProcess) -> int:
        """The victim's exit code; a graceful stop is given a bounded time to finish."""
        try:
            return victim.process.wait(_VICTIM_EXIT_S)
        except subprocess.TimeoutExpired:
            raise FailoverError(
                f"worker {victim.instance_id} had not exited {_VICTIM_EXIT_S:.0f} s after"
                f" the {self.scenario.mode}"
            ) from None

    def _stop_workers(self) -> None:
        for worker in self.workers:
            worker.stop()


def _servings(worker: WorkerProcess) -> list[Serving]:
    """The worker's "partition serving" lines so far."""
    found = (serving_of(entry) for entry in worker.log.read())
    return [serving for serving in found if serving is not None]
