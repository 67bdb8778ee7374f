"""Exactly-once on a three-node cluster through broker failures (issue 17, §2.1, §2.2, §2.3, §2.5).

The session's KRaft cluster of three combined nodes (``kafka_cluster``, tests/conftest.py:
replication factor 3, ``min.insync.replicas=2``) serves them. Each test runs one worker (the
real ``seqgate worker`` process) over a workload with redeliveries and late deliveries (200,000
events for 20,000 objects in the soak tier, 30,000 for 3,000 in the fast tier:
tests/support/tier.py), hurts the cluster while the input is fed, and ends with ``verify``
exact and every RocksDB store equal to the replay. What happened and how long each recovery
took is printed in the test output (``-s`` not needed: it is written past the capture).

§2.5, a kill -9 of the worker during each fault: the worker is SIGKILLed and started again
while the leader of an outbox partition is down, while the second node of the rolling restart
is stopped, and while two of three nodes are down (the restarted worker must wait out the
rest of the outage and resume by itself). The bridges' test kills no worker (it has none).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from seqgate_devtools.broker.cluster_handle import ClusterHandle

from tests.support.bridge_outage import Outage, bridges_through_outage
from tests.support.cluster_faults import REPLICAS, FaultRun, fault_run
from tests.support.cluster_probe import ClusterProbe
from tests.support.moto_helpers import moto_server
from tests.support.tier import sized
from tests.support.torture_helpers import WorkerProcess, Workload, build_workload

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.tier("fast", "soak")]

EVENTS = sized(fast=30_000, soak=200_000)
IDENTITIES = sized(fast=3_000, soak=20_000)
PRELOAD = sized(fast=9_000, soak=60_000)
NODES = (1, 2, 3)
LOG_LEVEL = "warning"  # what an operator runs; the flood check reads it
RECOVERY_S = 120.0  # a leader election, a coordinator move or a node's return takes seconds
# Whether the leaders test also SIGKILLs the group coordinator (about 35 s more: the soak
# tier; the fast tier moves the transaction coordinator, the same kind of fault).
GROUP_COORDINATOR_TOO = sized(fast=False, soak=True)


@pytest.fixture
def cluster(kafka_cluster: ClusterHandle) -> ClusterHandle:
    """The session's cluster, every node running again after each test (tests/conftest.py)."""
    return kafka_cluster


@pytest.fixture(scope="module")
def workload() -> Workload:
    return build_workload(17, EVENTS, IDENTITIES)


def _report(capsys: pytest.CaptureFixture[str], title: str, summary: str) -> None:
    with capsys.disabled():
        print(f"\n[cluster fault: {title}] {summary}")


def _kill_and_return(run: FaultRun, cluster: ClusterHandle, node: int, why: str) -> None:
    """SIGKILL ``node``; see the worker progress without it; start it; wait for full ISR."""
    before = run.committed()
    killed = time.monotonic()
    cluster.stop_node(node, kill=True)
    run.note(f"SIGKILL node {node} ({why}) at {before} committed inputs")
    run.wait_progress(f"node {node} was killed", beyond=before, timeout=RECOVERY_S)
    cluster.start_node(node)
    back = run.cluster.wait_fully_replicated(run.topics[:3], REPLICAS, RECOVERY_S)
    run.note(
        f"node {node} back; full ISR {back:.1f}s after its start,"
        f" {time.monotonic() - killed:.1f}s after the kill"
    )


