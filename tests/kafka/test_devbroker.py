"""Tests of the development broker launcher (devtools/seqgate_devtools/broker) against real Kafka
brokers."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]
from seqgate_devtools.broker import (
    BrokerError,
    BrokerHandle,
    broker_answers,
    broker_status,
    ensure_kafka_jars,
    is_running,
    load_state,
    running_broker,
    start_broker,
    stop_broker,
)

from tests.conftest import KafkaSource
from tests.support.paths import REPO

pytestmark = pytest.mark.own_broker  # it starts its own broker (seqgate broker up)

BOOTSTRAP_RE = re.compile(r"^127\.0\.0\.1:\d+$")


def _alive(pid: int) -> bool:
    """True if ``pid`` is a live process (a zombie waiting to be reaped is not alive)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def _wait_dead(pid: int, timeout: float = 30.0) -> bool:
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.2)
    return True


def _create_topic(bootstrap: str, topic: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, 1, 1)], operation_timeout=30).values():
        future.result(timeout=60)


def _env_without_kafka_settings(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SEQGATE_HOME", "PYTHONPATH")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.update(extra)
    return env


def _home_sharing_jars(home: Path) -> Path:
    """A fresh SEQGATE_HOME whose jar cache is the real one (no second Maven run)."""
    libs = ensure_kafka_jars()
    home.mkdir(parents=True)
    (home / libs.parent.name).symlink_to(libs.parent, target_is_directory=True)
    return home


@pytest.fixture(scope="module")
def launcher_broker(kafka_source: KafkaSource) -> Iterator[BrokerHandle]:
    """A broker started by the launcher: the session's one when it came from the launcher."""
    if kafka_source.handle is not None:
        yield kafka_source.handle
        return
    with running_broker() as handle:
        yield handle


# --------------------------------------------------------------------------- a real broker


@pytest.mark.kafka
def test_launcher_broker_answers_and_supports_transactions(
    launcher_broker: BrokerHandle, unique_name: str
) -> None:

    bootstrap = launcher_broker.bootstrap_servers
    assert BOOTSTRAP_RE.match(bootstrap)
    assert broker_answers(bootstrap)
    topic = f"{unique_name}-in"
    _create_topic(bootstrap, topic)

    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": unique_name})
    producer.init_transactions(60)
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"aborted")
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    producer.produce(topic, key=b"k", value=b"committed")
    producer.commit_transaction(30)

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique_name,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        seen: list[bytes] = []
        deadline = time.monotonic() + 30
        while b"committed" not in seen and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen.append(msg.value() or b"")
        assert seen == [b"committed"]

        # Consume-transform-produce: offsets committed inside a transaction.
        position = consumer.position([TopicPartition(topic, 0)])
        producer.begin_transaction()
        producer.produce(topic, key=b"k", value=b"second")
        producer.send_offsets_to_transaction(position, consumer.consumer_group_metadata(), 30)
        producer.commit_transaction(30)
        committed = consumer.committed([TopicPartition(topic, 0)], timeout=30)
        assert committed[0].offset == position[0].offset
    finally:
        consumer.close()


@pytest.mark.kafka
def test_launcher_broker_logs_to_its_data_dir(launcher_broker: BrokerHandle) -> None:
    assert "Kafka Server started" in launcher_broker.log_file.read_text(errors="replace")
    assert launcher_broker.stdout_file.exists()
    assert "Kafka Server started" not in launcher_broker.stdout_file.read_text(errors="replace")
    state = json.loads(launcher_broker.state_file.read_text()) if launcher_broker.state_file else {}
    assert state.get("pid") == launcher_broker.pid


@pytest.mark.kafka
def test_stop_broker_leaves_no_process(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    handle = start_broker(tmp_path / "data", state_file=state_file, detach=False)
    try:
        assert is_running(handle)
        assert broker_answers(handle.bootstrap_servers)
        assert load_state(state_file) == handle
        assert broker_status(state_file) == handle
        with pytest.raises(BrokerError, match="in use by a running Kafka broker"):
            start_broker(tmp_path / "data", state_file=tmp_path / "other.json")
        assert is_running(handle)
    finally:
        stop_broker(handle, timeout=30)
    assert not Path(f"/proc/{handle.pid}").exists()  # exited and reaped
    assert not state_file.exists()
    assert broker_status(state_file) is None
    assert not broker_answers(handle.bootstrap_servers, timeout=2.0)
    stop_broker(handle)  # stopping twice is fine
    stop_broker(state_file)


@pytest.mark.kafka
def test_watchdog_stops_broker_when_owner_dies(tmp_path: Path) -> None:
    """running_broker's broker does not outlive a process that dies without cleaning up."""
    script = textwrap.dedent(
        f"""
        import os, sys
        from pathlib import Path
        from seqgate_devtools.broker import start_broker
        h = start_broker(Path({str(tmp_path / "data")!r}),
                         state_file=Path({str(tmp_path / "state.json")!r}), detach=False)
        print(h.pid, flush=True)
        os._exit(0)
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", script],
        env=_env_without_kafka_settings(),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    pid = int(proc.stdout.split()[-1])
    try:
        assert _wait_dead(pid, timeout=40), f"broker {pid} outlived its owner"
    finally:
        if _alive(pid):
            os.killpg(pid, 9)


@pytest.mark.kafka
def test_cli_up_status_down(tmp_path: Path) -> None:
    home = _home_sharing_jars(tmp_path / "home")
    env = _env_without_kafka_settings(SEQGATE_HOME=str(home))
    state_file = home / "broker" / "state.json"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "seqgate_devtools.cli.broker", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )

    try:
        up = cli("up")
        assert up.returncode == 0, up.stderr
        bootstrap = up.stdout.splitlines()[-1]
        assert BOOTSTRAP_RE.match(bootstrap), up.stdout
        assert "starting Apache Kafka 4.1.1" in up.stderr
        pid = json.loads(state_file.read_text())["pid"]
        # The broker outlives the `up` process and answers.
        assert _alive(pid)
        assert broker_answers(bootstrap)

        status = cli("status")
        assert status.returncode == 0, status.stderr
        assert status.stdout.strip() == f"{bootstrap} pid={pid}"

        again = cli("up")  # idempotent
        assert again.returncode == 0, again.stderr
        assert again.stdout.splitlines()[-1] == bootstrap
        assert "already running" in again.stderr

        down = cli("down")
        assert down.returncode == 0, down.stderr
        assert down.stdout.strip() == f"stopped broker {bootstrap} (pid {pid})"
        assert not _alive(pid)
        assert not state_file.exists()

        gone = cli("status")
        assert gone.returncode == 1
        assert gone.stdout.strip() == "not running"
    finally:
        stop_broker(state_file)  # no-op unless an assertion failed while it ran
