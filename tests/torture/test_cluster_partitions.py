"""Exactly-once on a three-node cluster through network partitions (issue 17, §2.4 and §2.5).

The worker runs inside a network namespace whose only link is a veth pair
(tests/support/netns.py); the cluster binds the host end (``--listen-address``), so every
packet between the worker and any node crosses the pair and can be dropped, delayed or lost
there, with no relay process. The test's own clients (the feeder, the probes, verify) stay in
the root namespace and are never cut off.

One test drives a sequence of faults through one run of 200,000 events over 20,000 objects
(soak tier): the worker cut off from the whole cluster for 5 s, then 30 s, then longer than
both its session timeout and its transaction timeout; cut off from one node only; 300 ms of
delay and 10 % loss each way for 30 s; and a kill -9 while it is cut off. The fast tier runs
it over 30,000 events with the cut past both timeouts and the kill -9 in a cut
(tests/support/tier.py). The zombie test (soak tier; the
fast tier fences a zombie in tests/torture/test_torture_zombie.py) adds a second worker
outside the namespace: the isolated one becomes a zombie, the other takes over, and
the zombie is fenced (``verify`` proves it wrote nothing that counts after that).

§2.5, a kill -9 of the worker during each fault: the worker is SIGKILLed and started again
inside the namespace while it is cut off from one node, while the network is degraded, and
while it is cut off from the whole cluster; in the zombie test, the zombie is killed while
cut off (in a second cut, after the first has shown it fenced) and started again inside the
cut. The short cuts of 5, 30 and 25 s kill no worker: the last step is the kill -9 in a cut.
"""

from __future__ import annotations

import functools
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from seqgate_devtools.broker.cluster_handle import ClusterHandle

from tests.support.cluster_faults import FaultRun, fault_run
from tests.support.netns import Fault, Namespace
from tests.support.tier import sized
from tests.support.torture_helpers import Workload, build_workload

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.tier("fast", "soak")]

EVENTS = sized(fast=30_000, soak=200_000)
IDENTITIES = sized(fast=3_000, soak=20_000)
PRELOAD = sized(fast=6_000, soak=40_000)
SESSION_TIMEOUT_MS = 10_000
TRANSACTION_TIMEOUT_MS = 15_000
LONG_CUT_S = 25.0  # longer than both timeouts above
# The whole-cluster cuts of the partition test, in order (the fast tier keeps the one past
# both timeouts, then the kill -9 inside a cut); and whether it also cuts one node off and
# degrades the link (soak tier).
CUTS_S = sized(fast=(LONG_CUT_S,), soak=(5.0, 30.0, LONG_CUT_S))
ONE_NODE_AND_DEGRADED = sized(fast=False, soak=True)
RECOVERY_S = 150.0


@pytest.fixture
def namespace(cluster_namespace: Namespace) -> Namespace:
    """The namespace whose veth pair's host end the session's cluster listens on."""
    return cluster_namespace


@pytest.fixture
def cluster(kafka_cluster: ClusterHandle, cluster_namespace: Namespace) -> ClusterHandle:
    """The session's cluster, healed and whole again after each test (tests/conftest.py)."""
    return kafka_cluster


@pytest.fixture(scope="module")
def workload() -> Workload:
    return build_workload(23, EVENTS, IDENTITIES)


def _report(capsys: pytest.CaptureFixture[str], title: str, summary: str) -> None:
    with capsys.disabled():
        print(f"\n[cluster partition: {title}] {summary}")


def _cut_for(run: FaultRun, namespace: Namespace, seconds: float, what: str) -> None:
    """Cut the namespace off for ``seconds`` (the fault itself: not a synchronization)."""
    before = run.committed()
    with namespace.cut():
        run.note(f"{what}: cut off for {seconds:.0f}s at {before} committed inputs")
        run.hold(seconds)
    run.wait_progress(f"the {seconds:.0f}s cut healed", beyond=before, timeout=RECOVERY_S)


