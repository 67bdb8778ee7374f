"""Expected errors of the command line: one line, no traceback."""

from __future__ import annotations

from typing import IO

import click


class CliError(click.ClickException):
    """An expected problem (configuration, input, environment) with its fix."""

    exit_code = 2

    def show(self, file: IO[str] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)
