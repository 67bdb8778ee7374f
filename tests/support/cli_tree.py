"""The `seqgate` command tree as tests read it: every command with its path, and the
environment variables its options read."""

from __future__ import annotations

from collections.abc import Iterator

import click

from seqgate.cli import cli


def walk(
    command: click.Command, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name, child in command.commands.items():
            yield from walk(child, (*path, name))


def envvars_of(params: list[click.Parameter]) -> set[str]:
    names: set[str] = set()
    for param in params:
        if isinstance(param.envvar, str):
            names.add(param.envvar)
        elif param.envvar:
            names.update(param.envvar)
    return names


def cli_envvars(root: click.Command = cli) -> set[str]:
    """Every environment variable that some option of the tree reads (groups included)."""
    names: set[str] = set()
    for _, command in walk(root):
        names |= envvars_of(command.params)
    return names