def test_leaders_and_transaction_coordinator_sigkilled(
    cluster: ClusterHandle,
    workload: Workload,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """§2.1 and §2.5: SIGKILL the leader of input[0], then of outbox[0], then the worker's
    transaction coordinator (the leader of its ``__transaction_state`` partition), then (soak
    tier) its group coordinator; kill -9 the worker while a node is down. Each node comes
    back; nothing is lost or duplicated."""
    with fault_run(
        cluster.bootstrap_servers, unique_name, tmp_path, workload, log_level=LOG_LEVEL
    ) as run:
        run.begin(PRELOAD)
        config = run.config
        input_leader = run.cluster.leader(config.input_topic, 0)
        _kill_and_return(run, cluster, input_leader, f"leader of {config.input_topic}[0]")

        outbox_leader = run.cluster.leader(config.outbox_topic, 0)
        before = run.committed()
        cluster.stop_node(outbox_leader, kill=True)
        run.note(f"SIGKILL node {outbox_leader} (leader of {config.outbox_topic}[0])")
        run.workers["w"].kill()
        run.note("kill -9 of the worker while that node is down; restarted")
        run.start_worker()
        run.wait_progress("the worker restarted without a node", beyond=before, timeout=RECOVERY_S)
        cluster.start_node(outbox_leader)
        run.cluster.wait_fully_replicated(run.topics[:3], REPLICAS, RECOVERY_S)
        run.note(f"node {outbox_leader} back, full ISR")

        transactional_id = run.transactional_id("w")
        assert run.cluster.transaction_state_written(transactional_id), transactional_id
        coordinator = run.cluster.transaction_coordinator(transactional_id)
        _kill_and_return(run, cluster, coordinator, "transaction coordinator of the worker")

        if GROUP_COORDINATOR_TOO:
            # The group coordinator: librdkafka's send_offsets_to_transaction may hang past
            # its timeout when it goes (runtime/bounded_call.py); the worker must not.
            group_coordinator = run.cluster.group_coordinator(config.application_id)
            _kill_and_return(run, cluster, group_coordinator, "group coordinator of the worker")

        run.ride_out()
        summary = run.finish()
    _report(capsys, "leaders and coordinator SIGKILLed", summary)


@pytest.mark.tier("soak")  # fast tier: a node SIGKILLed and back, in the leaders test
def test_rolling_restart_under_load(
    cluster: ClusterHandle,
    workload: Workload,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """§2.2 and §2.5: restart the three nodes one at a time (SIGTERM, start, wait for the
    ISR); while the second one is stopped, kill -9 the worker and start it again: it must
    fence its predecessor and commit without that node."""
    with fault_run(
        cluster.bootstrap_servers, unique_name, tmp_path, workload, log_level=LOG_LEVEL
    ) as run:
        run.begin(PRELOAD)
        for node in NODES:
            before = run.committed()
            stopped = time.monotonic()
            cluster.stop_node(node)
            down = run.committed()
            run.note(f"SIGTERM node {node}: stopped in {time.monotonic() - stopped:.1f}s")
            if node == NODES[1]:
                killed = run.committed()
                run.workers["w"].kill()
                run.note(f"kill -9 of the worker while node {node} is stopped; restarted")
                run.start_worker()
                run.wait_progress(
                    f"the kill -9 without node {node}", beyond=killed, timeout=RECOVERY_S
                )
            cluster.start_node(node)
            run.cluster.wait_fully_replicated(run.topics[:3], REPLICAS, RECOVERY_S)
            run.note(
                f"node {node} restarted; full ISR {time.monotonic() - stopped:.1f}s after the"
                f" stop; the worker committed {run.committed() - down} inputs meanwhile"
            )
            run.wait_progress(f"the restart of node {node}", beyond=before, timeout=RECOVERY_S)
        run.ride_out()
        summary = run.finish()
    _report(capsys, "rolling restart", summary)


def test_a_worker_bootstrapped_from_one_node_outlives_that_node(
    cluster: ClusterHandle,
    workload: Workload,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """§3: with metadata.recovery.strategy=none (runtime/kafka_clients.py) a client never
    goes back to its bootstrap list; it must not need it either. The worker is given one
    node's address only; that node is SIGKILLed and brought back: the worker keeps going on
    the brokers it learnt from the metadata. The node coordinates neither the worker's group
    nor its transactions: losing the group coordinator is the librdkafka hang above, which
    ends in a restart, and a restart given only a dead address cannot bootstrap."""
    probe = ClusterProbe(cluster.bootstrap_servers)
    probe.create_coordinator_topics()
    application_id = f"{unique_name}-app"  # tests.support.kafka_helpers.make_config's
    coordinators = {
        probe.transaction_coordinator(f"{application_id}-w"),
        probe.offsets_coordinator(application_id),
    }
    only = next(node for node in NODES if node not in coordinators)
    with fault_run(
        cluster.bootstrap_servers,
        unique_name,
        tmp_path,
        workload,
        worker_bootstrap=cluster.node_address(only),
        log_level=LOG_LEVEL,
    ) as run:
        run.begin(PRELOAD)
        _kill_and_return(run, cluster, only, "the worker's only bootstrap address")
        run.ride_out()
        assert len(run.launcher.started) == 1, "the worker was restarted"
        summary = run.finish()
    _report(capsys, "bootstrap node lost", summary)


# How long the first part of the outage lasts, in both tiers: the worker's one warning line
# comes after its timed-out calls (a 30 s outage was seen to end before it).
OUTAGE_S = 45.0
# The transaction open when the outage began stays open through it: the broker aborts it
# (and fences the producer, which the worker then replaces) once it outlives
# --transaction-timeout-ms. Nor can the worker heartbeat its group: past
# --session-timeout-ms the group drops it, and its rejoin may be fenced as a static member
# (exit 1, docs/processor.md). This test's outage, and a node's return, fit in both.
OUTAGE_TIMEOUTS_MS = 120_000
OUTAGE_WARNING = "Kafka is not taking the worker's writes"
RENEWED = "a new producer replaces the lost one"
# How long the outage goes on after the kill -9 of the worker in it: past the 30 s bound of
# the restarted worker's init_transactions (WorkerConfig.kafka_timeout_s), which cannot
# finish while the transaction log cannot take writes.
RESTARTED_OUTAGE_S = 40.0


def test_two_of_three_nodes_down(
    cluster: ClusterHandle,
    workload: Workload,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """§2.3 and §2.5: below min.insync.replicas nothing can be written. The worker must stay
    alive, say so in one warning line naming the partitions that cannot take writes (not a
    line per attempt), lose and duplicate nothing, and resume by itself when a node returns
    (the call that waited may be left in librdkafka's hang: the worker then replaces its
    producer, runtime/renewal.py). Then, the two nodes still down, it is killed -9 and
    started again: the new incarnation (which cannot fence its predecessor, nor join its
    group, until the cluster takes writes) must stay alive through the rest of the outage
    without a flood of warnings and resume by itself when a node returns. The worker is
    started twice in all: no restart beyond the deliberate one."""
    with fault_run(
        cluster.bootstrap_servers,
        unique_name,
        tmp_path,
        workload,
        log_level=LOG_LEVEL,
        transaction_timeout_ms=OUTAGE_TIMEOUTS_MS,
        session_timeout_ms=OUTAGE_TIMEOUTS_MS,
    ) as run:
        run.begin(PRELOAD)
        first, second = NODES[0], NODES[1]
        cluster.stop_node(first, kill=True)
        run.note(f"SIGKILL node {first}")
        # The ISR shrinks while the controller quorum (two of three) can still record it.
        wait_s = _wait_isr_without(run.cluster, run.topics[:3], first)
        run.note(f"ISR without node {first} after {wait_s:.1f}s")
        # While the coordinators are down the probe cannot read the committed offsets:
        # progress is measured against what was committed before the outage.
        run.wait_progress(f"node {first} went down", timeout=RECOVERY_S)
        before = run.committed()
        cluster.stop_node(second, kill=True)
        down_at = time.monotonic()
        run.note(f"SIGKILL node {second}: two of three nodes down")
        worker = run.workers["w"]
        worker.survives(OUTAGE_S - (time.monotonic() - down_at))
        warnings = _lines(worker, OUTAGE_WARNING)
        assert 1 <= len(warnings) <= 3, worker.stderr()[-4000:]
        run.note(f"after {OUTAGE_S:.0f}s: alive, {len(warnings)} outage warning line(s)")
        said = warnings[0]

        worker.kill()
        restarted = run.start_worker()
        run.note("kill -9 of the worker with two of three nodes still down; restarted")
        # The outage goes on: an exit of the new incarnation is restarted (and noted) here as
        # a supervisor would, and then fails the count of starts below.
        run.hold(RESTARTED_OUTAGE_S)
        repeated = _lines(restarted, OUTAGE_WARNING)
        assert len(repeated) <= 3, restarted.stderr()[-4000:]
        state = "alive" if restarted.alive() else f"exited {restarted.process.returncode}"
        run.note(
            f"the restarted worker after {RESTARTED_OUTAGE_S:.0f}s of the outage: {state},"
            f" {len(repeated)} outage warning line(s)"
        )

        cluster.start_node(first)
        back = run.wait_progress(f"node {first} returned", beyond=before, timeout=RECOVERY_S)
        renewed = _lines(run.workers["w"], RENEWED)
        how = f", after replacing its producer: {renewed[0][:300]}" if renewed else ""
        extra = len(run.launcher.started) - 2
        by = "by itself" if extra == 0 else f"after {extra} restart(s) beyond the kill -9"
        run.note(f"resumed {by} {back:.1f}s after node {first} started{how}")
        cluster.start_node(second)
        run.ride_out()
        summary = run.finish()
        starts = len(run.launcher.started)
        assert starts == 2, (
            f"the worker was started {starts} times, not 2 (the first start and the one after"
            f" the kill -9): restarted beyond the kill -9:\n{summary}"
        )
    _report(capsys, "two of three nodes down, kill -9 in it", f"{summary}\n  said: {said[:400]}")


def _lines(worker: WorkerProcess, text: str) -> list[str]:
    """The lines of ``worker``'s log that contain ``text``."""
    return [line for line in worker.stderr().splitlines() if text in line]


def test_bridges_refuse_their_sources_while_two_of_three_nodes_are_down(
    cluster: ClusterHandle, unique_name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """§2.3, the bridges: below min.insync.replicas the HTTP bridge answers 503 and the SQS
    bridge deletes nothing, each saying so once; when a node returns everything is taken,
    nothing lost (tests/support/bridge_outage.py)."""
    probe = ClusterProbe(cluster.bootstrap_servers)
    first, second = NODES[0], NODES[1]
    topics = [f"{unique_name}.events", f"{unique_name}.rejected"]

    def two_down() -> None:
        cluster.stop_node(first, kill=True)
        _wait_isr_without(probe, topics, first)
        cluster.stop_node(second, kill=True)

    def one_back() -> str:
        cluster.start_node(first)
        return cluster.bootstrap_servers

    outage = Outage(
        f"nodes {first} and {second} down",
        cluster.bootstrap_servers,
        two_down,
        one_back,
        replication_factor=REPLICAS,
    )
    with moto_server() as moto_endpoint:
        report = bridges_through_outage(outage, moto_endpoint, unique_name)
    _report(capsys, "bridges, two of three nodes down", report)


def _wait_isr_without(probe: ClusterProbe, topics: list[str], node: int) -> float:
    """How long the ISR of ``topics`` took to drop ``node`` (the controller quorum, two of
    three, can still record it)."""
    started = time.monotonic()
    deadline = started + RECOVERY_S
    while any(node in s.isr for t in topics for s in probe.partitions(t)):
        assert time.monotonic() < deadline, f"node {node} still in an ISR"
        time.sleep(0.5)  # polling interval
    return time.monotonic() - started