def _kill_and_restart(run: FaultRun, when: str) -> int:
    """kill -9 the worker ``w`` and start it again in the namespace (the prefix given to
    ``begin``); the committed inputs at the kill."""
    committed = run.committed()
    run.workers["w"].kill()
    run.start_worker()
    run.note(f"kill -9 of the worker {when}, at {committed} committed inputs; restarted inside")
    return committed


def test_worker_partitioned_from_the_cluster(
    cluster: ClusterHandle,
    namespace: Namespace,
    workload: Workload,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with fault_run(
        cluster.bootstrap_servers,
        unique_name,
        tmp_path,
        workload,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
    ) as run:
        inside = namespace.command([])
        run.begin(PRELOAD, prefix=inside)
        for seconds in CUTS_S:
            what = "whole cluster" if seconds < LONG_CUT_S else "whole cluster, past timeouts"
            _cut_for(run, namespace, seconds, what)
        if ONE_NODE_AND_DEGRADED:
            _one_node_cut_and_degraded(run, cluster, namespace)

        before = run.committed()
        with namespace.cut():
            run.workers["w"].kill()
            run.note("kill -9 of the worker while cut off; restarted inside the cut")
            run.start_worker()
            run.hold(10)
        run.wait_progress("the kill -9 inside a cut", beyond=before, timeout=RECOVERY_S)

        run.ride_out()
        summary = run.finish()
    _report(capsys, "cuts, one node, degradation, kill -9", summary)


def _one_node_cut_and_degraded(run: FaultRun, cluster: ClusterHandle, namespace: Namespace) -> None:
    """The worker cut off from one node for 30 s, then 300 ms of delay and 10 % loss each
    way for 30 s; killed -9 and restarted in the middle of each."""
    leader = run.cluster.leader(run.config.outbox_topic, 0)
    port = int(cluster.node_address(leader).rsplit(":", 1)[1])
    what = f"one node only: node {leader} (port {port}) cut off for 30s"
    _killed_inside(run, lambda: namespace.cut_port(port), what, "while one node is cut off")
    what = "300 ms delay and 10 % loss each way for 30s"
    degraded = functools.partial(namespace.degrade, delay_ms=300, loss_pct=10)
    _killed_inside(run, degraded, what, "while degraded")


def _killed_inside(run: FaultRun, fault: Callable[[], Fault], what: str, when: str) -> None:
    """A ``fault`` for 30 s, the worker killed -9 and restarted 10 s into it; then progress
    past what was committed at the kill: the restarted worker's own."""
    before = run.committed()
    with fault():
        run.note(what)
        run.hold(10)
        killed_at = _kill_and_restart(run, when)
        run.hold(20)
        during = run.committed() - before
        after_kill = run.committed() - killed_at
    run.note(f"the worker committed {during} inputs {when}, {after_kill} of them after the kill -9")
    run.wait_progress(f"the fault {when} ended", beyond=killed_at, timeout=RECOVERY_S)


@pytest.mark.tier("soak")  # fast tier: tests/torture/test_torture_zombie.py
def test_isolated_worker_is_fenced_as_a_zombie(
    cluster: ClusterHandle,
    namespace: Namespace,
    workload: Workload,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Two workers; the one in the namespace is cut off past its session timeout while its
    transaction is open; the other takes its partitions and ends that transaction as it does
    (worker/handover.py); healed, the zombie finds its producer fenced, reads the takeover's
    mark and goes on with a new producer (were the fence to fail, its commit would be
    refused instead: KIP-447, its offsets carry the old group generation). Nothing it wrote
    after losing its partitions may be read (``verify``).

    §2.5, the kill -9 of the zombie, is a second phase: a kill during the first cut would take
    away the very commit attempt whose refusal this test is about. Once the zombie is back in
    the group, it is cut off again until the other worker owns every partition, killed -9
    there, and started again inside the cut; healed, it must take partitions back (its new
    producer fences what the killed one left open) and both workers go on to ``verify``."""
    with fault_run(
        cluster.bootstrap_servers,
        unique_name,
        tmp_path,
        workload,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
    ) as run:
        run.begin(PRELOAD, prefix=namespace.command([]))
        run.start_worker("outside")
        run.probe.wait_committed(PRELOAD // 2, RECOVERY_S, "both workers to make progress")
        started = time.monotonic()
        with namespace.cut():
            run.note("worker w cut off; worker outside keeps running")
            run.wait_for_owner("outside", len(run.probe.partitions), RECOVERY_S)
            run.note(f"outside owns every partition {time.monotonic() - started:.1f}s later")
            before = run.committed()
            run.wait_progress("the takeover", beyond=before, timeout=RECOVERY_S)
        run.note(f"healed after {time.monotonic() - started:.1f}s")
        partitions = len(run.probe.partitions)
        run.wait_for_owner("w", 1, RECOVERY_S)
        run.note(f"w back in the group {time.monotonic() - started:.1f}s after the cut")
        # The first incarnation's log up to here: the zombie's refused commit and rejoin.
        zombie = run.launcher.started[0].stderr().strip().splitlines()

        started = time.monotonic()
        with namespace.cut():
            run.note("worker w cut off again")
            run.wait_for_owner("outside", partitions, RECOVERY_S)
            before = run.committed()
            run.note(
                f"outside owns every partition {time.monotonic() - started:.1f}s later;"
                f" kill -9 of the zombie w at {before} committed inputs; restarted inside the cut"
            )
            run.workers["w"].kill()
            run.start_worker("w")  # inside the namespace: the prefix given to begin
            run.hold(10)
        healed = time.monotonic()
        run.note(f"healed after {healed - started:.1f}s")
        mine = _wait_commits_of(run, "w", RECOVERY_S)
        run.note(
            f"the restarted w owns {len(mine)} partition(s) and commits on them"
            f" {time.monotonic() - healed:.1f}s after the heal"
        )
        assert all(worker.alive() for worker in run.workers.values()), run.timeline
        run.ride_out()
        summary = run.finish()
    last = zombie[-1][:200] if zombie else "(nothing)"
    _report(capsys, "zombie fenced, then killed -9", f"{summary}\n  the zombie's last line: {last}")


def _wait_commits_of(run: FaultRun, instance: str, timeout: float) -> set[int]:
    """Until ``instance`` owns partitions and the group's committed offsets move on them (or
    they are committed to the end of the input); the partitions it owns then."""
    deadline = time.monotonic() + timeout
    mine: set[int] = set()
    base: dict[int, int] = {}
    while True:
        owned = run.probe.assignment().get(instance, set())
        committed = run.probe.committed()  # None while the coordinator does not answer
        if committed is not None and owned != mine:  # (re)assigned: measure from here
            mine, base = owned, {p: committed[p] for p in owned}
        elif committed is not None and mine:
            ends = run.probe.input_ends() or {}
            moved = any(committed[p] > base[p] for p in mine)
            if moved or all(committed[p] >= ends.get(p, 1 << 62) for p in mine):
                return mine
        run.ride_out_step()
        assert time.monotonic() < deadline, (
            f"{instance} did not commit on partitions of its own within {timeout:.0f}s:"
            f" {run.probe.assignment()}"
        )
        time.sleep(0.5)  # polling interval


def test_the_start_check_reaches_the_cluster_through_a_slow_network(
    cluster: ClusterHandle, namespace: Namespace
) -> None:
    """A command started inside 300 ms of delay each way (a worker restarted by its
    supervisor there, §2.5) must reach the cluster, not exit 3: each metadata request of the
    start check (runtime/kafka_reach.py) once had 0.5 s, and none was ever answered."""
    status = [sys.executable, "-m", "seqgate.cli", "status", "--kafka-timeout", "15"]
    argv = namespace.command([*status, "--bootstrap-servers", cluster.bootstrap_servers])
    with namespace.degrade(delay_ms=300, loss_pct=0):
        started = time.monotonic()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
        took = time.monotonic() - started
    assert "no broker answered" not in done.stderr, done.stderr
    assert done.returncode != 3, done.stderr
    assert took < 30, f"the start check took {took:.1f}s"
