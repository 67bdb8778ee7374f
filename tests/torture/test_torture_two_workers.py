"""Torture (issue 4): two workers share the group; one is SIGKILLed, then comes back.

Workers `a` and `b` (static members, distinct instance ids and transactional
ids) split the 6 input partitions. `a` is SIGKILLed mid-stream; once its session
times out the survivor `b` takes over a's partitions, restores their watermarks
from the changelog and processes everything: `verify` passes. Then `a` restarts
and, by a cooperative rebalance, takes partitions back from `b`; after more
input, `verify` passes again: no duplicate and no loss across both moves. With one
standby replica each (the fast tier; the soak tier also runs without), b serves a's
partitions from its warm standby stores, and the stores compared at the end include them.

With static membership the takeover waits for `--session-timeout-ms`; if `a`
died holding a transaction with offsets, `b` also waits for that transaction to
be aborted (`--transaction-timeout-ms`), so both are set short here.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

import pytest

from tests.support.kafka_helpers import make_config, wait_for
from tests.support.tier import sized
from tests.support.torture_helpers import (
    Feeder,
    GroupProbe,
    build_workload,
    check_stores_match_replay,
    check_verified,
    input_producer,
    launched,
    produce_records,
    wait_stable,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.tier("fast", "soak")]

EVENTS = sized(fast=45_000, soak=90_000)
IDENTITIES = sized(fast=4_500, soak=9_000)
# Preloaded; fed around the kill of a; fed after a's return (the rest).
FIRST, SECOND = sized(fast=(10_000, 30_000), soak=(20_000, 60_000))
PARTITIONS = 6
SESSION_TIMEOUT_MS = 6_000  # the broker's group.min.session.timeout.ms
TRANSACTION_TIMEOUT_MS = 10_000
# Standby replicas (--standby-replicas): with one, b takes a's partitions over from its warm
# standbys and a takes some back from its own; the soak tier runs both ways.
STANDBYS = sized(fast=[1], soak=[0, 1])


@pytest.mark.parametrize("standbys", STANDBYS)
def test_survivor_takes_over_then_partitions_move_back(
    kafka_bootstrap: str,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    standbys: int,
) -> None:
    started = time.monotonic()
    rng = random.Random()
    workload = build_workload(2, EVENTS, IDENTITIES)
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=PARTITIONS)
    all_partitions = set(range(PARTITIONS))
    first, second = FIRST, SECOND
    producer = input_producer(kafka_bootstrap)
    produce_records(producer, config.input_topic, workload.records[:first])
    probe = GroupProbe(kafka_bootstrap, config)
    topics = [config.outbox_topic, config.changelog_topic]
    try:
        with launched(
            kafka_bootstrap,
            config,
            tmp_path / "state",
            tmp_path / "logs",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
        ) as launcher:
            options = ["--standby-replicas", str(standbys)]
            a = launcher.start("a", extra_args=options)
            b = launcher.start("b", extra_args=options)

            def shared() -> bool:
                owners = probe.assignment()
                return (
                    bool(owners.get("a"))
                    and bool(owners.get("b"))
                    and owners["a"] | owners["b"] == all_partitions
                )

            wait_for(shared, 60, "a and b to share the partitions")
            feeder = Feeder(
                kafka_bootstrap, config.input_topic, workload.records[first:second], pause_s=0.3
            ).start()
            # Killed at a random amount of committed progress, observed, not after a sleep.
            target = first + 5_000 + rng.randrange(5_000)
            probe.wait_committed(target, 120, f"both workers to commit {target} inputs")
            owned_by_a = probe.assignment()["a"]
            assert a.alive(), a.stderr()[-3000:]
            a.kill()
            killed_at = time.monotonic()

            wait_for(
                lambda: probe.assignment() == {"b": all_partitions},
                SESSION_TIMEOUT_MS / 1000 + 60,
                "b to take over every partition",
            )
            takeover_s = time.monotonic() - killed_at
            feeder.join(120)
            probe.wait_caught_up(120, "b to process everything")
            caught_up_s = time.monotonic() - killed_at
            wait_stable(probe, topics, TRANSACTION_TIMEOUT_MS / 1000 + 30)
            report = check_verified(
                kafka_bootstrap, config, inputs=second, min_accepted=second // 2
            )
            after_kill = report.totals()

            # a comes back: a cooperative rebalance gives it partitions back.
            returned_at = time.monotonic()
            a = launcher.start("a", extra_args=options)

            def moved_back() -> bool:
                owners = probe.assignment()
                return bool(owners.get("a")) and bool(owners.get("b"))

            wait_for(moved_back, 60, "partitions to move back to a")
            move_back_s = time.monotonic() - returned_at
            owned_after = probe.assignment()
            produce_records(producer, config.input_topic, workload.records[second:])
            probe.wait_caught_up(120, "a and b to process the rest")
            assert a.stop() == 0, a.stderr()[-3000:]
            assert b.stop() == 0, b.stderr()[-3000:]
    finally:
        probe.close()

    report = check_verified(
        kafka_bootstrap, config, inputs=EVENTS, min_accepted=workload.expected["accepted"]
    )
    compared = check_stores_match_replay(
        kafka_bootstrap,
        config,
        [launcher.state_directory("a"), launcher.state_directory("b")],
    )
    assert compared == IDENTITIES
    totals = report.totals()
    with capsys.disabled():
        print(
            f"\n[torture two workers, {standbys} standby] {workload.summary()}"
            f"\n  a owned {sorted(owned_by_a)} when SIGKILLed; b owned all after {takeover_s:.1f}s"
            f" (session timeout {SESSION_TIMEOUT_MS} ms), caught up after {caught_up_s:.1f}s;"
            f" verify then: inputs={after_kill['inputs']} accepted={after_kill['expected']}"
            f"\n  a restarted: owned {sorted(owned_after['a'])}, b {sorted(owned_after['b'])}"
            f" after {move_back_s:.1f}s; final verify: inputs={totals['inputs']}"
            f" accepted={totals['expected']} watermarks compared={compared}"
            f" time={time.monotonic() - started:.0f}s"
        )
