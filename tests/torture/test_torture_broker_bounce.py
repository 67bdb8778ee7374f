"""Torture (issue 4): SIGKILL the broker mid-stream and restart it on the same data.

A private single-node broker (the project's launcher, in a temporary directory)
serves one worker while input is fed. The broker's Java process is SIGKILLed
mid-stream and started again on the same data directory and ports, so topics,
offsets, transactions and the group survive (only the crash recovery of an
unclean shutdown separates the two lives). The worker either rides it out or
exits with one clear error line; restarted if needed, it finishes, and `verify`
passes. A client stuck after the outage (seen once: connected, fetching nothing)
must be caught by the worker's own liveness check (--stall-timeout-ms), which
exits with one error line. A worker that stays alive without progress beyond
that is hung: the test dumps its stack, restarts it, checks exactly-once anyway
and then fails with WorkerHung.

The broker is killed and restarted with `seqgate_devtools.broker.bounce`.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
from seqgate_devtools.broker.bounce import kill_broker, restart_broker

from tests.support.kafka_helpers import make_config, private_broker
from tests.support.tier import sized
from tests.support.torture_helpers import (
    Feeder,
    GroupProbe,
    WorkerProcess,
    build_workload,
    check_stores_match_replay,
    check_verified,
    input_producer,
    launched,
    produce_records,
    wait_stable,
)

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.own_broker,
    pytest.mark.slow,
    pytest.mark.tier("fast", "soak"),
]

EVENTS = sized(fast=30_000, soak=50_000)
IDENTITIES = sized(fast=3_000, soak=5_000)
PRELOAD = sized(fast=12_000, soak=20_000)
PARTITIONS = 6
INSTANCE = "w"


class WorkerHung(AssertionError):
    """The worker stayed alive but made no progress after the broker came back."""


STALL_TIMEOUT_MS = 15_000  # the worker's own liveness check (seqgate/streams/worker/liveness.py)
# A healthy worker resumes within seconds of the broker answering again; a stuck one
# exits after two stall checks (about twice its stall timeout). Longer is a hang.
HANG_S = 2 * STALL_TIMEOUT_MS / 1000 + 30


@pytest.mark.parametrize(
    "outage_s",
    [pytest.param(0.0, id="restart-at-once"), pytest.param(35.0, id="down-35s")],
)
def test_broker_sigkill_mid_stream_then_restart(
    unique_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], outage_s: float
) -> None:
    """Down for `outage_s` seconds more than a JVM restart takes; 35 s outlasts the
    worker's Kafka timeout (30 s), so its commit gives up waiting while the broker is down."""
    started = time.monotonic()
    workload = build_workload(3, EVENTS, IDENTITIES)
    hangs: list[str] = []
    outcomes: list[str] = []
    with private_broker(tmp_path / "broker") as brokers:
        bootstrap = brokers[0].bootstrap_servers
        config = make_config(bootstrap, unique_name, tmp_path, partitions=PARTITIONS)
        preload = PRELOAD
        produce_records(input_producer(bootstrap), config.input_topic, workload.records[:preload])
        probe = GroupProbe(bootstrap, config)
        try:
            with launched(bootstrap, config, tmp_path / "state", tmp_path / "logs") as launcher:

                def start() -> WorkerProcess:
                    # Python dumps every thread's stack on SIGABRT: how a hang is diagnosed.
                    return launcher.start(
                        INSTANCE,
                        env={"PYTHONFAULTHANDLER": "1"},
                        extra_args=["--stall-timeout-ms", str(STALL_TIMEOUT_MS)],
                    )

                worker = start()
                probe.wait_committed(preload // 2, 120, "the worker to make progress")
                feeder = Feeder(
                    bootstrap, config.input_topic, workload.records[preload:], pause_s=0.3
                ).start()
                probe.wait_committed(preload + 5_000, 120, "the worker to process fed input")
                assert worker.alive(), worker.stderr()[-3000:]

                killed_at = time.monotonic()
                kill_broker(brokers[-1])
                time.sleep(outage_s)  # the outage itself, not a synchronization
                brokers.append(restart_broker(brokers[-1]))
                down_s = time.monotonic() - killed_at
                feeder.join(300)

                # Ride it out; or exit with one clear line and be restarted; a worker
                # that is alive without progress is hung: dump its stack, restart it.
                last_total, last_progress = -1, time.monotonic()
                while not probe.caught_up():
                    total = probe.committed_total()
                    if total is not None and total > last_total:
                        last_total, last_progress = total, time.monotonic()
                    if not worker.alive():
                        line = _last_line(worker.stderr())
                        outcomes.append(f"exited {worker.process.returncode}: {line}")
                        assert worker.process.returncode == 1, worker.stderr()[-3000:]
                        assert line.startswith("error: "), worker.stderr()[-3000:]
                        worker, last_progress = start(), time.monotonic()
                    elif time.monotonic() - last_progress > HANG_S:
                        worker.signal(signal.SIGABRT)
                        worker.wait(30)
                        hangs.append(_hung_frame(worker.stderr()))
                        outcomes.append(f"hung at {last_total} committed inputs")
                        worker, last_progress = start(), time.monotonic()
                    assert time.monotonic() - killed_at < 300, "the input was never processed"
                    time.sleep(0.5)  # polling interval of this loop
                assert worker.stop() == 0, worker.stderr()[-3000:]
                wait_stable(probe, [config.outbox_topic, config.changelog_topic], 120)
        finally:
            probe.close()

        # Exactly-once holds whatever the worker did (a failure here is never expected).
        report = check_verified(
            bootstrap, config, inputs=len(workload), min_accepted=workload.expected["accepted"]
        )
        compared = check_stores_match_replay(
            bootstrap, config, [launcher.state_directory(INSTANCE)]
        )
    totals = report.totals()
    with capsys.disabled():
        print(
            f"\n[torture broker bounce, outage +{outage_s:.0f}s] {workload.summary()}"
            f"\n  broker SIGKILLed and back after {down_s:.1f}s;"
            f" worker: {'; '.join(outcomes) or 'rode it out'}"
            f"\n  verify: inputs={totals['inputs']} accepted={totals['expected']}"
            f" watermarks compared={compared} time={time.monotonic() - started:.0f}s"
        )
    if hangs:
        raise WorkerHung(f"the worker hung after the broker came back, in: {hangs}")


def _last_line(text: str) -> str:
    lines = text.strip().splitlines()
    return lines[-1] if lines else ""


def _hung_frame(stderr: str) -> str:
    """The innermost frame of the main thread in a faulthandler dump."""
    lines = stderr.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(("Current thread", "Thread 0x")) and "most recent call first" in line:
            frames = [f.strip() for f in lines[index + 1 : index + 3] if f.strip()]
            if frames and "threading.py" not in frames[0]:
                return " <- ".join(frames)
    return "(no stack dump)"
