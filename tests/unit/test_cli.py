"""The `seqgate` command line (docs/design.md §7), without a broker.

* every command and group answers ``--help`` with an example;
* ``seqgate parse`` prints one JSON line per record, whatever the input holds;
* expected errors (missing input, bad configuration, unknown kinds) exit 2 with one
  ``error: ...`` line and no traceback;
* configuration precedence: flag > ``SEQGATE_*`` variable > ``--config`` file > default,
  and ``KAFKA_BOOTSTRAP_SERVERS`` as the fallback for the broker address.

In-process runs use click's ``CliRunner`` (click >= 8.2 keeps ``result.stdout`` and
``result.stderr`` apart); exit codes and "no traceback" are also checked on a real
``python -m seqgate.cli`` process.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result
from seqgate_devtools.samples import s3_notification, s3_record, s3_test_event, to_bytes

from seqgate.cli import cli
from tests.support.environment import clean_env
from tests.support.paths import FIXTURES, REPO

VALID_KINDS = ("created", "removed", "version_removed")
MALFORMED_LINE = b'{"Records": ['


# ---- helpers -------------------------------------------------------------------------------------


def command_tree(
    command: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command and group under `command` (itself included), with its path."""
    yield path, command
    if isinstance(command, click.Group):
        for name, child in sorted(command.commands.items()):
            yield from command_tree(child, (*path, name))


ALL_PATHS = [path for path, _ in command_tree(cli)]

# Groups whose help has no example although docs/design.md §7 asks for one on every command.
HELP_WITHOUT_EXAMPLE: dict[tuple[str, ...], str] = {}


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No SEQGATE_* or KAFKA_BOOTSTRAP_SERVERS from the caller's shell; root logging restored.

    The CLI's group callback reconfigures the root logger (to a handler on the runner's
    stderr, which is closed afterwards); put pytest's handlers back for the next tests.
    """
    for name in list(os.environ):
        if name.startswith("SEQGATE_") or name == "KAFKA_BOOTSTRAP_SERVERS":
            monkeypatch.delenv(name)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def invoke(
    args: list[str], env: Mapping[str, str] | None = None, stdin: bytes | None = None
) -> Result:
    return CliRunner().invoke(cli, args, env=env, input=stdin, prog_name="seqgate")


def run_cli(
    *args: str, env: Mapping[str, str] | None = None, stdin: bytes | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m seqgate.cli ARGS` in a clean environment (plus `env`)."""
    return subprocess.run(
        [sys.executable, "-m", "seqgate.cli", *args],
        input=stdin.decode("utf-8") if stdin is not None else None,
        capture_output=True,
        text=True,
        env=clean_env(env),
        cwd=REPO,
        timeout=60,
        check=False,
    )


def assert_one_error_line(stderr: str, *mentions: str) -> str:
    """stderr is exactly one line `error: ...` mentioning each of `mentions`; no traceback."""
    assert "Traceback" not in stderr, stderr
    lines = stderr.splitlines()
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("error: "), lines[0]
    for text in mentions:
        assert text in lines[0], f"{text!r} not in {lines[0]!r}"
    return lines[0]


