"""docs/operations.md's exit-code table against the commands themselves: every command has
a row, and every command that opens Kafka ends with code 3 and one line when no broker
answers, and with code 2 and one line for a client property librdkafka does not know.
Each command runs as its own process (no traceback may reach stderr)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from seqgate.cli import cli
from tests.support.environment import clean_env
from tests.support.kafka_helpers import closed_port
from tests.support.paths import REPO

TABLE_MARK = "<!-- exit-codes:"


def documented_rows() -> dict[str, list[str]]:
    """{command: [cell for 0, 1, 2, 3]} from the table after the marker."""
    text = (REPO / "docs" / "operations.md").read_text()
    lines = text[text.index(TABLE_MARK) :].splitlines()[1:]
    rows: dict[str, list[str]] = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = cells[1:]
    return rows


def leaf_commands() -> dict[str, click.Command]:
    found: dict[str, click.Command] = {}

    def walk(command: click.Command, path: list[str]) -> None:
        if isinstance(command, click.Group):
            for name, child in command.commands.items():
                walk(child, [*path, name])
        else:
            found[" ".join(path)] = command

    walk(cli, [])
    return found


def opens_kafka(command: click.Command) -> bool:
    return any(param.name == "kafka_properties" for param in command.params)


def test_every_command_has_a_row_and_every_row_a_command() -> None:
    assert sorted(documented_rows()) == sorted(leaf_commands())


def test_exactly_the_commands_that_open_kafka_document_code_3() -> None:
    rows = documented_rows()
    for name, command in leaf_commands().items():
        documented = rows[name][3] not in ("—", "")
        assert documented == opens_kafka(command), name


def required_arguments(command: str, tmp: Path) -> list[str]:
    notifications = tmp / "n.jsonl"
    notifications.write_text("")
    return {
        "worker": ["--instance-id", "w", "--state-dir", str(tmp / "state")],
        "watermark": ["s3://bucket/key"],
        "tail": ["object-events"],
        "reset": ["--to-earliest", "--state", "empty"],
        "dispatch": ["--destination", f"sqlite:///{tmp / 'd.db'}"],
        "bridge file": [str(notifications)],
        "bridge sqs": ["--queue-url", "http://127.0.0.1:1/123456789012/q", "--region", "us-east-1"],
        "bridge kafka": ["--from", "raw-notifications"],
        "bridge http": ["--port", "0"],
        "bench": ["--quick"],
        "reconcile": ["--bucket", "example-input"],
    }.get(command, [])


def environment() -> dict[str, str]:
    """`clean_env` without the caller's AWS settings (a profile `bridge sqs` would read)
    and with this tree's code, whatever the venv has installed."""
    env = {name: value for name, value in clean_env().items() if not name.startswith("AWS_")}
    env["AWS_ACCESS_KEY_ID"] = env["AWS_SECRET_ACCESS_KEY"] = "testing"
    env["PYTHONPATH"] = str(REPO)
    return env


