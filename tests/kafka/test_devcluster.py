"""The development cluster (devtools/seqgate_devtools/broker/cluster*.py) against real Kafka:
three KRaft nodes, replication with min ISR 2, nodes stopped and started in place, the CLI,
SASL_SSL, and a listen address reached from a network namespace.

One plaintext cluster serves the class TestReplication (in file order: the outage tests leave
every node running again); the other tests start their own."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from seqgate_devtools.broker import (
    ClusterHandle,
    ensure_kafka_jars,
    load_cluster_state,
    running_cluster,
    stop_cluster,
)
from seqgate_devtools.broker.cluster_handle import node_status
from seqgate_devtools.errors import BrokerError

from tests.support.kafka_helpers import wait_for
from tests.support.paths import REPO
from tests.support.required import unavailable

pytestmark = pytest.mark.own_broker  # it starts its own cluster (seqgate broker up --nodes 3)

NOT_ENOUGH = (KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND)
SHUTDOWN_LINE = re.compile(r"(?i)shut ?down complete")


def _clean_shutdown_lines(cluster: ClusterHandle, node_id: int) -> int:
    """Lines of the node's log that only a SIGTERM (never a SIGKILL) writes."""
    return len(SHUTDOWN_LINE.findall(cluster.node(node_id).log_file.read_text(errors="replace")))


def _listing(data_dir: Path) -> list[str]:
    """The node's data directory, two levels deep, for a failure message."""
    return sorted(str(p.relative_to(data_dir)) for p in data_dir.glob("*/*"))[:60]


def _create_topic(cluster: ClusterHandle, topic: str, partitions: int = 1) -> None:
    """A topic with the cluster's default replication factor (3), all replicas in sync, and
    its first partition's log on every node's disk.

    The last condition is not implied by the others: a KRaft controller creates a partition
    with every replica in its ISR at once, and each broker creates the log only when it applies
    that metadata record. A node killed in between holds no ``<topic>-0`` directory at all
    (clean-clone run 4 of 2026-12-06: the leader was killed before it had one)."""
    admin = AdminClient(cluster.client_settings())
    for future in admin.create_topics([NewTopic(topic, partitions)], operation_timeout=30).values():
        future.result(timeout=60)
    wait_for(lambda: _isr_size(cluster, topic) == 3, 60, f"{topic} with ISR 3")
    for node in cluster.nodes:
        wait_for(
            partial(_has_segment, node.data_dir, topic),
            60,
            f"a log segment of {topic}-0 on node {node.node_id}",
        )


def _has_segment(data_dir: Path, topic: str) -> bool:
    return any(data_dir.glob(f"kraft/{topic}-0/*.log"))


def _isr_size(cluster: ClusterHandle, topic: str) -> int:
    """The ISR of ``topic``[0]; 0 while the broker asked has not learned of the topic yet
    (create_topics returns when the controller has it, before every broker does)."""
    try:
        return len(cluster.partition(topic).isr)
    except BrokerError:
        return 0


def _produce(
    cluster: ClusterHandle, topic: str, values: list[bytes], **extra: str | int | bool
) -> list[KafkaError | None]:
    """Produce with acks=all; the delivery error (or None) of each value."""
    results: list[KafkaError | None] = []
    producer = Producer(
        {
            **cluster.client_settings(),
            "acks": "all",
            "message.timeout.ms": 60000,
            "log_level": 0,
            **extra,
        }
    )
    for value in values:
        producer.produce(topic, value=value, on_delivery=lambda err, _msg: results.append(err))
    assert producer.flush(90) == 0
    return results


def _consume(cluster: ClusterHandle, topic: str, expected: int) -> list[bytes]:
    consumer = Consumer(
        {
            **cluster.client_settings(),
            "group.id": f"g-{uuid.uuid4().hex[:8]}",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 60
        while len(seen) < expected and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg.value() or b"")
        return seen
    finally:
        consumer.close()


def _transaction_commits(cluster: ClusterHandle, topic: str) -> None:
    producer = Producer({**cluster.client_settings(), "transactional.id": f"tx-{topic}"})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, value=b"aborted")
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, value=b"committed")
    producer.commit_transaction(30)
    assert _consume(cluster, topic, 1) == [b"committed"]


def _java_processes_naming(path: Path) -> list[str]:
    out = subprocess.run(["pgrep", "-af", "java"], capture_output=True, text=True, check=False)
    return [line for line in out.stdout.splitlines() if str(path) in line]


@pytest.fixture(scope="class")
def cluster() -> Iterator[ClusterHandle]:
    with running_cluster(3) as handle:
        yield handle


@pytest.fixture(autouse=True)
def _every_node_running_after(request: pytest.FixtureRequest) -> Iterator[None]:
    """A replication test that fails between stopping and starting a node must not leave the
    shared cluster short for the next one (clean-clone run 4: one failure became two)."""
    yield
    if "cluster" not in request.fixturenames:
        return
    handle: ClusterHandle = request.getfixturevalue("cluster")
    for node in handle.nodes:
        if not handle.node_running(node.node_id):
            handle.start_node(node.node_id)