def print_config(args: list[str], env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """`seqgate ARGS --print-config` (ARGS ending in the worker's options) -> its JSON."""
    result = invoke([*args, "--print-config"], env=env)
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    config: dict[str, Any] = json.loads(result.stdout)
    return config


# ---- --help --------------------------------------------------------------------------------------


def test_the_tree_holds_the_documented_commands() -> None:
    expected = {
        (),
        ("broker",),
        ("broker", "up"),
        ("broker", "down"),
        ("broker", "status"),
        ("topics",),
        ("topics", "create"),
        ("parse",),
        ("bridge",),
        ("bridge", "file"),
        ("worker",),
        ("demo",),
        ("status",),
        ("watermark",),
        ("reset",),
        ("bench",),
        ("dispatch",),
    }
    assert expected <= set(ALL_PATHS)


@pytest.mark.parametrize(
    "path",
    [
        pytest.param(
            path,
            id=" ".join(("seqgate", *path)),
            marks=[pytest.mark.xfail(strict=True, reason=HELP_WITHOUT_EXAMPLE[path])]
            if path in HELP_WITHOUT_EXAMPLE
            else [],
        )
        for path in ALL_PATHS
    ],
)
def test_every_command_has_help_with_an_example(path: tuple[str, ...]) -> None:
    result = invoke([*path, "--help"])
    assert result.exit_code == 0, (result.stdout, result.stderr)
    assert result.stdout.startswith("Usage: seqgate"), result.stdout
    assert "Example" in result.stdout, result.stdout


def test_help_answers_in_a_real_process() -> None:
    done = run_cli("--help")
    assert done.returncode == 0, done.stderr
    assert "Example" in done.stdout
    assert done.stderr == ""


# ---- parse ---------------------------------------------------------------------------------------


def write_parse_input(path: Path) -> None:
    """Line 1 put, 2 test event, 3 put + eventVersion 3.0, 4 malformed, 5 delete marker."""
    lines = [
        to_bytes(s3_notification(s3_record(key="a.txt", sequencer="1"))),
        to_bytes(s3_test_event()),
        to_bytes(
            s3_notification(
                s3_record(key="b.txt", sequencer="2"),
                s3_record(key="c.txt", sequencer="3", event_version="3.0"),
            )
        ),
        MALFORMED_LINE,
        to_bytes(
            s3_notification(
                s3_record(
                    key="d.txt", sequencer="4", event_name="ObjectRemoved:DeleteMarkerCreated"
                )
            )
        ),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")


def parse_lines(stdout: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stdout.splitlines()]


@pytest.mark.parametrize("jsonl", [[], ["--jsonl"]], ids=["by-content", "jsonl-flag"])
def test_parse_prints_one_line_per_record_in_input_order(tmp_path: Path, jsonl: list[str]) -> None:
    source = tmp_path / "notifications.jsonl"
    write_parse_input(source)
    result = invoke(["parse", *jsonl, str(source)])
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    assert result.stderr == ""
    lines = parse_lines(result.stdout)

    origin = f"file:{source}"
    summary = [
        (line["status"], line["origin"], line.get("key"), line.get("reason")) for line in lines
    ]
    assert summary == [
        ("event", f"{origin}:1", "a.txt", None),
        ("ignored", f"{origin}:2", None, "s3_test_event"),
        ("event", f"{origin}:3", "b.txt", None),
        ("rejected", f"{origin}:3", None, "unsupported_schema_version"),
        ("rejected", f"{origin}:4", None, "malformed_json"),
        ("event", f"{origin}:5", "d.txt", None),
    ]
    put, ignored, multi_ok, bad_record, malformed, removed = lines
    assert put["kind"] == "created"
    assert put["position"] == "1"
    assert put["source"] == "s3"
    assert put["bucket"] == "example-input"
    assert put["event_name"] == "ObjectCreated:Put"
    assert put["id"].startswith("s3-")
    assert "s3:TestEvent" in ignored["message"]
    assert multi_ok["position"] == "2"
    assert bad_record["record_index"] == 1
    assert "eventVersion" in bad_record["message"]
    assert malformed["record_index"] is None
    assert malformed["message"]
    assert removed["kind"] == "removed"
    assert removed["event_name"] == "ObjectRemoved:DeleteMarkerCreated"
    # Conservation: five messages, six records, one line each.
    assert len(lines) == 6


def test_parse_reads_stdin() -> None:
    data = to_bytes(s3_notification(s3_record(key="incoming%2FJune+report%2Bfinal.csv")))
    result = invoke(["parse", "-"], stdin=data + b"\n" + MALFORMED_LINE + b"\n")
    assert result.exit_code == 0, (result.stdout, result.stderr, result.exception)
    first, second = parse_lines(result.stdout)
    assert first["status"] == "event"
    assert first["key"] == "incoming/June report+final.csv"
    assert first["origin"] == "file:stdin:1"
    assert (second["status"], second["origin"]) == ("rejected", "file:stdin:2")


def test_parse_accepts_a_record_without_sequencer_only_when_told() -> None:
    data = to_bytes(s3_notification(s3_record(sequencer=None)))
    strict = parse_lines(invoke(["parse", "-"], stdin=data).stdout)
    assert [(line["status"], line["reason"]) for line in strict] == [
        ("rejected", "invalid_sequencer")
    ]
    lenient = invoke(["parse", "--allow-missing-sequencer", "-"], stdin=data)
    assert lenient.exit_code == 0, (lenient.stdout, lenient.stderr)
    (event,) = parse_lines(lenient.stdout)
    assert (event["status"], event["position"]) == ("event", None)


def test_parse_in_a_real_process_exits_0_on_bad_input(tmp_path: Path) -> None:
    source = tmp_path / "notifications.jsonl"
    write_parse_input(source)
    done = run_cli("parse", str(source))
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    statuses = [line["status"] for line in parse_lines(done.stdout)]
    assert statuses == ["event", "ignored", "event", "rejected", "rejected", "event"]


def test_parse_jsonl_flag_reads_a_one_line_stdin_as_lines() -> None:
    data = to_bytes(s3_notification(s3_record(key="x")))
    result = invoke(["parse", "--jsonl", "-"], stdin=data + b"\n" + MALFORMED_LINE)
    assert [line["status"] for line in parse_lines(result.stdout)] == ["event", "rejected"]


def test_parse_of_a_missing_file_is_one_error_line(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-file.jsonl"
    done = run_cli("parse", str(missing))
    assert done.returncode == 2
    assert done.stdout == ""
    assert_one_error_line(done.stderr, str(missing))


# ---- configuration precedence --------------------------------------------------------------------


@pytest.fixture
def config_file(tmp_path: Path) -> Path:
    path = tmp_path / "seqgate.yaml"
    path.write_text("ordering: numeric\ncommit_every: 7\nbatch-size: 33\n")
    return path


BROKER = ["--bootstrap-servers", "127.0.0.1:9092"]


def test_defaults_apply_without_flags_variables_or_file() -> None:
    config = print_config(["worker", *BROKER])
    assert config["ordering"] == "aws"
    assert config["commit_every"] == 10_000
    assert config["batch_size"] == 500
    assert config["admit_kinds"] == ["created"]


def test_the_config_file_beats_the_defaults(config_file: Path) -> None:
    config = print_config(["--config", str(config_file), "worker", *BROKER])
    assert config["ordering"] == "numeric"
    assert config["commit_every"] == 7
    assert config["batch_size"] == 33  # `batch-size` in the file names --batch-size too
    assert config["commit_interval_ms"] == 100  # not in the file: the default


def test_seqgate_config_variable_names_the_file(config_file: Path) -> None:
    config = print_config(["worker", *BROKER], env={"SEQGATE_CONFIG": str(config_file)})
    assert (config["ordering"], config["commit_every"]) == ("numeric", 7)


def test_variables_beat_the_config_file(config_file: Path) -> None:
    env = {"SEQGATE_ORDERING": "aws", "SEQGATE_COMMIT_EVERY": "11"}
    config = print_config(["--config", str(config_file), "worker", *BROKER], env=env)
    assert (config["ordering"], config["commit_every"]) == ("aws", 11)
    assert config["batch_size"] == 33  # still from the file


def test_flags_beat_variables_and_the_config_file(config_file: Path) -> None:
    env = {"SEQGATE_ORDERING": "aws", "SEQGATE_COMMIT_EVERY": "11"}
    args = ["--config", str(config_file), "worker", *BROKER, "--ordering", "numeric"]
    config = print_config([*args, "--commit-every", "13"], env=env)
    assert (config["ordering"], config["commit_every"]) == ("numeric", 13)


def test_each_source_supplies_its_own_option(config_file: Path) -> None:
    # flag: ordering; variable: commit_every; file: batch_size; default: commit_interval_ms.
    config = print_config(
        ["--config", str(config_file), "worker", *BROKER, "--ordering", "aws"],
        env={"SEQGATE_COMMIT_EVERY": "17"},
    )
    assert config["ordering"] == "aws"
    assert config["commit_every"] == 17
    assert config["batch_size"] == 33
    assert config["commit_interval_ms"] == 100


BAD_CONFIGS = {
    "not-yaml": "ordering: [numeric\n",
    "not-a-mapping": "- ordering\n- numeric\n",
    "a-scalar": "just some words\n",
    "missing": None,
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_a_bad_config_file_exits_2_naming_the_file(tmp_path: Path, case: str) -> None:
    path = tmp_path / f"{case}.yaml"
    text = BAD_CONFIGS[case]
    if text is not None:
        path.write_text(text)
    done = run_cli("--config", str(path), "worker", *BROKER, "--print-config")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert "Traceback" not in done.stderr, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("error: --config "), first
    assert str(path) in first, first


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(
            case,
            marks=[],
        )
        for case in sorted(BAD_CONFIGS)
    ],
)
def test_a_bad_config_file_error_is_one_line(tmp_path: Path, case: str) -> None:
    path = tmp_path / f"{case}.yaml"
    text = BAD_CONFIGS[case]
    if text is not None:
        path.write_text(text)
    result = invoke(["--config", str(path), "worker", *BROKER, "--print-config"])
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, str(path))


# ---- the broker address --------------------------------------------------------------------------


def test_kafka_bootstrap_servers_is_the_fallback() -> None:
    config = print_config(["worker"], env={"KAFKA_BOOTSTRAP_SERVERS": "kafka-env:1"})
    assert config["kafka"]["bootstrap_servers"] == "kafka-env:1"


def test_seqgate_bootstrap_servers_wins_over_kafka_bootstrap_servers() -> None:
    env = {"KAFKA_BOOTSTRAP_SERVERS": "kafka-env:1", "SEQGATE_BOOTSTRAP_SERVERS": "seqgate-env:2"}
    assert print_config(["worker"], env=env)["kafka"]["bootstrap_servers"] == "seqgate-env:2"


def test_the_flag_wins_over_both_variables() -> None:
    env = {"KAFKA_BOOTSTRAP_SERVERS": "kafka-env:1", "SEQGATE_BOOTSTRAP_SERVERS": "seqgate-env:2"}
    config = print_config(["worker", "--bootstrap-servers", "flag:3"], env=env)
    assert config["kafka"]["bootstrap_servers"] == "flag:3"


def test_no_broker_address_at_all_is_a_usage_error() -> None:
    result = invoke(["worker", "--print-config"])
    assert result.exit_code == 2
    assert "--bootstrap-servers" in result.stderr
    assert "Traceback" not in result.stderr


# ---- --admit-kinds -------------------------------------------------------------------------------


def test_unknown_admit_kind_exits_2_listing_the_valid_kinds() -> None:
    args = ["worker", *BROKER, "--print-config", "--admit-kinds", "bogus"]
    done = run_cli(*args, stdin=b"")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    assert_one_error_line(done.stderr, "--admit-kinds", "bogus", *VALID_KINDS)


def test_unknown_admit_kind_from_the_variable_is_refused_too() -> None:
    result = invoke(["worker", *BROKER, "--print-config"], env={"SEQGATE_ADMIT_KINDS": "bogus"})
    assert result.exit_code == 2
    assert_one_error_line(result.stderr, "bogus", *VALID_KINDS)


def test_admit_kinds_are_resolved_from_a_comma_separated_list() -> None:
    config = print_config(["worker", *BROKER, "--admit-kinds", " removed , created "])
    assert config["admit_kinds"] == ["created", "removed"]


def test_unknown_ordered_source_exits_2_naming_the_option_and_the_valid_sources() -> None:
    args = ["worker", *BROKER, "--print-config", "--ordered-sources", "s3,gs"]
    done = run_cli(*args, stdin=b"")
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert_one_error_line(done.stderr, "--ordered-sources", "'gs'", "gcs", "azure", "minio")


def test_ordered_sources_accept_every_provider() -> None:
    args = ["worker", *BROKER, "--print-config", "--ordered-sources", "s3,azure,gcs,minio"]
    done = run_cli(*args, stdin=b"")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["ordered_sources"] == ["azure", "gcs", "minio", "s3"]


@pytest.mark.parametrize(
    ("provider", "fixture", "extra"),
    [
        ("cloudinary", "cloudinary/upload.json", ["--cloud-name", "demo"]),
        ("appwrite", "appwrite/file_create.json", []),
        ("b2", "b2/object_created_upload.json", []),
    ],
)
def test_parse_reads_a_named_providers_body(provider: str, fixture: str, extra: list[str]) -> None:
    path = FIXTURES / fixture
    if provider == "appwrite":
        document = json.loads(path.read_text())
        extra = [
            "--appwrite-events",
            f"buckets.{document['bucketId']}.files.{document['$id']}.create",
        ]
    done = run_cli("parse", "--provider", provider, *extra, str(path))
    assert done.returncode == 0, done.stderr
    (line,) = [json.loads(text) for text in done.stdout.splitlines()]
    assert (line["status"], line["source"], line["kind"]) == ("event", provider, "created")


def test_parse_of_a_cloudinary_body_without_its_cloud_is_one_error_line() -> None:
    done = run_cli("parse", "--provider", "cloudinary", str(FIXTURES / "cloudinary/upload.json"))
    assert done.returncode == 2
    assert_one_error_line(done.stderr, "--cloud-name", "cloud name")
