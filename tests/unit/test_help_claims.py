"""What the commands' --help texts promise holds (issue 41): a variable a help text tells
the reader to export is one some option reads, an exit code a help text gives for a case
is the code the command ends with in that case, and `parse` says when an input held
nothing."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
from click.testing import CliRunner

from seqgate.cli import cli
from seqgate.runtime.errors import EXIT_FAILED
from tests.support.cli_tree import cli_envvars, walk

# Variables read by the Kafka clients' fallback rather than by an option's `envvar`.
READ_OUTSIDE_OPTIONS = {"KAFKA_BOOTSTRAP_SERVERS"}


def _commands() -> Iterator[tuple[str, click.Command]]:
    for path, command in walk(cli):
        yield " ".join(("seqgate", *path)), command


def _help(path: str, command: click.Command) -> str:
    return command.get_help(click.Context(command, info_name=path))


def test_every_exported_variable_in_a_help_text_is_read() -> None:
    read = cli_envvars() | READ_OUTSIDE_OPTIONS
    exported = {
        (path, name)
        for path, command in _commands()
        for name in re.findall(r"export (\w+)=", _help(path, command))
    }
    assert exported, "the development broker's help shows its exports"
    assert {(path, name) for path, name in exported if name not in read} == set()


def test_bridge_sqs_says_the_exit_code_it_ends_with_when_messages_stay_queued() -> None:
    text = " ".join(_help("seqgate bridge sqs", cli.commands["bridge"].commands["sqs"]).split())
    claimed = re.findall(r"Exits (\d) if messages were left in the queue", text)
    # tests/kafka/test_bridge_sqs.py sees the command end so (a CommandFailed).
    assert claimed == [str(EXIT_FAILED)]


def test_parse_of_an_empty_input_says_so_on_stderr(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    result = CliRunner().invoke(cli, ["parse", str(empty)], env={})
    assert (result.exit_code, result.stdout) == (0, "")
    assert result.stderr.splitlines() == [
        f"seqgate parse: {empty}: no notification in it (empty input)"
    ]
