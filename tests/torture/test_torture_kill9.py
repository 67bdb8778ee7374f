"""Torture (issue 4): kill -9 the worker at many moments; `verify` must still pass.

200,000 events over 20,000 objects in 6 partitions in the soak tier (30,000 over 3,000 in
the fast tier: tests/support/tier.py), 30% redeliveries and late (out-of-order) arrivals,
fed while the worker runs. The worker process is SIGKILLed 12 times (7 in the fast tier,
each kind at least once): as soon as it has started or as soon as the group shows it
owning partitions (so in init_transactions or the changelog restore), right after random
amounts of committed progress, and from inside the worker at the fault points
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
import time
from pathlib import Path

import pytest

from tests.support.kafka_helpers import make_config
from tests.support.kill_schedule import Input, Kill, kill_once
from tests.support.tier import sized
from tests.support.torture_helpers import (
    GroupProbe,
    build_workload,
    check_stores_match_replay,
    check_verified,
    launched,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.tier("fast", "soak")]

RUNS = int(os.environ.get("SEQGATE_TORTURE_RUNS", "1"))
EVENTS = sized(fast=30_000, soak=200_000)
IDENTITIES = sized(fast=3_000, soak=20_000)
PARTITIONS = 6
PRELOAD = 0.3  # share of the input produced before the first worker starts
INSTANCE = "torture"

# Kill kinds: an outside SIGKILL at an observed stage of the start (kill_schedule.STAGES)
# or after random committed progress, or a SIGKILL the worker sends itself at a fault point.
SCHEDULE = sized(
    fast=[
        "started",
        "member",
        "progress",
        "progress",
        "kill:before_commit",
        "kill:after_commit",
        "kill:after_state_update",
    ],
    soak=["started"] * 2
    + ["member"] * 2
    + ["progress"] * 4
    + [
        "kill:before_commit",
        "kill:before_commit",
        "kill:after_commit",
        "kill:after_state_update",
    ],
)
# All kills but two at most land while input is still to be committed (a kill at a start
# may find the input all committed already, until the next top-up).
MID_STREAM = len(SCHEDULE) - 2


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
        source = Input(kafka_bootstrap, config.input_topic, workload, seed, PRELOAD)
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
                kills.append(kill_once(launcher, probe, source, kind, rng, INSTANCE))
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
    assert len(kills) == len(SCHEDULE) and mid_stream >= MID_STREAM, kills
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
