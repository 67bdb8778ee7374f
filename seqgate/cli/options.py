"""Options shared by the `seqgate` commands, and how they become typed settings."""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Callable, Iterable
from typing import Any, TypeVar, cast

import click
from click.core import ParameterSource

from seqgate.cli.param_types import BootstrapServers, SettingOption
from seqgate.runtime.errors import UsageError
from seqgate.runtime.kafka_settings import (
    DEFAULT_TIMEOUT_S,
    KafkaSettings,
    build_settings,
    from_environment,
    parse_flag,
)
from seqgate.runtime.logs import redact
from seqgate.streams.errors import PolicyError
from seqgate.streams.rules.policy import (
    DEFAULT_ADMITTED_KINDS,
    DEFAULT_DEDUPE_WINDOW_MS,
    DEFAULT_ORDERED_SOURCES,
    Policy,
)

F = TypeVar("F", bound=Callable[..., Any])


def setting(flag: str, envvar: str, **kwargs: Any) -> Callable[[F], F]:
    """An option that can also come from a SEQGATE_* variable, both shown in --help."""
    return click.option(
        flag, envvar=envvar, show_envvar=True, show_default=True, cls=SettingOption, **kwargs
    )


def gathered(
    func: Callable[..., Any], target: str, build: Callable[..., Any], names: Iterable[str]
) -> Callable[..., Any]:
    """`func` receiving one `target`, built by `build` from the options `names` (which
    `func` then no longer receives as such)."""
    taken = tuple(names)

    @functools.wraps(func)
    def with_gathered(*args: Any, **kwargs: Any) -> Any:
        kwargs[target] = build(**{name: kwargs.pop(name) for name in taken})
        return func(*args, **kwargs)

    return with_gathered


def stacked(func: F, options: list[Callable[[Any], Any]]) -> F:
    """`func` under `options`, the first of them outermost (shown first in --help), as if
    each had been written as a decorator above it in that order."""
    wrapped: Any = func
    for option in reversed(options):
        wrapped = option(wrapped)
    return cast(F, wrapped)


# ---- shared options ------------------------------------------------------------------------------


def kafka_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """Where Kafka is and how to talk to it; the command receives one `kafka: KafkaSettings`
    (see `seqgate.runtime.kafka_settings` for the precedence of -X, SEQGATE_KAFKA_* and the
    file)."""
    return _kafka_options(func, required=True)


def optional_kafka_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """As `kafka_options`, but `kafka` is None when no --bootstrap-servers is given."""
    return _kafka_options(func, required=False)


def _kafka_options(func: Callable[..., Any], *, required: bool) -> Callable[..., Any]:
    @functools.wraps(func)
    def with_kafka(
        *args: Any,
        bootstrap_servers: str | None,
        kafka_properties: tuple[str, ...],
        kafka_config: str | None,
        kafka_timeout: float,
        **kwargs: Any,
    ) -> Any:
        ctx = click.get_current_context(silent=True)
        source = ctx.get_parameter_source("kafka_properties") if ctx else None
        kwargs["kafka"] = (
            build_kafka(
                bootstrap_servers,
                kafka_properties,
                kafka_config,
                kafka_timeout,
                from_file=source is ParameterSource.DEFAULT_MAP,
            )
            if bootstrap_servers
            else None
        )
        return func(*args, **kwargs)

    options = [
        click.option(
            "--bootstrap-servers",
            envvar=["SEQGATE_BOOTSTRAP_SERVERS", "KAFKA_BOOTSTRAP_SERVERS"],
            show_envvar=True,
            cls=SettingOption,
            type=BootstrapServers(),
            required=required,
            help="Kafka bootstrap address, host:port[,host:port]."
            " Falls back to KAFKA_BOOTSTRAP_SERVERS."
            + ("" if required else " Default: start a private development broker."),
        ),
        click.option(
            "-X",
            "--kafka-property",
            "kafka_properties",
            multiple=True,
            metavar="NAME=VALUE",
            help="A librdkafka client property for every Kafka client of the command"
            " (repeatable; wins over SEQGATE_KAFKA_<NAME> variables, which win over"
            " --kafka-config), e.g. -X security.protocol=SASL_SSL.",
        ),
        setting(
            "--kafka-config",
            "SEQGATE_KAFKA_CONFIG",
            default=None,
            type=click.Path(dir_okay=False),
            help="A .properties file of librdkafka client properties (as Kafka's tools take"
            " with --command-config): key=value lines, # comments.",
        ),
        setting(
            "--kafka-timeout",
            "SEQGATE_KAFKA_TIMEOUT",
            default=DEFAULT_TIMEOUT_S,
            type=click.FloatRange(0.1, 3600),
            help="Seconds to wait for a broker to answer before ending with exit code 3"
            " (Kafka unreachable).",
        ),
    ]
    return stacked(with_kafka, options)


