"""Exactly-once on a three-node cluster through broker failures (issue 17, §2.1, §2.2, §2.3, §2.5).

One KRaft cluster of three combined nodes serves the module (replication factor 3,
``min.insync.replicas=2``). Each test runs one worker (the real ``seqgate worker`` process) over
a workload of 200,000 events for 20,000 objects with redeliveries and late deliveries, hurts
the cluster while the input is fed, and ends with ``verify`` exact and every RocksDB store
equal to the replay. What happened and how long each recovery took is printed in the test
output (``-s`` not needed: it is written past the capture).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seqgate.streams.devtools.broker.cluster import running_cluster
from seqgate.streams.devtools.broker.cluster_handle import ClusterHandle
from tests.support.cluster_faults import REPLICAS, FaultRun, fault_run
from tests.support.torture_helpers import Workload, build_workload

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

EVENTS = 200_000
IDENTITIES = 20_000
PRELOAD = 60_000
NODES = (1, 2, 3)
LOG_LEVEL = "warning"  # what an operator runs; the flood check reads it
RECOVERY_S = 120.0  # a leader election, a coordinator move or a node's return takes seconds


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ClusterHandle]:
    with running_cluster(3, data_dir=tmp_path_factory.mktemp("cluster")) as handle:
        yield handle


@pytest.fixture(autouse=True)
def all_nodes_back(cluster: ClusterHandle) -> Iterator[None]:
    """Whatever a test did, the next one starts on a whole cluster."""
    yield
    for node in NODES:
        if not cluster.node_running(node):
            cluster.start_node(node)


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
    transaction coordinator (the leader of its ``__transaction_state`` partition), then its
    group coordinator; kill -9 the worker while a node is down. Each node comes back; nothing
    is lost or duplicated."""
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

        # The group coordinator: librdkafka's send_offsets_to_transaction may hang past its
        # timeout when it goes (runtime/bounded_call.py); the worker must not.
        group_coordinator = run.cluster.group_coordinator(config.application_id)
        _kill_and_return(run, cluster, group_coordinator, "group coordinator of the worker")

        run.ride_out()
        summary = run.finish()
    _report(capsys, "leaders and coordinator SIGKILLed", summary)


def test_rolling_restart_under_load(
    cluster: ClusterHandle,
    workload: Workload,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """§2.2: restart the three nodes one at a time (SIGTERM, start, wait for the ISR)."""
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
