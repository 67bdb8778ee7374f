"""Old option names kept working after a rename, hidden from --help and listed in
docs/operations.md ("Renamed options"): each use prints one deprecation line on stderr,
naming what to write instead, and the value goes to the new option.

The old flag, its old `SEQGATE_*` variable and its old `--config` key all still work. Given
together with the new name, the new name wins only if it was not set explicitly: both set
explicitly is a usage error (exit 2), since one of them would be silently ignored.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar, cast

import click
from click.core import ParameterSource

from seqgate.runtime.errors import UsageError

F = TypeVar("F", bound=Callable[..., Any])

_EXPLICIT = (ParameterSource.COMMANDLINE, ParameterSource.ENVIRONMENT, ParameterSource.DEFAULT_MAP)


def _where(ctx: click.Context, param: click.Parameter, flag: str, envvar: str) -> str:
    """How the old name was given: its flag, its variable or its --config key."""
    source = ctx.get_parameter_source(param.name or "")
    if source is ParameterSource.ENVIRONMENT:
        return envvar
    if source is ParameterSource.DEFAULT_MAP:
        return f"{flag.lstrip('-').replace('-', '_')} (--config)"
    return flag


def renamed(old_flag: str, old_envvar: str, new_flag: str, new_envvar: str) -> Callable[[F], F]:
    """Accept `old_flag` (and `old_envvar`) for the option now called `new_flag`."""
    new_name = new_flag.lstrip("-").replace("-", "_")
    alias_name = old_flag.lstrip("-").replace("-", "_")

    def warn(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is not None:
            old = _where(ctx, param, old_flag, old_envvar)
            click.echo(
                f"warning: {old} is deprecated: use {new_flag} (or {new_envvar}) instead",
                err=True,
            )
        return value

    def decorate(func: F) -> F:
        @functools.wraps(func)
        def with_alias(*args: Any, **kwargs: Any) -> Any:
            value = kwargs.pop(alias_name)
            if value is not None:
                ctx = click.get_current_context()
                if ctx.get_parameter_source(new_name) in _EXPLICIT:
                    raise UsageError(
                        f"{old_flag} and {new_flag} name the same option: give {new_flag} only"
                    )
                kwargs[new_name] = value
            return func(*args, **kwargs)

        option = click.option(
            old_flag, alias_name, envvar=old_envvar, hidden=True, default=None, callback=warn
        )
        return cast(F, option(with_alias))

    return decorate