def build_kafka(
    bootstrap_servers: str,
    flags: tuple[str, ...] | list[str],
    config_file: str | None,
    timeout_s: float,
    *,
    from_file: bool = False,
) -> KafkaSettings:
    """The client settings; `from_file`: `flags` are the --config file's `kafka_property`
    values, which a SEQGATE_KAFKA_<NAME> variable beats, as variables beat the file."""
    given = flag_list(flags)
    if from_file:
        in_environment = {prop.name for prop in from_environment(os.environ)}
        given = [flag for flag in given if parse_flag(flag).name not in in_environment]
    kafka = build_settings(
        bootstrap_servers,
        flags=given,
        environ=os.environ,
        config_file=config_file,
        timeout_s=timeout_s,
    )
    if from_file:
        origins = {
            name: "--config" if origin == "-X" else origin for name, origin in kafka.origins.items()
        }
        kafka = dataclasses.replace(kafka, origins=origins)
    redact(kafka.secrets())
    return kafka


def flag_list(flags: tuple[str, ...] | list[str] | str) -> list[str]:
    """-X values; a --config YAML file may give one string or a list."""
    return [flags] if isinstance(flags, str) else list(flags)


DEFAULT_AUDIT_TOPIC = "object-events.decisions"

rejected_topic_option = setting(
    "--rejected-topic",
    "SEQGATE_REJECTED_TOPIC",
    default="object-events.rejected",
    help="Topic of rejected records: the inputs that cannot be accepted, with their reason.",
)


def topic_options(func: F) -> F:
    options = [
        setting(
            "--input-topic",
            "SEQGATE_INPUT_TOPIC",
            default="object-events",
            help="Topic of normalized events (keyed by object identity).",
        ),
        setting(
            "--outbox-topic",
            "SEQGATE_OUTBOX_TOPIC",
            default="object-events.outbox",
            help="Topic of accepted events.",
        ),
        rejected_topic_option,
    ]
    return stacked(func, options)


def input_topic_option(func: F) -> F:
    """`--input-topic` of the commands that look at a worker group from outside."""
    return setting(
        "--input-topic",
        "SEQGATE_INPUT_TOPIC",
        default="object-events",
        help="Topic of normalized events the workers consume.",
    )(func)


def application_option(func: F) -> F:
    return setting(
        "--application-id",
        "SEQGATE_APPLICATION_ID",
        default="seqgate",
        help="Consumer group of the workers and prefix of the changelog topic.",
    )(func)


def policy_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The decision policy's options; the command receives one `policy: Policy`."""

    @functools.wraps(func)
    def with_policy(
        *args: Any,
        ordering: str,
        admit_kinds: str,
        ordered_sources: str,
        dedupe_window_ms: int,
        **kwargs: Any,
    ) -> Any:
        kwargs["policy"] = build_policy(ordering, admit_kinds, ordered_sources, dedupe_window_ms)
        return func(*args, **kwargs)

    options = [
        ordering_option(
            "How S3 sequencers compare: aws (right-pad with 0, AWS's documented rule)"
            " or numeric (hex value, the guide's rule)."
        ),
        setting(
            "--admit-kinds",
            "SEQGATE_ADMIT_KINDS",
            default=",".join(sorted(DEFAULT_ADMITTED_KINDS)),
            help="Comma-separated event kinds that may be accepted (created, removed,"
            " version_removed, ...: docs/kinds.md); other kinds are counted as filtered.",
        ),
        setting(
            "--ordered-sources",
            "SEQGATE_ORDERED_SOURCES",
            default=",".join(sorted(DEFAULT_ORDERED_SOURCES)),
            help="Sources whose positions order an object's writes; the others are"
            " dedupe-only (add minio for a single-node MinIO).",
        ),
        setting(
            "--dedupe-window-ms",
            "SEQGATE_DEDUPE_WINDOW_MS",
            default=DEFAULT_DEDUPE_WINDOW_MS,
            type=click.IntRange(1, None),
            help="How long (in input record time) an accepted event id of a dedupe-only"
            " source suppresses its redeliveries.",
        ),
    ]
    return stacked(with_policy, options)


