"""The `seqgate` group: logging, the `--config` file and the precedence of settings."""

from __future__ import annotations

from pathlib import Path
from typing import IO, Any

import click
import yaml
from confluent_kafka import KafkaError, KafkaException

from seqgate.streams.cli.options import setting
from seqgate.streams.runtime.errors import (
    CommandFailed,
    KafkaUnreachable,
    SeqgateError,
    UsageError,
)
from seqgate.streams.runtime.kafka_reach import CONNECTION_CODES
from seqgate.streams.runtime.logs import configure_logging, masked

ARGV_KEY = "seqgate.argv"  # ctx.meta: the command line's arguments, as given

# ---- the group -----------------------------------------------------------------------------------


def _load_config_file(path: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise UsageError(f"--config {path}: cannot read it ({error.strerror})") from error
    except yaml.YAMLError as error:
        raise UsageError(f"--config {path}: not valid YAML ({_yaml_problem(error)})") from error
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UsageError(f"--config {path}: expected a mapping of option names to values")
    return {str(name).replace("-", "_"): value for name, value in data.items()}


def _yaml_problem(error: yaml.YAMLError) -> str:
    """One line: what is wrong and where."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(error).split())


def _defaults_for(command: click.Command, values: dict[str, Any]) -> dict[str, Any]:
    """Spread flat file values over the command tree as click's default_map."""
    if isinstance(command, click.Group):
        return {name: _defaults_for(child, values) for name, child in command.commands.items()}
    names = {param.name for param in command.params}
    return {name: value for name, value in values.items() if name in names}


class _ErrorLine(click.ClickException):
    """A `SeqgateError` as click ends a command: `error: <message>` (and its detail lines)
    on stderr, the family's exit code."""

    def __init__(self, error: SeqgateError) -> None:
        super().__init__(error.headline())
        self.exit_code = error.exit_code  # type: ignore[misc,unused-ignore]  # click >= 8.4: a ClassVar; here per error
        self.detail = error.detail

    def show(self, file: IO[str] | None = None) -> None:
        click.echo(f"error: {self.format_message()}", err=True, file=file)
        if self.detail:
            click.echo(self.detail, err=True, file=file)


def _kafka_failure(exception: KafkaException) -> SeqgateError:
    """A Kafka error no command expected: unreachable for a lost connection, else failed."""
    error = exception.args[0] if exception.args else None
    if not isinstance(error, KafkaError):
        return CommandFailed(f"Kafka: {masked(str(exception))}")
    line = f"Kafka: {masked(error.str())} ({error.name()})"
    if error.code() in CONNECTION_CODES:
        return KafkaUnreachable(
            f"{line}; check --bootstrap-servers, the network and the client properties"
        )
    return CommandFailed(line)


class SeqgateGroup(click.Group):
    """A group whose commands end on an expected error (`SeqgateError`) with one line and
    its family's exit code; a Kafka error no command expected is still one line and an exit
    code (3 for a lost connection, 1 otherwise), never a traceback."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # `bridge http --processes N` runs its workers with the very same arguments.
        ctx.meta.setdefault(ARGV_KEY, list(args))
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KafkaException as exception:
            raise _ErrorLine(_kafka_failure(exception)) from exception
        except SeqgateError as error:
            raise _ErrorLine(error) from error


@click.group(
    cls=SeqgateGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
)
@click.option(
    "--config",
    "config_file",
    envvar="SEQGATE_CONFIG",
    show_envvar=True,
    type=click.Path(dir_okay=False),
    help="YAML file of option values (e.g. `ordering: numeric`); flags and SEQGATE_*"
    " variables take precedence.",
)
@setting(
    "--log-level",
    "SEQGATE_LOG_LEVEL",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    help="Structured JSON logs on stderr.",
)
@click.version_option(package_name="seqgate")
@click.pass_context
def cli(ctx: click.Context, config_file: str | None, log_level: str) -> None:
    """seqgate: exactly-once ordering gate for object-store notifications on Kafka.

    \b
    Example (a development broker, then the whole pipeline):
      seqgate broker up
      seqgate demo
    """
    configure_logging(log_level)
    if config_file:
        ctx.default_map = _defaults_for(cli, _load_config_file(config_file))
