"""Torture (issue 4): kill -9 the worker at many random moments; `verify` must still pass.

200,000 events over 20,000 objects in 6 partitions, 30% redeliveries and late
(out-of-order) arrivals, fed while the worker runs. The worker process is
SIGKILLed at least 12 times: after random delays (which also hit start-up,
init_transactions and the changelog restore), right after random amounts of
committed progress, and from inside the worker at the fault points
(`SEQGATE_FAULT`): between send_offsets_to_transaction and commit_transaction
(a transaction being committed), right after the Kafka commit (RocksDB not yet
written), and in the middle of a transaction. Each time it is restarted with the
same instance id. Then the outbox must be exactly the replay of the input, and
each RocksDB store must equal the replay's final watermarks.

Repeat it with SEQGATE_TORTURE_RUNS=5 (each run has its own random seed, printed;
SEQGATE_TORTURE_SEED fixes it).
"""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.kafka_helpers import make_config, wait_for
from tests.support.torture_helpers import (
    Feeder,
    GroupProbe,
    WorkerLauncher,
    WorkerProcess,
    Workload,
    build_workload,
    check_stores_match_replay,
    check_verified,
    input_producer,
    launched,
    produce_records,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

RUNS = int(os.environ.get("SEQGATE_TORTURE_RUNS", "1"))
EVENTS = 200_000
IDENTITIES = 20_000
PARTITIONS = 6
PRELOAD = 0.3  # share of the input produced before the first worker starts
INSTANCE = "torture"

# Kill kinds: an outside SIGKILL after a random delay or after random committed
# progress, or a SIGKILL the worker sends itself at a fault point.
SCHEDULE = (
    ["delay"] * 4
    + ["progress"] * 4
    + [
        "kill:before_commit",
        "kill:before_commit",
        "kill:after_commit",
        "kill:after_state_update",
    ]
)


@dataclass
class Kill:
    kind: str
    alive_s: float
    committed_after: int


class Input:
    """The feeder plus top-ups: when the input runs dry before a kill that needs
    traffic, re-send random records of the workload (more redeliveries)."""

    def __init__(self, bootstrap: str, topic: str, workload: Workload, seed: int) -> None:
        self.topic = topic
        self.workload = workload
        self.rng = random.Random(seed)
        preload = int(len(workload) * PRELOAD)
        self._producer = input_producer(bootstrap)
        produce_records(self._producer, topic, workload.records[:preload])
        self.feeder = Feeder(bootstrap, topic, workload.records[preload:], chunk=2_000, pause_s=0.4)
        self.extra = 0

    @property
    def produced(self) -> int:
        return len(self.workload) + self.extra

    def top_up_if_dry(self, probe: GroupProbe) -> None:
        if self.feeder.done.is_set() and probe.caught_up():
            extra = self.rng.sample(self.workload.records, 2_000)
            produce_records(self._producer, self.topic, extra)
            self.extra += len(extra)


def kill_once(
    launcher: WorkerLauncher, probe: GroupProbe, source: Input, kind: str, rng: random.Random
) -> Kill:
    if kind.startswith("kill:"):
        point = kind.split(":")[1]
        skip = rng.randrange(100, 5_000) if point == "after_state_update" else rng.randrange(1, 20)
        worker = launcher.start(INSTANCE, fault=f"{kind}:{skip}")

        def dead() -> bool:
            source.top_up_if_dry(probe)
            return not worker.alive()

        wait_for(dead, 180, f"the fault injector to kill the worker ({kind}:{skip})")
        assert worker.process.returncode == -signal.SIGKILL, _died(worker)
    elif kind == "delay":
        worker = launcher.start(INSTANCE)
        # A random moment, not a synchronization: anywhere from start-up to processing.
        time.sleep(rng.uniform(0.5, 4.0))
        assert worker.alive(), _died(worker)
        worker.kill()
    else:
        assert kind == "progress"
        base = probe.committed_total()
        while base is None:
            base = probe.committed_total()
        target = base + rng.randrange(2_000, 15_000)
        worker = launcher.start(INSTANCE)

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


@pytest.mark.parametrize("run", range(RUNS))
def test_kill_9_torture(
    kafka_bootstrap: str,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    run: int,
) -> None:
    started = time.monotonic()
    seed = int(os.environ.get("SEQGATE_TORTURE_SEED", random.SystemRandom().randrange(2**31)))
    rng = random.Random(seed)
    workload = build_workload(seed, EVENTS, IDENTITIES)
    assert workload.expected["stale"] > EVENTS // 20 and workload.expected["duplicate"] > 0
    config = make_config(
        kafka_bootstrap, unique_name, tmp_path, partitions=PARTITIONS, instance_id=INSTANCE
    )
    schedule = list(SCHEDULE)
    rng.shuffle(schedule)
    kills: list[Kill] = []
    probe = GroupProbe(kafka_bootstrap, config)
    try:
        source = Input(kafka_bootstrap, config.input_topic, workload, seed)
        with launched(
            kafka_bootstrap,
            config,
            tmp_path / "state",
            tmp_path / "logs",
            commit_every=500,
            commit_interval_ms=100,
        ) as launcher:
            source.feeder.start()
            for kind in schedule:
                kills.append(kill_once(launcher, probe, source, kind, rng))
            source.feeder.join(300)
            last = launcher.start(INSTANCE)
            probe.wait_caught_up(300, "the last worker to process the whole input")
            assert last.stop() == 0, last.stderr()[-3000:]
            mid_stream = sum(1 for kill in kills if kill.committed_after < source.produced)
    finally:
        probe.close()

    report = check_verified(
        kafka_bootstrap, config, inputs=source.produced, min_accepted=workload.expected["accepted"]
    )
    stored = check_stores_match_replay(
        kafka_bootstrap, config, [launcher.state_directory(INSTANCE)]
    )
    totals = report.totals()
    assert len(kills) >= 10 and mid_stream >= 10, kills
    assert stored == IDENTITIES  # every object was written at least once
    with capsys.disabled():
        print(
            f"\n[torture kill-9 run {run + 1}/{RUNS}] seed={seed} {workload.summary()}"
            f"\n  kills={len(kills)} (mid-stream {mid_stream}):"
            + "".join(
                f"\n    {kill.kind:<24} after {kill.alive_s:5.1f}s,"
                f" committed inputs then {kill.committed_after}"
                for kill in kills
            )
            + f"\n  inputs checked={totals['inputs']} (top-up redeliveries {source.extra})"
            f" accepted={totals['expected']} found={totals['found']}"
            f" watermarks compared={stored} problems=0"
            f" time={time.monotonic() - started:.0f}s"
        )
