"""Option classes and value types of the `seqgate` commands: what click checks before a
command runs, with the fix in the message."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import click
from click.core import ParameterSource


class SettingOption(click.Option):
    """An option with a variable whose errors name the variable only when the value came
    from it (click names it whatever the source, a flag's or a --config file's value too)."""

    def get_error_hint(self, ctx: click.Context) -> str:
        if self.name and ctx.get_parameter_source(self.name) is ParameterSource.ENVIRONMENT:
            return super().get_error_hint(ctx)
        return click.Parameter.get_error_hint(self, ctx)


class BootstrapServers(click.ParamType):  # type: ignore[type-arg,unused-ignore]  # generic in click 8.2+
    """host:port[,host:port]: refused when empty or with an empty item (librdkafka would
    only fail later, naming no option)."""

    name = "HOST:PORT[,...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip()
        if not text or not all(item.strip() for item in text.split(",")):
            self.fail(
                f"{value!r} is not a broker address list; give host:port[,host:port],"
                " e.g. 127.0.0.1:9092",
                param,
                ctx,
            )
        return text


# Kafka's own rule for a group.instance.id (JoinGroupRequest.validateGroupInstanceId,
# org.apache.kafka.common.requests, the same as Topic.validate): non-empty, not "." or "..",
# at most 249 characters of [a-zA-Z0-9._-]. A transactional.id takes any non-empty string,
# so the stricter rule covers both ids the instance id goes into.
_KAFKA_ID = re.compile(r"[a-zA-Z0-9._-]{1,249}")


class KafkaMemberId(click.ParamType):  # type: ignore[type-arg,unused-ignore]  # generic in click 8.2+
    """A name Kafka accepts as a group.instance.id (and so in a transactional.id)."""

    name = "ID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        if not _KAFKA_ID.fullmatch(text) or text in (".", ".."):
            self.fail(
                f"{text!r} is not a Kafka group.instance.id: use 1 to 249 of a-z A-Z 0-9 . _ -"
                " (not . or ..), e.g. worker-1",
                param,
                ctx,
            )
        return text


class HttpUrl(click.ParamType):  # type: ignore[type-arg,unused-ignore]  # generic in click 8.2+
    """An http(s) URL with a host and, unless ``path`` is False (an endpoint), a path
    (`example` shows one in the error)."""

    name = "URL"

    def __init__(self, example: str, *, path: bool = True) -> None:
        self.example = example
        self.path = path

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value).strip()
        try:
            parts = urlsplit(text)
            host = parts.hostname
        except ValueError:  # an unclosed [IPv6] host
            host = None
        if (
            not host
            or parts.scheme not in ("http", "https")
            or (self.path and parts.path in ("", "/"))
        ):
            shape = "an http(s) URL with a path" if self.path else "an http(s) URL"
            self.fail(f"{text!r} is not {shape}, e.g. {self.example}", param, ctx)
        return text
