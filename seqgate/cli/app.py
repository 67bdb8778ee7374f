"""The `seqgate` group: logging, the `--config` file and the precedence of settings."""

from __future__ import annotations

import contextlib
import difflib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import click
import yaml
from click.core import ParameterSource
from confluent_kafka import KafkaError, KafkaException

from seqgate.cli.options import setting
from seqgate.runtime.errors import (
    CommandFailed,
    KafkaUnreachable,
    SeqgateError,
    UsageError,
)
from seqgate.runtime.kafka_reach import CONNECTION_CODES
from seqgate.runtime.logs import configure_logging, masked

ARGV_KEY = "seqgate.argv"  # ctx.meta: the command line's arguments, as given
CONFIG_KEY = "seqgate.config"  # ctx.meta: the --config file read (a ConfigFile)

# ---- the group -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ConfigFile:
    """The `--config` file: its option values by key (dashes as underscores) and the line
    of each value."""

    path: str
    values: dict[str, Any]
    lines: dict[str, int]

    def where(self, key: str) -> str:
        return f"--config {self.path}, line {self.lines[key]}"

    def key_of(self, param: click.Parameter) -> str | None:
        """The key the file gave `param` under (its name or its flag), if any."""
        return next((key for key in _keys_of(param) if key in self.values), None)


def _load_config_file(path: str) -> ConfigFile:
    try:
        text = Path(path).read_text()
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise UsageError(f"--config {path}: cannot read it ({reason})") from error
    loader = yaml.SafeLoader(text)
    try:
        # The composed nodes carry the line of every key and value (PyYAML's marks).
        document = loader.get_single_node()
        if document is None:
            return ConfigFile(path, {}, {})
        if not isinstance(document, yaml.MappingNode):
            raise UsageError(f"--config {path}: expected a mapping of option names to values")
        return _read_mapping(path, loader, document)
    except yaml.YAMLError as error:
        raise UsageError(f"--config {path}: not valid YAML ({_yaml_problem(error)})") from error
    finally:
        loader.dispose()


def _read_mapping(path: str, loader: yaml.SafeLoader, document: yaml.MappingNode) -> ConfigFile:
    values: dict[str, Any] = {}
    lines: dict[str, int] = {}
    for key_node, value_node in document.value:
        line = key_node.start_mark.line + 1
        if not isinstance(key_node, yaml.ScalarNode):
            raise UsageError(f"--config {path}, line {line}: a key must be an option name")
        key = str(key_node.value).replace("-", "_")
        if key in values:
            raise UsageError(
                f"--config {path}, line {line}: {key} is given twice (first on line"
                f" {lines[key]}); keep one"
            )
        value = loader.construct_object(value_node, deep=True)
        lines[key] = value_node.start_mark.line + 1
        if value is None:
            raise UsageError(
                f"--config {path}, line {line}: {key} has no value; give one or drop it"
            )
        values[key] = value
    return ConfigFile(path, values, lines)


def _yaml_problem(error: yaml.YAMLError) -> str:
    """One line: what is wrong and where."""
    if isinstance(error, yaml.MarkedYAMLError) and error.problem_mark is not None:
        mark = error.problem_mark
        return f"{error.problem} at line {mark.line + 1}, column {mark.column + 1}"
    return " ".join(str(error).split())


def _keys_of(param: click.Parameter) -> list[str]:
    """The keys that set `param` in the file: its name, then its long flags' names."""
    flags = [flag[2:].replace("-", "_") for flag in param.opts if flag.startswith("--")]
    return [param.name or "", *(flag for flag in flags if flag != param.name)]


def _takes_several(param: click.Parameter) -> bool:
    """Whether the file may give `param` a list (a repeatable option, or one of several values)."""
    return param.multiple or param.nargs != 1


def _file_options(command: click.Command) -> list[click.Parameter]:
    """The options of `command` a file may set (not --config itself, --help, --version)."""
    return [
        param
        for param in command.params
        if isinstance(param, click.Option) and param.expose_value and param.name != "config_file"
    ]