# --------------------------------------------------------------------------- replication


class TestReplication:
    def test_three_brokers_in_metadata(self, cluster: ClusterHandle) -> None:
        assert cluster.registered_brokers() == {1, 2, 3}
        assert len(cluster.bootstrap_servers.split(",")) == 3
        assert sorted(cluster.node_pids) == [1, 2, 3]
        assert len({n.data_dir for n in cluster.nodes}) == 3
        for node in cluster.nodes:
            assert cluster.node_answers(node.node_id)
            assert "Kafka Server started" in node.log_file.read_text(errors="replace")
        state = load_cluster_state(cluster.data_dir / "state.json")
        assert state is not None and state.node_pids == cluster.node_pids

    def test_topic_has_three_replicas_in_sync(self, cluster: ClusterHandle) -> None:
        _create_topic(cluster, "rf3")  # no replication factor given: the cluster's default
        state = cluster.partition("rf3")
        assert sorted(state.replicas) == [1, 2, 3]
        assert sorted(state.isr) == [1, 2, 3]

    def test_transactional_producer_commits(self, cluster: ClusterHandle) -> None:
        _create_topic(cluster, "tx")
        _transaction_commits(cluster, "tx")

    def test_one_node_killed_then_started(self, cluster: ClusterHandle) -> None:
        _create_topic(cluster, "one-down")
        leader = cluster.partition("one-down").leader
        clean = _clean_shutdown_lines(cluster, leader)
        cluster.stop_node(leader, kill=True)
        assert _clean_shutdown_lines(cluster, leader) == clean  # SIGKILL: no clean shutdown
        assert not cluster.node_running(leader)
        assert leader not in cluster.node_pids
        line, ok = node_status(cluster, cluster.node(leader))
        assert not ok and line.endswith(" down"), line
        assert _produce(cluster, "one-down", [b"a", b"b"]) == [None, None]
        assert _consume(cluster, "one-down", 2) == [b"a", b"b"]
        assert len(cluster.partition("one-down").isr) == 2
        data_dir = cluster.node(leader).data_dir
        segments = sorted(data_dir.glob("kraft/one-down-0/*.log"))
        assert segments, f"node {leader} has no segment of one-down-0: {_listing(data_dir)}"
        data_file = segments[0]

        cluster.start_node(leader)
        assert cluster.node_running(leader)
        assert data_file.exists()  # the node's data survived: start-node does not wipe
        wait_for(lambda: len(cluster.partition("one-down").isr) == 3, 60, "ISR back to 3")
        assert cluster.registered_brokers() == {1, 2, 3}

    def test_two_nodes_down_refuses_acks_all(self, cluster: ClusterHandle) -> None:
        _create_topic(cluster, "two-down")
        first, second = (n.node_id for n in cluster.nodes[:2])
        cluster.stop_node(first, kill=True)
        wait_for(lambda: len(cluster.partition("two-down").isr) == 2, 60, "ISR of 2")
        clean = _clean_shutdown_lines(cluster, second)
        cluster.stop_node(second)  # controlled shutdown: the controller shrinks the ISR to 1
        assert _clean_shutdown_lines(cluster, second) > clean
        results = _produce(cluster, "two-down", [b"x"], retries=0, **{"enable.idempotence": False})
        error = results[0]
        assert error is not None and error.code() in NOT_ENOUGH, error

        cluster.start_node(first)
        cluster.start_node(second)
        wait_for(lambda: len(cluster.partition("two-down").isr) == 3, 90, "ISR back to 3")
        assert _produce(cluster, "two-down", [b"y"]) == [None]


# --------------------------------------------------------------------------- the CLI


def _cli(home: Path) -> Callable[..., subprocess.CompletedProcess[str]]:
    env = {k: v for k, v in os.environ.items() if k not in ("SEQGATE_HOME", "PYTHONPATH")}
    env.update(SEQGATE_HOME=str(home), PYTHONPATH=str(REPO))

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "seqgate.cli", "broker", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )

    return run


