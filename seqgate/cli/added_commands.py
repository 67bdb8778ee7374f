"""Commands that other installed packages add to `seqgate` (entry points of the group
``seqgate.commands``): the development tools' `bench`, `broker` and `demo`
(devtools/pyproject.toml), kept out of seqgate's wheel and image (docs/design.md §7).

Without that package those three names still answer, with one line that says where they
come from and exit code 2, rather than click's "no such command".
"""

from __future__ import annotations

from importlib.metadata import entry_points

import click

from seqgate.runtime.errors import UsageError

ENTRY_POINT_GROUP = "seqgate.commands"
DEVELOPMENT_COMMANDS = ("bench", "broker", "demo")
DEVTOOLS_DISTRIBUTION = "seqgate-devtools"


def _not_installed(name: str) -> click.Command:
    def refuse() -> None:
        raise UsageError(
            f"`seqgate {name}` is one of the development tools ({DEVTOOLS_DISTRIBUTION}),"
            " which are not installed here; from a clone of the repository:"
            " pip install -e devtools"
        )

    return click.Command(
        name,
        callback=refuse,
        help=f"(Not installed: part of {DEVTOOLS_DISTRIBUTION}, the development tools.)",
        # Whatever follows the name is the missing command's business: refuse it as a whole.
        context_settings={
            "ignore_unknown_options": True,
            "allow_extra_args": True,
            "help_option_names": [],
        },
    )


def add_installed_commands(group: click.Group) -> None:
    """Add every command an installed package declares, and a refusal for each development
    command that none declares."""
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        command = entry.load()
        if not isinstance(command, click.Command):
            raise TypeError(f"entry point {entry.value} ({ENTRY_POINT_GROUP}) is not a command")
        group.add_command(command, entry.name)
    for name in DEVELOPMENT_COMMANDS:
        if name not in group.commands:
            group.add_command(_not_installed(name))
