"""Torture (issue 4): how long a killed worker's open transaction stalls read_committed readers.

A worker SIGKILLed while committing (`SEQGATE_FAULT=kill:before_commit`) leaves
its transaction open: the last stable offset (LSO) of every outbox and changelog
partition it wrote stays at the transaction's first record, so read_committed
readers (downstream consumers, restores, `verify`) see nothing past it until the
transaction is aborted. Two bounds, both measured here from the kill until the
LSO of every partition has passed everything the dead worker wrote:

(a) nobody restarts the worker: the broker aborts the transaction once
    `--transaction-timeout-ms` has passed since it began, checking every
    `transaction.abort.timed.out.transaction.cleanup.interval.ms` (broker
    default 10 s), so the stall lies between the timeout and the timeout plus
    that interval;
(b) the same instance id restarts at once: its init_transactions fences the
    dead incarnation and aborts its transaction, so the stall is about the
    restart time.
"""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.kafka_helpers import make_config, wait_for
from tests.support.torture_helpers import (
    Feeder,
    GroupProbe,
    WorkerProcess,
    build_workload,
    check_verified,
    input_producer,
    launched,
    produce_records,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.tier("fast", "soak")]

PARTITIONS = 3
EVENTS = 40_000
TRANSACTION_TIMEOUT_MS = 15_000
# Broker default of transaction.abort.timed.out.transaction.cleanup.interval.ms.
ABORT_CHECK_INTERVAL_S = 10.0
INSTANCE = "stalled"


def measure_stall(
    probe: GroupProbe,
    topics: list[str],
    dead: WorkerProcess,
    then: Callable[[], object] | None = None,
) -> float:
    """Seconds from the kill until every partition's LSO has passed what the dead
    worker wrote (its high watermarks at the kill). `then` runs right after the kill."""
    wait_for(lambda: not dead.alive(), 120, "the fault injector to kill the worker")
    killed_at = time.monotonic()
    assert dead.process.returncode == -signal.SIGKILL, dead.stderr()[-3000:]
    written: dict[str, dict[int, int]] = {}
    stalled = False
    for topic in topics:
        high = probe.high_watermarks(topic)
        lso = probe.last_stable_offsets(topic)
        assert high is not None and lso is not None
        written[topic] = high
        stalled = stalled or any(lso[p] < high[p] for p in high)
    assert stalled, "the killed worker left no open transaction behind"
    if then is not None:
        then()

    def stable() -> bool:
        for topic, high in written.items():
            lso = probe.last_stable_offsets(topic)
            if lso is None or any(lso[p] < high[p] for p in high):
                return False
        return True

    wait_for(stable, TRANSACTION_TIMEOUT_MS / 1000 + 60, "the open transaction to be aborted")
    return time.monotonic() - killed_at


def test_stall_of_a_killed_workers_transaction_is_bounded(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    workload = build_workload(6, EVENTS, 4_000)
    config = make_config(
        kafka_bootstrap, unique_name, tmp_path, partitions=PARTITIONS, instance_id=INSTANCE
    )
    topics = [config.outbox_topic, config.changelog_topic]
    producer = input_producer(kafka_bootstrap)
    produce_records(producer, config.input_topic, workload.records[:10_000])
    probe = GroupProbe(kafka_bootstrap, config)
    try:
        with launched(
            kafka_bootstrap,
            config,
            tmp_path / "state",
            tmp_path / "logs",
            transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
        ) as launcher:
            # (a) killed inside a commit; nobody restarts it.
            dead = launcher.start(INSTANCE, fault="kill:before_commit:5")
            by_timeout = measure_stall(probe, topics, dead)

            # (b) killed inside a commit again, and restarted at once.
            feeder = Feeder(
                kafka_bootstrap, config.input_topic, workload.records[10_000:], pause_s=0.2
            ).start()
            dead = launcher.start(INSTANCE, fault="kill:before_commit:5")
            restarted: list[WorkerProcess] = []
            by_fencing = measure_stall(
                probe, topics, dead, lambda: restarted.append(launcher.start(INSTANCE))
            )

            feeder.join(120)
            probe.wait_caught_up(120, "the restarted worker to process the whole input")
            assert restarted[0].stop() == 0, restarted[0].stderr()[-3000:]
    finally:
        probe.close()

    report = check_verified(
        kafka_bootstrap, config, inputs=len(workload), min_accepted=workload.expected["accepted"]
    )
    timeout_s = TRANSACTION_TIMEOUT_MS / 1000
    with capsys.disabled():
        print(
            f"\n[torture stall] read_committed stall after a kill inside a commit:"
            f" (a) no restart, --transaction-timeout-ms={TRANSACTION_TIMEOUT_MS}:"
            f" {by_timeout:.1f}s; (b) same instance id restarted at once: {by_fencing:.1f}s"
            f" (inputs checked={report.totals()['inputs']},"
            f" accepted={report.totals()['expected']}, time={time.monotonic() - started:.0f}s)"
        )
    # The timeout runs from the transaction's start (at most a commit interval before
    # the kill); the broker notices it at its next periodic check.
    assert timeout_s - 1.0 <= by_timeout <= timeout_s + ABORT_CHECK_INTERVAL_S + 3.0, by_timeout
    assert by_fencing < by_timeout / 3, (by_fencing, by_timeout)
