"""Renamed options (seqgate/cli/aliases.py): the old flag, variable and --config key still
set the new option, each with one deprecation line; old and new both given explicitly is
one usage error; the old name is hidden from --help."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from seqgate.cli import cli
from seqgate.cli.aliases import renamed
from seqgate.cli.app import SeqgateGroup
from seqgate.cli.options import setting


def _probe() -> click.Group:
    group = SeqgateGroup("probe")

    @group.command("show")
    @setting("--new-topic", "SEQGATE_NEW_TOPIC", default=None, help="The topic.")
    @renamed("--old-topic", "SEQGATE_OLD_TOPIC", "--new-topic", "SEQGATE_NEW_TOPIC")
    def show(new_topic: str | None) -> None:
        click.echo(f"topic={new_topic}")

    return group


def _run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(_probe(), list(args), env=env or {})
    return result.exit_code, result.stdout, result.stderr


def test_the_old_flag_sets_the_new_option_with_one_warning() -> None:
    code, out, err = _run("show", "--old-topic", "t1")
    assert (code, out) == (0, "topic=t1\n")
    assert err.splitlines() == [
        "warning: --old-topic is deprecated: use --new-topic (or SEQGATE_NEW_TOPIC) instead"
    ]


def test_the_old_variable_sets_it_and_the_warning_names_the_variable() -> None:
    code, out, err = _run("show", env={"SEQGATE_OLD_TOPIC": "t2"})
    assert (code, out) == (0, "topic=t2\n")
    assert err.splitlines() == [
        "warning: SEQGATE_OLD_TOPIC is deprecated: use --new-topic (or SEQGATE_NEW_TOPIC) instead"
    ]


def test_the_new_name_alone_prints_nothing_more() -> None:
    assert _run("show", "--new-topic", "t3") == (0, "topic=t3\n", "")


def test_old_and_new_given_together_is_one_usage_error() -> None:
    code, out, err = _run("show", "--old-topic", "a", "--new-topic", "b")
    assert code == 2
    assert out == ""
    assert err.splitlines()[-1] == (
        "error: --old-topic and --new-topic name the same option: give --new-topic only"
    )


def test_the_old_name_is_hidden_from_help() -> None:
    code, out, _ = _run("show", "--help")
    assert code == 0
    assert "--new-topic" in out
    assert "--old-topic" not in out


def test_dispatch_keeps_dead_letter_topic_as_a_hidden_alias(tmp_path: Path) -> None:
    dispatch = cli.commands["dispatch"]
    hidden = {opt for param in dispatch.params if param.hidden for opt in param.opts}
    shown = {opt for param in dispatch.params if not param.hidden for opt in param.opts}
    assert "--dead-letter-topic" in hidden
    assert "--destination-rejected-topic" in shown


@pytest.mark.parametrize("key", ["dead_letter_topic", "dead-letter-topic"])
def test_the_old_config_key_is_named_in_the_warning(tmp_path: Path, key: str) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(f"{key}: old.dlq\n")
    # A destination it refuses: the warning comes while the options are read, and the command
    # then stops at --destination (a usage error), before any Kafka.
    args = ["--config", str(config), "dispatch", "--bootstrap-servers", "127.0.0.1:1"]
    result = CliRunner().invoke(cli, [*args, "--destination", "gopher://x"], env={})
    assert result.exit_code == 2, result.stderr
    assert (
        "warning: dead_letter_topic (--config) is deprecated: use --destination-rejected-topic"
        " (or SEQGATE_DESTINATION_REJECTED_TOPIC) instead"
    ) in result.stderr.splitlines()