def run_all(tmp: Path, extra: list[str]) -> dict[str, tuple[int, str, float]]:
    """Every Kafka command at once (they wait on the network, not the CPU)."""
    started: dict[str, tuple[subprocess.Popen[str], float]] = {}
    for name, command in sorted(leaf_commands().items()):
        if not opens_kafka(command):
            continue
        work = tmp / name.replace(" ", "-")
        work.mkdir()
        args = [*name.split(), *required_arguments(name, work), *extra]
        process = subprocess.Popen(
            [sys.executable, "-m", "seqgate.cli", *args],
            cwd=work,
            env=environment(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        started[name] = (process, time.monotonic())
    results = {}
    for name, (process, began) in started.items():
        try:
            _, stderr = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _, stderr = process.communicate()
            stderr += "\n(killed after 60 s)"
        results[name] = (process.returncode, stderr, time.monotonic() - began)
    return results


def test_every_kafka_command_ends_with_code_3_and_one_line_when_no_broker_answers(
    tmp_path: Path,
) -> None:
    address = f"127.0.0.1:{closed_port()}"
    results = run_all(tmp_path, ["--bootstrap-servers", address, "--kafka-timeout", "2"])
    assert len(results) >= 14
    for name, (code, stderr, took) in results.items():
        lines = stderr.strip().splitlines()
        assert code == 3, (name, stderr)
        assert len(lines) == 1 and "Traceback" not in stderr, (name, stderr)
        assert lines[0].startswith(f"error: Kafka at {address}: no broker answered within 2 s:")
        assert "connection refused" in lines[0], (name, lines[0])
        assert took < 30, (name, took)  # 2 s and the interpreter's start, on a loaded machine


def test_every_kafka_command_names_an_unknown_client_property_with_code_2(
    tmp_path: Path,
) -> None:
    address = f"127.0.0.1:{closed_port()}"
    results = run_all(tmp_path, ["--bootstrap-servers", address, "-X", "sasl.mechanismz=PLAIN"])
    for name, (code, stderr, _took) in results.items():
        assert code == 2, (name, stderr)
        assert re.fullmatch(
            r"error: sasl.mechanismz=PLAIN \(-X\): No such configuration property:"
            r' "sasl.mechanismz"\n',
            stderr,
        ), (name, stderr)


@pytest.mark.parametrize("name", ["worker", "verify", "status"])
def test_a_refused_property_from_a_variable_is_code_2(name: str, tmp_path: Path) -> None:
    env = {**environment(), "SEQGATE_KAFKA_ISOLATION_LEVEL": "read_uncommitted"}
    done = subprocess.run(
        [sys.executable, "-m", "seqgate.cli", name, "--bootstrap-servers", "127.0.0.1:1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        "error: isolation.level (SEQGATE_KAFKA_ISOLATION_LEVEL): seqgate sets this property"
    )
    assert len(done.stderr.splitlines()) == 1


# ---- a Kafka error no command expected -------------------------------------------------------


def probe_group() -> click.Group:
    """A group like `seqgate`'s with commands that meet real librdkafka errors."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    from seqgate.cli.app import SeqgateGroup

    group = SeqgateGroup("probe")

    @group.command("lost")
    def lost() -> None:
        address = f"127.0.0.1:{closed_port()}"
        AdminClient({"bootstrap.servers": address, "log_level": 0}).list_topics(timeout=1)

    @group.command("refused")
    def refused() -> None:
        Producer({"bootstrap.servers": "127.0.0.1:1", "log_level": 0}).init_transactions(1)

    return group


@pytest.mark.parametrize(("command", "code"), [("lost", 3), ("refused", 1)])
def test_a_kafka_error_no_command_expected_is_one_line(command: str, code: int) -> None:
    from click.testing import CliRunner

    result = CliRunner().invoke(probe_group(), [command])
    assert result.exit_code == code, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: Kafka: "), result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_print_config_masks_the_secrets_of_every_source(tmp_path: Path) -> None:
    file = tmp_path / "client.properties"
    file.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.password=from-file\n")
    env = {
        **environment(),
        "SEQGATE_KAFKA_SASL_USERNAME": "alice",
        "SEQGATE_KAFKA_SSL_KEY_PASSWORD": "from-variable",
    }
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "seqgate.cli",
            "worker",
            "--bootstrap-servers",
            "b:1",
            "--kafka-config",
            str(file),
            "-X",
            "sasl.oauthbearer.client.secret=from-flag",
            "--print-config",
        ],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    for secret in ("from-file", "from-variable", "from-flag"):
        assert secret not in done.stdout + done.stderr
    kafka = json.loads(done.stdout)["kafka"]
    assert kafka["properties"]["sasl.password"] == "***"
    assert kafka["properties"]["sasl.username"] == "alice"
    assert kafka["origins"]["sasl.password"] == f"{file}:3"
