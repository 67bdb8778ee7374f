"""The kill -9 schedule of the torture tests: a worker killed from outside at an observed
stage of its start (``STAGES``) or after random committed progress, or from inside at a
fault point (``SEQGATE_FAULT``), while the input is fed and topped up
(tests/torture/test_torture_kill9.py, tests/kafka/test_faust_consumer.py)."""

from __future__ import annotations

import random
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

from tests.support.kafka_helpers import wait_for
from tests.support.tier import sized
from tests.support.torture_helpers import (
    Feeder,
    GroupProbe,
    WorkerLauncher,
    WorkerProcess,
    Workload,
    input_producer,
    produce_records,
)

__all__ = ["Input", "Kill", "kill_once"]

# How many inputs a "progress" kill lets the worker commit first (drawn in this range).
PROGRESS_BETWEEN_KILLS = sized(fast=(1_000, 4_000), soak=(2_000, 15_000))


@dataclass
class Kill:
    kind: str
    alive_s: float
    committed_after: int


class Input:
    """The feeder plus top-ups: when the input runs dry before a kill that needs
    traffic, re-send random records of the workload (more redeliveries)."""

    def __init__(
        self, bootstrap: str, topic: str, workload: Workload, seed: int, preload: float = 0.3
    ) -> None:
        self.topic = topic
        self.workload = workload
        self.rng = random.Random(seed)
        first = int(len(workload) * preload)  # produced before the first worker starts
        self._producer = input_producer(bootstrap)
        produce_records(self._producer, topic, workload.records[:first])
        self.feeder = Feeder(bootstrap, topic, workload.records[first:], chunk=2_000, pause_s=0.4)
        self.extra = 0

    @property
    def produced(self) -> int:
        return len(self.workload) + self.extra

    def top_up_if_dry(self, probe: GroupProbe) -> None:
        if self.feeder.done.is_set() and probe.caught_up():
            extra = self.rng.sample(self.workload.records, 2_000)
            produce_records(self._producer, self.topic, extra)
            self.extra += len(extra)


def _started(probe: GroupProbe, instance: str) -> Callable[[WorkerProcess], bool]:
    return WorkerProcess.catches_sigterm


def _member(probe: GroupProbe, instance: str) -> Callable[[WorkerProcess], bool]:
    # Read before the start: the killed incarnation stays in the group until its session
    # times out, under the same instance id; the new one is the member with another id.
    before = probe.members().get(instance, ("", set()))[0]

    def owns_partitions(worker: WorkerProcess) -> bool:
        member_id, partitions = probe.members().get(instance, (before, set()))
        return member_id != before and bool(partitions)

    return owns_partitions


# Observed stages of a starting worker, each a moment to kill it at.
STAGES: dict[str, Callable[[GroupProbe, str], Callable[[WorkerProcess], bool]]] = {
    "started": _started,  # imports done, its signal handlers installed
    "member": _member,  # the group shows this incarnation owning partitions
}


def kill_once(
    launcher: WorkerLauncher,
    probe: GroupProbe,
    source: Input,
    kind: str,
    rng: random.Random,
    instance: str = "torture",
) -> Kill:
    """Start the worker ``instance`` and SIGKILL it the way ``kind`` says (see the module)."""
    if kind.startswith("kill:"):
        point = kind.split(":")[1]
        skip = rng.randrange(100, 5_000) if point == "after_state_update" else rng.randrange(1, 20)
        worker = launcher.start(instance, fault=f"{kind}:{skip}")

        def dead() -> bool:
            source.top_up_if_dry(probe)
            return not worker.alive()

        wait_for(dead, 180, f"the fault injector to kill the worker ({kind}:{skip})")
        assert worker.process.returncode == -signal.SIGKILL, _died(worker)
    elif kind in STAGES:
        reached = STAGES[kind](probe, instance)
        worker = launcher.start(instance)
        # Killed the moment the stage is seen (start-up done, or owning partitions:
        # init_transactions, the changelog restore and the first transactions follow).
        wait_for(
            lambda: reached(worker) or not worker.alive(), 120, f"the worker to reach {kind!r}"
        )
        assert worker.alive(), _died(worker)
        worker.kill()
    else:
        assert kind == "progress"
        base = probe.committed_total()
        while base is None:
            base = probe.committed_total()
        target = base + rng.randrange(*PROGRESS_BETWEEN_KILLS)
        worker = launcher.start(instance)

        def progressed() -> bool:
            source.top_up_if_dry(probe)
            total = probe.committed_total()
            return total is not None and total >= target

        wait_for(progressed, 180, f"the worker to commit up to {target} inputs")
        assert worker.alive(), _died(worker)
        worker.kill()
    alive = time.monotonic() - worker.started
    committed = probe.committed_total()
    return Kill(kind, alive, committed if committed is not None else -1)


def _died(worker: WorkerProcess) -> str:
    return (
        f"worker exited with {worker.process.returncode} on its own;"
        f" stderr:\n{worker.stderr()[-3000:]}"
    )
