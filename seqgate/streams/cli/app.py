"""The `seqgate` group: logging, the `--config` file and the precedence of settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import yaml
from confluent_kafka import KafkaError, KafkaException

from seqgate.streams.cli.options import setting
from seqgate.streams.runtime.errors import CliError, CommandFailed, KafkaUnreachable
from seqgate.streams.runtime.kafka_reach import CONNECTION_CODES
from seqgate.streams.runtime.logs import configure_logging, masked

# ---- the group -----------------------------------------------------------------------------------


def _load_config_file(path: str) -> dict[str, Any]:
    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as error:
        raise CliError(f"--config {path}: cannot read it ({error.strerror})") from error
    except yaml.YAMLError as error:
        raise CliError(f"--config {path}: not valid YAML ({_yaml_problem(error)})") from error
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CliError(f"--config {path}: expected a mapping of option names to values")
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


class SeqgateGroup(click.Group):
    """The root group: a Kafka error no command expected is still one line and an exit
    code (3 for a lost connection, 1 otherwise), never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KafkaException as exception:
            error = exception.args[0] if exception.args else None
            if not isinstance(error, KafkaError):
                raise CommandFailed(f"Kafka: {masked(str(exception))}") from exception
            line = f"Kafka: {masked(error.str())} ({error.name()})"
            if error.code() in CONNECTION_CODES:
                raise KafkaUnreachable(
                    f"{line}; check --bootstrap-servers, the network and the client properties"
                ) from exception
            raise CommandFailed(line) from exception


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