def test_cli_up_status_stop_start_down(tmp_path: Path) -> None:
    libs = ensure_kafka_jars()
    home = tmp_path / "home"
    home.mkdir()
    (home / libs.parent.name).symlink_to(libs.parent, target_is_directory=True)
    data = tmp_path / "data"
    cli = _cli(home)
    try:
        up = cli("up", "--nodes", "3", "--data-dir", str(data))
        assert up.returncode == 0, up.stderr
        bootstrap = up.stdout.splitlines()[-1]
        ports = [address.rpartition(":")[2] for address in bootstrap.split(",")]
        assert [a.rpartition(":")[0] for a in bootstrap.split(",")] == ["127.0.0.1"] * 3
        status = cli("status")
        assert status.returncode == 0, status.stdout + status.stderr
        lines = status.stdout.splitlines()
        assert [line.split()[:3] for line in lines] == [
            ["node", str(i), f"127.0.0.1:{port}"] for i, port in enumerate(ports, 1)
        ]
        assert all(line.endswith(" running") for line in lines)
        assert sorted(p.name for p in data.glob("node-*")) == ["node-1", "node-2", "node-3"]
        again = cli("up", "--nodes", "3", "--data-dir", str(data))  # idempotent
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines()[-1] == bootstrap
        assert "already running" in again.stderr
        single = cli("up")  # a single node would orphan the cluster's record
        assert single.returncode == 2
        assert "a dev cluster of 3 nodes is running" in single.stderr

        assert cli("stop-node", "2").returncode == 0
        degraded = cli("status")
        assert degraded.returncode == 1
        assert degraded.stdout.splitlines()[1].endswith(" down")
        assert degraded.stdout.splitlines()[2].endswith(" running")
        unknown = cli("stop-node", "9")
        assert unknown.returncode == 2
        assert unknown.stderr.strip().splitlines()[-1].startswith("error: no node 9")
        started = cli("start-node", "2")
        assert started.returncode == 0, started.stderr
        assert cli("status").returncode == 0
        assert cli("status").stdout.splitlines()[1].split()[2] == f"127.0.0.1:{ports[1]}"

        down = cli("down")
        assert down.returncode == 0, down.stderr
        assert _java_processes_naming(data) == []
        assert cli("status").returncode == 1
    finally:
        stop_cluster(home / "broker" / "state.json")


# --------------------------------------------------------------------------- SASL_SSL


def test_sasl_ssl_cluster_replicates_and_commits_transactions(tmp_path: Path) -> None:
    with running_cluster(3, security="sasl_ssl", data_dir=tmp_path / "secure") as secure:
        assert secure.client_properties is not None and secure.client_properties.exists()
        assert secure.registered_brokers() == {1, 2, 3}
        _create_topic(secure, "secure-tx")  # ISR 3: replicas fetch over SASL_SSL
        _transaction_commits(secure, "secure-tx")
        plain = AdminClient({"bootstrap.servers": secure.bootstrap_servers, "log_level": 0})
        with pytest.raises(Exception):  # noqa: B017 - any failure: a plaintext client gets nothing
            plain.list_topics(timeout=3)
    assert _java_processes_naming(tmp_path / "secure") == []


# --------------------------------------------------------------------------- network namespace


def _can_make_namespaces() -> bool:
    return os.geteuid() == 0 and shutil.which("ip") is not None and sys.platform == "linux"


@pytest.fixture
def veth(tmp_path: Path) -> Iterator[tuple[str, str]]:
    """A network namespace joined to this one by a veth pair: (namespace, host-side address)."""
    if not _can_make_namespaces():
        unavailable("a network namespace", "it needs root and ip (iproute2) on Linux")
    tag = uuid.uuid4().hex[:6]
    ns, host_if, ns_if = f"sgc{tag}", f"sgh{tag}", f"sgn{tag}"
    host_ip, ns_ip = "10.231.7.1", "10.231.7.2"
    steps = [
        ["ip", "netns", "add", ns],
        ["ip", "link", "add", host_if, "type", "veth", "peer", "name", ns_if],
        ["ip", "link", "set", ns_if, "netns", ns],
        ["ip", "addr", "add", f"{host_ip}/30", "dev", host_if],
        ["ip", "link", "set", host_if, "up"],
        ["ip", "-n", ns, "addr", "add", f"{ns_ip}/30", "dev", ns_if],
        ["ip", "-n", ns, "link", "set", ns_if, "up"],
    ]
    try:
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                unavailable("a network namespace", f"{' '.join(step)}: {done.stderr.strip()}")
        yield ns, host_ip
    finally:
        subprocess.run(["ip", "link", "del", host_if], capture_output=True, check=False)
        subprocess.run(["ip", "netns", "del", ns], capture_output=True, check=False)


def test_listen_address_serves_a_network_namespace(tmp_path: Path, veth: tuple[str, str]) -> None:
    ns, host_ip = veth
    with running_cluster(3, listen_address=host_ip, data_dir=tmp_path / "ns") as reachable:
        assert reachable.bootstrap_servers.count(f"{host_ip}:") == 3
        _create_topic(reachable, "from-ns")
        script = textwrap.dedent(
            f"""
            from confluent_kafka import Producer
            from confluent_kafka.admin import AdminClient
            conf = {{"bootstrap.servers": {reachable.bootstrap_servers!r}}}
            brokers = AdminClient(conf).list_topics(timeout=20).brokers
            print(sorted(brokers))
            p = Producer({{**conf, "acks": "all", "message.timeout.ms": 30000}})
            for i in range(3):
                p.produce("from-ns", value=b"ns%d" % i)
            print("unflushed", p.flush(40))
            """
        )
        done = subprocess.run(
            ["ip", "netns", "exec", ns, sys.executable, "-c", script],
            capture_output=True,
            text=True,
            timeout=90,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines() == ["[1, 2, 3]", "unflushed 0"]
        assert _consume(reachable, "from-ns", 3) == [b"ns0", b"ns1", b"ns2"]
