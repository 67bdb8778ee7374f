"""The bridges' options for reading notifications: which events to publish
(`--bucket`, `--include-prefix`, `--exclude-prefix`) and how S3 records are read
(`--allow-missing-sequencer`, `--s3-schema-floor`, `--engine`)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from seqgate.cli.options import setting, stacked
from seqgate.connectors.parsers.s3.native import SCHEMA_FLOORS, S3ParseOptions
from seqgate.connectors.publish.filters import EventFilter
from seqgate.runtime.engines import ENGINES, load_core


class CommaList(click.ParamType):  # type: ignore[type-arg,unused-ignore]  # generic in click 8.2+
    """Text items of a repeatable option; its variable separates them with commas."""

    name = "TEXT"
    envvar_list_splitter = ","

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        return str(value)


def filter_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The bridge's event filter options; the command receives one `event_filter`."""

    @functools.wraps(func)
    def with_filter(
        *args: Any,
        bucket: tuple[str, ...],
        include_prefix: tuple[str, ...],
        exclude_prefix: tuple[str, ...],
        **kwargs: Any,
    ) -> Any:
        kwargs["event_filter"] = build_filter(bucket, include_prefix, exclude_prefix)
        return func(*args, **kwargs)

    options = [
        setting(
            "--bucket",
            "SEQGATE_BUCKETS",
            type=CommaList(),
            multiple=True,
            help="Publish only events of these buckets (exact names; repeat the option or"
            " separate with commas). Default: every bucket.",
        ),
        setting(
            "--include-prefix",
            "SEQGATE_INCLUDE_PREFIXES",
            type=CommaList(),
            multiple=True,
            help="Publish only events whose decoded key starts with one of these literal"
            " prefixes (no wildcards; repeat or separate with commas). Default: every key.",
        ),
        setting(
            "--exclude-prefix",
            "SEQGATE_EXCLUDE_PREFIXES",
            type=CommaList(),
            multiple=True,
            help="Never publish events whose decoded key starts with one of these literal"
            " prefixes (wins over --include-prefix; e.g. where generated output is written)."
            " Filtered events are counted, not published nor rejected.",
        ),
    ]
    return stacked(with_filter, options)


def s3_parse_option(func: Callable[..., Any]) -> Callable[..., Any]:
    """`--allow-missing-sequencer`, `--s3-schema-floor` and `--engine`; the command
    receives one `s3_options: S3ParseOptions`. `--engine compiled` without the compiled
    core in this installation is a usage error (one line, exit 2)."""

    @functools.wraps(func)
    def with_s3_options(
        *args: Any, allow_missing_sequencer: bool, s3_schema_floor: str, engine: str, **kwargs: Any
    ) -> Any:
        if engine == "compiled":
            load_core()
        kwargs["s3_options"] = S3ParseOptions(
            allow_missing_sequencer=allow_missing_sequencer,
            schema_floor=s3_schema_floor,
            engine=engine,
        )
        return func(*args, **kwargs)

    floor = setting(
        "--s3-schema-floor",
        "SEQGATE_S3_SCHEMA_FLOOR",
        type=click.Choice(SCHEMA_FLOORS),
        default=SCHEMA_FLOORS[0],
        help="The lowest Amazon S3 eventVersion accepted. 2.1 is the guide's rule; 2.0 is"
        " the operator's choice, for the sample events of the AWS SDKs, SAM (sam local"
        " generate-event s3 put) and Lambda test tools. Below the floor: rejected as"
        " unsupported_schema_version.",
    )
    option = setting(
        "--allow-missing-sequencer",
        "SEQGATE_ALLOW_MISSING_SEQUENCER",
        is_flag=True,
        default=False,
        help="Accept S3 records without a sequencer (S3-compatible producers and emulators"
        " that send none) as position-less events: the worker then only drops redeliveries"
        " and cannot detect an older write delivered late (docs/aws-setup.md). Default:"
        " rejected as invalid_sequencer.",
    )
    engine_option = setting(
        "--engine",
        "SEQGATE_ENGINE",
        type=click.Choice(ENGINES),
        default="compiled",
        help="How notifications are read and events written: compiled (seqgate._core, Rust:"
        " clean native Amazon S3 documents; everything else, every rejection included, goes"
        " to the Python parsers) or python (those parsers alone, the reference). The same"
        " results and bytes either way (docs/sources.md#engines---engine-all-bridges-and-parse).",
    )
    wrapped: Callable[..., Any] = engine_option(floor(option(with_s3_options)))
    return wrapped


def comma_items(values: tuple[str, ...] | list[str] | str | None) -> list[str]:
    """Flag values, each possibly a comma list; a config file may give a list or a string."""
    if values is None:
        return []
    if isinstance(values, str):
        values = [values]
    return [item.strip() for value in values for item in str(value).split(",") if item.strip()]


def build_filter(
    buckets: tuple[str, ...], include_prefixes: tuple[str, ...], exclude_prefixes: tuple[str, ...]
) -> EventFilter:
    return EventFilter.build(
        comma_items(buckets), comma_items(include_prefixes), comma_items(exclude_prefixes)
    )