def _names(text: str) -> list[str]:
    return [name.strip() for name in text.split(",") if name.strip()]


def build_policy(
    ordering: str,
    admit_kinds: str,
    ordered_sources: str = ",".join(sorted(DEFAULT_ORDERED_SOURCES)),
    dedupe_window_ms: int = DEFAULT_DEDUPE_WINDOW_MS,
) -> Policy:
    try:
        return Policy.build(
            ordering,
            _names(admit_kinds),
            ordered_sources=_names(ordered_sources),
            dedupe_window_ms=dedupe_window_ms,
        )
    except PolicyError as error:
        option = _POLICY_OPTIONS.get(error.setting, error.setting)
        raise UsageError(f"{option}: {error}") from error


_POLICY_OPTIONS = {
    "admitted_kinds": "--admit-kinds",
    "ordered_sources": "--ordered-sources",
    "dedupe_window_ms": "--dedupe-window-ms",
}


def session_timeout_option(member: str) -> Callable[[F], F]:
    """`--session-timeout-ms` of a consumer-group member (`member` names it in the help)."""
    return setting(
        "--session-timeout-ms",
        "SEQGATE_SESSION_TIMEOUT_MS",
        default=45_000,
        type=click.IntRange(1000, 3_600_000),
        help=f"How long the group waits for a silent {member} before moving its partitions.",
    )


def ordering_option(help: str) -> Callable[[F], F]:
    """`--ordering`: how S3 sequencers compare (`help` says what it is for here)."""
    return setting(
        "--ordering",
        "SEQGATE_ORDERING",
        type=click.Choice(["aws", "numeric"]),
        default="aws",
        help=help,
    )


def batch_size_option(default: int, help: str) -> Callable[[F], F]:
    return setting(
        "--batch-size",
        "SEQGATE_BATCH_SIZE",
        default=default,
        type=click.IntRange(1, 100_000),
        help=help,
    )


def transaction_timeout_option(help: str) -> Callable[[F], F]:
    """`--transaction-timeout-ms` of a transactional producer (`help` names whose)."""
    return setting(
        "--transaction-timeout-ms",
        "SEQGATE_TRANSACTION_TIMEOUT_MS",
        default=60_000,
        type=click.IntRange(1000, 900_000),
        help=help,
    )


DRAINED_PARTITIONS_IDLE = (
    "Stop once every assigned partition has been read to its end and no record has"
    " arrived for this long (one-shot drains). Default: run until SIGTERM."
)


def idle_exit_option(help: str = DRAINED_PARTITIONS_IDLE) -> Callable[[F], F]:
    """`--idle-exit-seconds` of a one-shot drain (default help: a consumer group's)."""
    return setting(
        "--idle-exit-seconds",
        "SEQGATE_IDLE_EXIT_SECONDS",
        default=None,
        type=click.FloatRange(0, None),
        help=help,
    )


def audit_topic_of(audit_topic: str | None, audit: bool) -> str | None:
    """The audit log's topic: --audit-topic, else the default one with --audit, else none."""
    return audit_topic or (DEFAULT_AUDIT_TOPIC if audit else None)


def metrics_options(func: F) -> F:
    """--metrics-port / --metrics-host: /metrics, /healthz and /readyz (default: off)."""
    options = [
        setting(
            "--metrics-port",
            "SEQGATE_METRICS_PORT",
            default=None,
            type=click.IntRange(0, 65_535),
            help="Serve Prometheus /metrics, /healthz (alive) and /readyz (ready) on this port"
            " (0 picks a free one, printed on stderr). Default: off.",
        ),
        setting(
            "--metrics-host",
            "SEQGATE_METRICS_HOST",
            default="127.0.0.1",
            help="Address the metrics endpoint listens on (0.0.0.0: every interface).",
        ),
    ]
    return stacked(func, options)
