"""The `--config` file, strictly (issue 20, part 4), and the values click checks first.

* an unknown key is one line naming the key, the file, its line and the nearest option; a
  key only another command knows is not an error;
* a value the file gives that its option refuses names the file and the line, never an
  environment variable; a variable's value still names the variable;
* every option can come from the file, `log_level` included, and for one option of each
  type (text, number, flag, list) a flag beats a variable, which beats the file, which
  beats the default;
* `--instance-id` holds what Kafka accepts in a group.instance.id, `--bootstrap-servers`
  is not empty and `--queue-url` is an http(s) URL.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from seqgate_devtools.samples import s3_notification, s3_record, to_bytes

from seqgate.cli.param_types import HttpUrl
from tests.unit.test_cli import (  # noqa: F401  (clean_environment: autouse here too)
    BROKER,
    assert_one_error_line,
    clean_environment,
    invoke,
    print_config,
    run_cli,
)

WORKER = ["worker", *BROKER, "--print-config"]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "seqgate.yaml"
    path.write_text(text)
    return path


def refused(*args: str, env: Mapping[str, str] | None = None) -> str:
    """`seqgate ARGS` in a real process: exit code 2, nothing on stdout -> its stderr."""
    done = run_cli(*args, env=env)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == ""
    return done.stderr


# ---- keys ----------------------------------------------------------------------------------------


def test_an_unknown_key_names_itself_the_file_its_line_and_the_nearest_option(
    tmp_path: Path,
) -> None:
    path = write(tmp_path, "commit_every: 7\nordring: aws\n")
    stderr = refused("--config", str(path), *WORKER)
    line = assert_one_error_line(stderr, f"--config {path}, line 2", "'ordring'")
    assert line.endswith("did you mean ordering?"), line


def test_an_unknown_key_with_no_near_option_points_at_the_help(tmp_path: Path) -> None:
    path = write(tmp_path, "zzzzzz: 1\n")
    stderr = refused("--config", str(path), *WORKER)
    assert_one_error_line(stderr, f"--config {path}, line 1", "'zzzzzz'", "--help")


def test_a_key_of_another_command_only_is_not_an_error(tmp_path: Path) -> None:
    # queue_url is an option of `bridge sqs`, bucket of the bridges: not of the worker.
    text = "queue_url: https://sqs.eu-west-1.amazonaws.com/1/q\nbucket: [b]\nordering: numeric\n"
    config = print_config(["--config", str(write(tmp_path, text)), *WORKER[:-1]])
    assert config["ordering"] == "numeric"


@pytest.mark.parametrize(
    ("text", "line", "mention"),
    [
        ("ordering: aws\nordering: numeric\n", 2, "ordering is given twice (first on line 1)"),
        ("batch_size: 3\nbatch-size: 4\n", 2, "batch_size is given twice"),
        ("kafka_properties: [a=b]\nkafka-property: c=d\n", 2, "set the same option"),
        ("ordering: numeric\ncommit_every:\n", 2, "commit_every has no value"),
        ("batch_size: [1, 2]\n", 1, "batch_size takes one value"),
        ("ordering: {a: 1}\n", 1, "ordering takes a value, not a mapping"),
        ("bucket: {a: 1}\n", 1, "bucket takes a value, not a mapping"),
        ("[ordering]: aws\n", 1, "a key must be an option name"),
    ],
)
def test_a_malformed_entry_names_the_file_and_line(
    tmp_path: Path, text: str, line: int, mention: str
) -> None:
    path = write(tmp_path, text)
    result = invoke(["--config", str(path), *WORKER])
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert_one_error_line(result.stderr, f"--config {path}, line {line}: ", mention)


# ---- values --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "mention"),
    [
        ("commit_every: 7\nordering: awss\n", 2, "ordering: 'awss' is not one of"),
        ("ordering: aws\n\ncommit-every: 0\n", 3, "commit_every: 0 is not in the range"),
        ("log_level: loud\n", 1, "log_level: 'loud' is not one of"),
        ("instance_id: a b\n", 1, "instance_id: 'a b' is not a Kafka group.instance.id"),
    ],
)
def test_a_refused_value_of_the_file_names_the_file_and_line_not_a_variable(
    tmp_path: Path, text: str, line: int, mention: str
) -> None:
    path = write(tmp_path, text)
    stderr = refused("--config", str(path), *WORKER)
    error = assert_one_error_line(stderr, f"--config {path}, line {line}: ", mention)
    assert "SEQGATE_" not in error, error


def test_a_refused_value_names_its_variable_only_when_it_came_from_it() -> None:
    from_variable = refused(*WORKER, env={"SEQGATE_ORDERING": "awss"})
    assert "(env var: 'SEQGATE_ORDERING')" in from_variable, from_variable
    from_flag = refused(*WORKER, "--ordering", "awss")
    assert "Invalid value for '--ordering': 'awss'" in from_flag, from_flag
    assert "SEQGATE_ORDERING" not in from_flag, from_flag


# ---- precedence: flag > variable > file > default, one option of each type ----------------------


Observe = Callable[[list[str], list[str], dict[str, str]], Any]
"""(the group's arguments, the command's arguments, the variables) -> the value in effect"""


def worker_setting(name: str) -> Observe:
    def observe(group: list[str], command: list[str], env: dict[str, str]) -> Any:
        return print_config([*group, "worker", *BROKER, *command], env=env)[name]

    return observe


def client_id(group: list[str], command: list[str], env: dict[str, str]) -> Any:
    kafka = print_config([*group, "worker", *BROKER, *command], env=env)["kafka"]
    return kafka["properties"].get("client.id")


def missing_sequencer_status(tmp_path: Path) -> Observe:
    """What `parse` makes of a record without a sequencer (an event only when allowed)."""
    body = tmp_path / "no-sequencer.json"
    body.write_bytes(to_bytes(s3_notification(s3_record(sequencer=None))))

    def observe(group: list[str], command: list[str], env: dict[str, str]) -> Any:
        result = invoke([*group, "parse", str(body), *command], env=env)
        assert result.exit_code == 0, (result.stdout, result.stderr)
        return json.loads(result.stdout)["status"]

    return observe


def log_level(group: list[str], command: list[str], env: dict[str, str]) -> Any:
    """The root logger's level; --log-level is the group's own option."""
    result = invoke([*group, *command, *WORKER], env=env)
    assert result.exit_code == 0, (result.stdout, result.stderr)
    return logging.getLevelName(logging.getLogger().level)


# kind: (the file's line, the variable, the flag, the value in effect for each layer)
PRECEDENCE: dict[str, tuple[str, dict[str, str], list[str], tuple[Any, ...]]] = {
    "text": (
        "ordering: numeric",
        {"SEQGATE_ORDERING": "aws"},
        ["--ordering", "numeric"],
        ("aws", "numeric", "aws", "numeric"),
    ),
    "group-text": (
        "log_level: debug",
        {"SEQGATE_LOG_LEVEL": "error"},
        ["--log-level", "info"],
        ("WARNING", "DEBUG", "ERROR", "INFO"),
    ),
    "number": (
        "commit-every: 7",
        {"SEQGATE_COMMIT_EVERY": "11"},
        ["--commit-every", "13"],
        (10_000, 7, 11, 13),
    ),
    "flag": (
        "allow_missing_sequencer: true",
        {"SEQGATE_ALLOW_MISSING_SEQUENCER": "false"},
        ["--allow-missing-sequencer"],
        ("rejected", "event", "rejected", "event"),
    ),
    "list": (
        "kafka_property: [client.id=from-file]",
        {"SEQGATE_KAFKA_CLIENT_ID": "from-variable"},
        ["-X", "client.id=from-flag"],
        (None, "from-file", "from-variable", "from-flag"),
    ),
}
LAYERS = ("default", "file", "variable", "flag")


@pytest.mark.parametrize("layer", LAYERS)
@pytest.mark.parametrize("kind", sorted(PRECEDENCE))
def test_a_flag_beats_a_variable_beats_the_file_beats_the_default(
    tmp_path: Path, kind: str, layer: str
) -> None:
    entry, variables, flag, expected = PRECEDENCE[kind]
    observers: dict[str, Observe] = {
        "text": worker_setting("ordering"),
        "group-text": log_level,
        "number": worker_setting("commit_every"),
        "flag": missing_sequencer_status(tmp_path),
        "list": client_id,
    }
    depth = LAYERS.index(layer)
    # Every source below `layer` is given too: `layer` has to beat each of them.
    group = ["--config", str(write(tmp_path, f"{entry}\n"))] if depth >= 1 else []
    env = variables if depth >= 2 else {}
    command = flag if depth >= 3 else []
    assert observers[kind](group, command, env) == expected[depth]


# ---- values click checks -------------------------------------------------------------------------


@pytest.mark.parametrize("instance_id", ["a b", "w/1", "ü", ".", "..", "x" * 250, ""])
def test_an_instance_id_kafka_would_refuse_is_a_usage_error(instance_id: str) -> None:
    stderr = refused(*WORKER, "--instance-id", instance_id)
    assert "Invalid value for '--instance-id'" in stderr, stderr
    assert "is not a Kafka group.instance.id" in stderr, stderr


@pytest.mark.parametrize("instance_id", ["w1", "host.example_1-a", "x" * 249, "..."])
def test_an_instance_id_kafka_accepts_is_used(instance_id: str) -> None:
    config = print_config([*WORKER[:-1], "--instance-id", instance_id])
    assert config["transactional_id"] == f"seqgate-{instance_id}"


@pytest.mark.parametrize("servers", ["", " ", ",", "127.0.0.1:9092,"])
def test_an_empty_bootstrap_address_is_a_usage_error(servers: str) -> None:
    stderr = refused("worker", "--bootstrap-servers", servers, "--print-config")
    assert "Invalid value for '--bootstrap-servers'" in stderr, stderr
    assert "host:port" in stderr, stderr


@pytest.mark.parametrize(
    "url", ["not-a-url", "ftp://sqs.example/1/q", "https://sqs.example", "http://[::1/q"]
)
def test_a_queue_url_that_is_no_url_is_a_usage_error_naming_it(url: str) -> None:
    stderr = refused("bridge", "sqs", "--queue-url", url, *BROKER)
    assert f"Invalid value for '--queue-url': {url!r} is not an http(s) URL" in stderr, stderr
    assert "region" not in stderr, stderr


@pytest.mark.parametrize(
    "url",
    [
        "https://sqs.eu-west-1.amazonaws.com/111122223333/uploads",
        "http://localhost:4566/000000000000/uploads",
        "http://[::1]:9324/queue/uploads",
    ],
)
def test_a_queue_url_with_a_host_and_path_is_taken(url: str) -> None:
    assert HttpUrl("e.g.").convert(url, None, None) == url


@pytest.mark.parametrize(
    ("command", "url"),
    [
        (["bridge", "sqs", "--queue-url", "https://sqs.example/1/q", *BROKER], "localhost:9324"),
        (["reconcile", *BROKER], "127.0.0.1:9000"),
        (["aws", "configure-notifications"], "ftp://s3.example"),
        (["aws", "configure-notifications"], "http://[::1"),
    ],
)
def test_an_endpoint_url_that_is_no_url_is_a_usage_error_naming_it(
    command: list[str], url: str
) -> None:
    """boto3 would refuse it later, with a traceback-shaped ValueError."""
    stderr = refused(*command, "--endpoint-url", url)
    assert f"Invalid value for '--endpoint-url': {url!r} is not an http(s) URL" in stderr, stderr


@pytest.mark.parametrize("url", ["http://127.0.0.1:5000", "https://s3.example", "http://[::1]:9/"])
def test_an_endpoint_url_needs_no_path(url: str) -> None:
    assert HttpUrl("e.g.", path=False).convert(url, None, None) == url