def _commands(command: click.Command) -> Iterator[click.Command]:
    yield command
    if isinstance(command, click.Group):
        for child in command.commands.values():
            yield from _commands(child)


def _check_keys(root: click.Command, config: ConfigFile) -> None:
    """Refuse a key no command of the tree knows, and a list for an option of one value."""
    known: dict[str, list[click.Parameter]] = {}
    for command in _commands(root):
        for param in _file_options(command):
            for key in _keys_of(param):
                known.setdefault(key, []).append(param)
    for key, value in config.values.items():
        params = known.get(key)
        if params is None:
            near = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"did you mean {near[0]}?" if near else "see `seqgate COMMAND --help`"
            raise UsageError(f"{config.where(key)}: unknown option {key!r}; {hint}")
        if isinstance(value, dict):
            raise UsageError(f"{config.where(key)}: {key} takes a value, not a mapping")
        if isinstance(value, list) and not any(_takes_several(param) for param in params):
            raise UsageError(f"{config.where(key)}: {key} takes one value, not a list")


def _defaults_for(command: click.Command, config: ConfigFile) -> dict[str, Any]:
    """Spread the file's flat values over the command tree as click's default_map: each
    command gets the values of its own options; a group also its commands' maps."""
    defaults: dict[str, Any] = {}
    for param in _file_options(command):
        given = [key for key in _keys_of(param) if key in config.values]
        if len(given) > 1:
            raise UsageError(
                f"{config.where(given[1])}: {given[1]} and {given[0]} (line"
                f" {config.lines[given[0]]}) set the same option; keep one"
            )
        if given:
            value = config.values[given[0]]
            one_of_several = _takes_several(param) and not isinstance(value, list)
            defaults[param.name or ""] = [value] if one_of_several else value
    if isinstance(command, click.Group):
        for name, child in command.commands.items():
            defaults[name] = _defaults_for(child, config)
    return defaults


def _load_config(ctx: click.Context, param: click.Parameter, path: str | None) -> str | None:
    """--config (eager): read and check the file before any other option of the group is
    processed, so that it sets `--log-level` too."""
    if path:
        try:
            config = _load_config_file(path)
            _check_keys(ctx.command, config)
            ctx.default_map = _defaults_for(ctx.command, config)
        except UsageError as error:
            raise _ErrorLine(error) from error
        ctx.meta[CONFIG_KEY] = config
    return path


@contextlib.contextmanager
def _naming_the_file() -> Iterator[None]:
    """A refused value the --config file gave becomes one line naming the file and line."""
    try:
        yield
    except click.BadParameter as error:
        if (line := _from_file(error)) is None:
            raise
        raise line from error


def _from_file(error: click.BadParameter) -> _ErrorLine | None:
    """A value the file gave that its option refuses: one line naming the file and line
    (click would name the option and its environment variable, as for a variable's value)."""
    ctx, param = error.ctx, error.param
    if ctx is None or param is None or param.name is None:
        return None
    if ctx.get_parameter_source(param.name) is not ParameterSource.DEFAULT_MAP:
        return None
    config = ctx.meta.get(CONFIG_KEY)
    key = config.key_of(param) if isinstance(config, ConfigFile) else None
    if config is None or key is None:
        return None
    return _ErrorLine(UsageError(f"{config.where(key)}: {key}: {error.message}"))


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
        with _naming_the_file():
            return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with _naming_the_file():
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
    is_eager=True,
    callback=_load_config,
    help="YAML file of option values, keyed by option name (e.g. `ordering: numeric`);"
    " flags and SEQGATE_* variables take precedence.",
)
@setting(
    "--log-level",
    "SEQGATE_LOG_LEVEL",
    type=click.Choice(["debug", "info", "warning", "error"]),
    default="warning",
    help="Structured JSON logs on stderr.",
)
@click.version_option(package_name="seqgate")
def cli(config_file: str | None, log_level: str) -> None:
    """seqgate: exactly-once ordering gate for object-store notifications on Kafka.

    \b
    Example (a development broker, then the whole pipeline):
      seqgate broker up
      seqgate demo
    """
    configure_logging(log_level)
