"""Tests of the development broker launcher (seqgate/streams/devtools/broker) against real Kafka
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
from click.testing import CliRunner
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from seqgate.streams.cli.broker import broker as broker_cli
from seqgate.streams.devtools.broker import (
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
        from seqgate.streams.devtools.broker import start_broker
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


# --------------------------------------------------------------------------- expected errors


def test_missing_java_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("SEQGATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setenv("JAVA_HOME", str(empty))
    with pytest.raises(BrokerError, match=r"java not found: JAVA_HOME=.* has no bin/java") as info:
        start_broker(tmp_path / "data")
    assert "openjdk-17" in str(info.value)
    monkeypatch.delenv("JAVA_HOME")
    with pytest.raises(BrokerError) as info:
        start_broker(tmp_path / "data")
    assert info.value.message == (
        "java not found on PATH: install OpenJDK 17 (apt-get install openjdk-17-jre-headless) "
        "or set JAVA_HOME"
    )
    assert not (tmp_path / "data").exists()


def test_missing_maven_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("SEQGATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("MAVEN_HOME", raising=False)
    monkeypatch.delenv("M2_HOME", raising=False)
    with pytest.raises(BrokerError, match=r"^mvn not found on PATH: install Apache Maven"):
        ensure_kafka_jars()


def test_maven_failure_shows_the_tail_of_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "mvn"
    fake.write_text(
        "#!/bin/sh\n"
        "i=0; while [ $i -lt 50 ]; do echo noise $i; i=$((i+1)); done\n"
        "echo '[ERROR] Failed to collect dependencies: Could not transfer artifact' >&2\n"
        "exit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setenv("SEQGATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(BrokerError) as info:
        ensure_kafka_jars()
    err = info.value
    assert err.message.startswith(
        "Maven failed (exit code 1) resolving org.apache.kafka:kafka_2.13"
    )
    assert err.detail is not None
    assert "Could not transfer artifact" in err.detail
    assert "noise 49" in err.detail
    assert "noise 0\n" not in err.detail  # only the tail
    assert not (tmp_path / "home" / "kafka-4.1.1" / "libs").exists()


def test_refuses_to_wipe_a_foreign_directory(tmp_path: Path) -> None:
    data = tmp_path / "precious"
    data.mkdir()
    (data / "thesis.tex").write_text("keep me")
    with pytest.raises(BrokerError, match="refusing to wipe"):
        start_broker(data, state_file=tmp_path / "state.json")
    assert (data / "thesis.tex").read_text() == "keep me"


# --------------------------------------------------------------------------- CLI


def test_cli_error_is_one_line_and_exit_2(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"SEQGATE_HOME": str(tmp_path / "home"), "PATH": str(empty), "JAVA_HOME": None}
    result = CliRunner(env=env).invoke(broker_cli, ["up"])
    assert result.exit_code == 2, result.output
    assert result.stderr.splitlines() == [
        "error: java not found on PATH: install OpenJDK 17 "
        "(apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
    ]
    assert result.stdout == ""


def test_cli_status_and_down_when_not_running(tmp_path: Path) -> None:
    runner = CliRunner(env={"SEQGATE_HOME": str(tmp_path / "home")})
    status = runner.invoke(broker_cli, ["status"])
    assert status.exit_code == 1
    assert status.stdout.strip() == "not running"
    down = runner.invoke(broker_cli, ["down"])
    assert down.exit_code == 0
    assert "no broker running" in down.stdout


def test_cli_help_has_examples() -> None:
    runner = CliRunner()
    for command in (["--help"], ["up", "--help"], ["down", "--help"], ["status", "--help"]):
        result = runner.invoke(broker_cli, command)
        assert result.exit_code == 0
        assert "Example:" in result.stdout
        assert "seqgate broker" in result.stdout


@pytest.mark.kafka
def test_cli_up_status_down(tmp_path: Path) -> None:
    home = _home_sharing_jars(tmp_path / "home")
    env = _env_without_kafka_settings(SEQGATE_HOME=str(home))
    state_file = home / "broker" / "state.json"

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "seqgate.streams.cli.broker", *args],
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
