"""Expected errors of the command line: one line, no traceback, a documented exit code.

The exit codes of every command (docs/operations.md, "Exit codes"):

* 0 - done; for a check, nothing wrong was found.
* 1 - a check found a problem (`verify`, `topics check`, `watermark` without one), or a
  long-running command stopped on an error it cannot cure (a worker's or a bridge's fatal
  error): restart it once the cause is fixed.
* 2 - usage or configuration: a bad flag, file, property or input, named with its fix.
* 3 - Kafka cannot be reached: no broker answered within --kafka-timeout, or the brokers
  refused the connection (TLS, authentication, a protocol mismatch).
"""

from __future__ import annotations

from typing import IO

import click

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_KAFKA_UNREACHABLE = 3


class CliError(click.ClickException):
    """An expected problem (configuration, input, environment) with its fix."""

    exit_code = EXIT_USAGE

    def show(self, file: IO[str] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)


class KafkaUnreachable(CliError):
    """No broker answered, or the brokers refused the connection."""

    exit_code = EXIT_KAFKA_UNREACHABLE


class CommandFailed(CliError):
    """A long-running command stopped on an error it cannot cure, or a check failed."""

    exit_code = EXIT_FAILED
