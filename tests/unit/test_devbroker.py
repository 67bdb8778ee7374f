"""Tests of the development broker launcher (devtools/seqgate_devtools/broker) that start no
broker: its errors and its CLI (the real brokers are in tests/kafka/test_devbroker.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from seqgate_devtools.broker import (
    BrokerError,
    ensure_kafka_jars,
    start_broker,
)
from seqgate_devtools.cli.broker import broker as broker_cli

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
