"""A worker under load on a three-node cluster, hurt and watched (issue 17's fault tests).

:class:`FaultRun` owns one pipeline on the cluster: replicated topics, a workload of its own,
the preloaded and the fed input, the worker processes, and the timeline of what happened and
how long the recovery took. The tests drive the faults; :meth:`FaultRun.ride_out` keeps the
worker going through them the way a supervisor would (an exit with one ``error:`` line is
restarted; a worker alive without progress past its own stall checks is a hang and fails the
test); :meth:`FaultRun.finish` proves exactly-once with ``verify`` and the stores.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqgate.streams.worker.processor import WorkerConfig
from tests.support.cluster_probe import ClusterProbe
from tests.support.kafka_helpers import make_config
from tests.support.tier import sized
from tests.support.torture_helpers import (
    Feeder,
    GroupProbe,
    WorkerLauncher,
    WorkerProcess,
    Workload,
    check_stores_match_replay,
    check_verified,
    input_producer,
    launched,
    produce_records,
    wait_stable,
)

__all__ = ["FaultRun", "fault_run", "flooded_lines"]

REPLICAS = 3
PARTITIONS = 6
STALL_TIMEOUT_MS = 20_000
# A healthy worker resumes within seconds of the cluster healing; a stuck one exits after two
# stall checks. Alive and without progress for longer than this is a hang.
HANG_S = 2 * STALL_TIMEOUT_MS / 1000 + 30
FLOOD_LIMIT = 25  # the same log line more often than this is a flood
# How the input is fed once the worker runs: (records per chunk, seconds between chunks,
# redeliver until the run rides out). The soak tier's 200,000 events outlast every fault;
# the fast tier's smaller workload is paced, then kept flowing by redeliveries, so that the
# worker is inside transactions whenever a fault strikes (tests/support/tier.py).
FEED = sized(fast=(500, 0.5, True), soak=(5_000, 0.2, False))


def flooded_lines(stderr: str, limit: int = FLOOD_LIMIT) -> list[tuple[str, int]]:
    """Lines repeated more than ``limit`` times (timestamps and numbers masked)."""
    masked = Counter(
        "".join("#" if c.isdigit() else c for c in line) for line in stderr.splitlines()
    )
    return [(line, count) for line, count in masked.most_common() if count > limit]


@dataclass
class FaultRun:
    """One pipeline on the cluster, its worker(s), and what the faults did to them."""

    bootstrap: str
    config: WorkerConfig
    workload: Workload
    launcher: WorkerLauncher
    probe: GroupProbe
    cluster: ClusterProbe
    started: float = field(default_factory=time.monotonic)
    timeline: list[str] = field(default_factory=list)
    workers: dict[str, WorkerProcess] = field(default_factory=dict)
    prefixes: dict[str, list[str]] = field(default_factory=dict)
    feeder: Feeder | None = None
    preloaded: int = 0

    @property
    def topics(self) -> list[str]:
        c = self.config
        return [c.input_topic, c.outbox_topic, c.changelog_topic, c.rejected_topic]

    @property
    def inputs(self) -> int:
        """The inputs produced so far: the preload and what the feeder sent."""
        return self.preloaded + (self.feeder.produced if self.feeder is not None else 0)

    def transactional_id(self, instance: str) -> str:
        """The ``transactional.id`` of ``seqgate worker --instance-id instance``."""
        return f"{self.config.application_id}-{instance}"

    def note(self, text: str) -> None:
        self.timeline.append(f"{time.monotonic() - self.started:6.1f}s {text}")

    def start_worker(self, instance: str = "w", *, prefix: Sequence[str] = ()) -> WorkerProcess:
        """Start (or restart) ``instance``; ``prefix`` is kept for its restarts."""
        if prefix:
            self.prefixes[instance] = list(prefix)
        worker = self.launcher.start(
            instance,
            env={"PYTHONFAULTHANDLER": "1"},
            extra_args=["--stall-timeout-ms", str(STALL_TIMEOUT_MS)],
            prefix=self.prefixes.get(instance, ()),
        )
        self.workers[instance] = worker
        return worker

    def begin(self, preload: int, *, prefix: Sequence[str] = ()) -> None:
        """Preload, start one worker, wait for progress, then feed the rest from a thread
        (paced as ``FEED`` says)."""
        produce_records(
            input_producer(self.bootstrap), self.config.input_topic, self.workload.records[:preload]
        )
        self.preloaded = preload
        self.start_worker(prefix=prefix)
        self.probe.wait_committed(preload // 4, 180, "the worker to make progress")
        chunk, pause_s, redeliver = FEED
        self.feeder = Feeder(
            self.bootstrap,
            self.config.input_topic,
            self.workload.records[preload:],
            chunk=chunk,
            pause_s=pause_s,
            redeliver=redeliver,
        ).start()
        fed = len(self.workload) - preload
        then = ", then redeliveries until the end" if redeliver else ""
        self.note(f"worker running, {preload} preloaded, feeding {fed}{then}")

    def wait_for_owner(self, instance: str, partitions: int, timeout: float) -> None:
        """Until the group says ``instance`` owns ``partitions`` input partitions."""
        deadline = time.monotonic() + timeout
        while len(self.probe.assignment().get(instance, set())) < partitions:
            self.ride_out_step()
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{instance} did not take all {partitions} partitions in {timeout:.0f}s:"
                    f" {self.probe.assignment()}"
                )
            time.sleep(0.5)  # polling interval

    def committed(self) -> int:
        return self.probe.committed_total() or 0

    def wait_progress(self, what: str, *, beyond: int | None = None, timeout: float = 180) -> float:
        """Seconds until the committed input passes ``beyond`` (default: now) by 500."""
        started = time.monotonic()
        target = (self.committed() if beyond is None else beyond) + 500
        deadline = started + timeout
        while True:
            done = self.committed()
            # All the input committed is progress enough: with none left, no more can come
            # (soak run 30: the worker had caught up before the third node's restart).
            caught_up = done >= self.inputs
            if done >= min(target, self.inputs) and (done > (beyond or -1) or caught_up):
                break
            self.ride_out_step()
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"no progress within {timeout:.0f}s after {what} (committed {done});"
                    f" workers: {self.dump_stacks()}"
                )
            time.sleep(0.2)  # polling interval
        seconds = time.monotonic() - started
        self.note(f"progress again {seconds:.1f}s after {what}")
        return seconds

    def dump_stacks(self, chars: int = 6000) -> dict[str, str]:
        """SIGABRT the live workers (faulthandler prints every thread's stack); their stderr."""
        for worker in self.workers.values():
            if worker.alive():
                worker.signal(signal.SIGABRT)
                with contextlib.suppress(AssertionError):
                    worker.wait(30)
        return {name: worker.stderr()[-chars:] for name, worker in self.workers.items()}

    def hold(self, seconds: float) -> None:
        """Let a fault last ``seconds`` (its duration, not a synchronization), restarting a
        worker that exits meanwhile."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.ride_out_step()
            time.sleep(0.2)  # polled for exits

    def ride_out_step(self) -> None:
        """Restart a worker that exited with one error line and a documented code (1: a
        failure a restart cures; 3: Kafka unreachable at start, as a restart into a degraded
        network can be), as its supervisor would; fail on anything else."""
        for instance, worker in list(self.workers.items()):
            if worker.alive():
                continue
            lines = worker.stderr().strip().splitlines()
            last = lines[-1] if lines else ""
            code = worker.process.returncode
            assert code in (1, 3) and last.startswith("error: "), (
                f"worker {instance} exited {code}: {worker.stderr()[-3000:]}"
            )
            self.note(f"worker {instance} exited {code}: {last[:240]}; restarted")
            self.start_worker(instance)

    def ride_out(self, timeout: float = 600) -> None:
        """Until the whole workload is fed and committed, restarting what exits."""
        if self.feeder is not None:
            self.feeder.join(timeout)
        deadline = time.monotonic() + timeout
        last_total, last_progress = -1, time.monotonic()
        while not (self.committed() >= self.inputs and self.probe.caught_up()):
            total = self.committed()
            if total > last_total:
                last_total, last_progress = total, time.monotonic()
            self.ride_out_step()
            if time.monotonic() - last_progress > HANG_S:
                raise AssertionError(f"hung at {last_total} committed inputs: {self.dump_stacks()}")
            assert time.monotonic() < deadline, f"input not processed in {timeout:.0f}s"
            time.sleep(0.5)  # polling interval

    def finish(self) -> str:
        """Stop the workers, check exactly-once and the stores; return the summary."""
        for worker in self.workers.values():
            assert worker.stop() == 0, worker.stderr()[-3000:]
        for incarnation in self.launcher.started:  # every life of every worker
            flood = flooded_lines(incarnation.stderr())
            assert not flood, (
                f"worker {incarnation.instance_id} ({incarnation.stderr_path.name}) flooded its"
                f" log: {flood[:3]}"
            )
        wait_stable(self.probe, [self.config.outbox_topic, self.config.changelog_topic], 120)
        report = check_verified(
            self.bootstrap,
            self.config,
            inputs=self.inputs,
            min_accepted=self.workload.expected["accepted"],
        )
        compared = check_stores_match_replay(
            self.bootstrap,
            self.config,
            [self.launcher.state_directory(name) for name in self.workers],
        )
        totals = report.totals()
        return (
            f"{self.workload.summary()}\n  "
            + "\n  ".join(self.timeline)
            + f"\n  verify: inputs={totals['inputs']} accepted={totals['expected']}"
            f" found={totals['found']} watermarks compared={compared}"
            f" total {time.monotonic() - self.started:.0f}s"
        )


@contextlib.contextmanager
def fault_run(
    bootstrap: str,
    name: str,
    tmp_path: Path,
    workload: Workload,
    *,
    worker_bootstrap: str | None = None,
    **launcher_options: Any,
) -> Iterator[FaultRun]:
    """A :class:`FaultRun` with replicated topics; its workers are killed when the block ends.
    The workers are given ``worker_bootstrap`` (default: ``bootstrap``, every node)."""
    config = make_config(
        bootstrap, name, tmp_path, partitions=PARTITIONS, replication_factor=REPLICAS
    )
    cluster = ClusterProbe(bootstrap)
    cluster.wait_fully_replicated(
        [config.input_topic, config.outbox_topic, config.changelog_topic], REPLICAS, 120
    )
    probe = GroupProbe(bootstrap, config)
    try:
        with launched(
            worker_bootstrap or bootstrap,
            config,
            tmp_path / "state",
            tmp_path / "logs",
            **launcher_options,
        ) as launcher:
            yield FaultRun(bootstrap, config, workload, launcher, probe, cluster)
    finally:
        probe.close()
