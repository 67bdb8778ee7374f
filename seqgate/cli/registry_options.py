"""`--schema-registry-url` and its settings: the Confluent wire format through a registry
(docs/consumers.md, "Schema Registry")."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import click

from seqgate.cli.options import flag_list, setting, stacked
from seqgate.runtime.errors import UsageError
from seqgate.runtime.schema_registry import SUBJECT_NAME_STRATEGIES, RegistrySettings
from seqgate.runtime.schema_registry import connect as connect_registry


def registry_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The schema registry of the Confluent wire format; the command receives one
    `framing: Framing` (single-object encoding when no --schema-registry-url is given).
    Either way it reads both encodings."""

    @functools.wraps(func)
    def with_framing(
        *args: Any,
        schema_registry_url: str | None,
        schema_registry_auth: str | None,
        schema_registry_properties: tuple[str, ...],
        subject_name_strategy: str,
        **kwargs: Any,
    ) -> Any:
        settings = None
        if schema_registry_url:
            settings = registry_settings(
                schema_registry_url,
                schema_registry_auth,
                schema_registry_properties,
                subject_name_strategy,
            )
        kwargs["framing"] = connect_registry(settings)
        return func(*args, **kwargs)

    options = [
        setting(
            "--schema-registry-url",
            "SEQGATE_SCHEMA_REGISTRY_URL",
            default=None,
            help="Write seqgate's records in the Confluent wire format, their schemas"
            " registered in this schema registry (http://host:8081; mock://NAME is"
            " confluent-kafka's in-memory registry). Records are read in either encoding"
            " with or without it.",
        ),
        setting(
            "--schema-registry-auth",
            "SEQGATE_SCHEMA_REGISTRY_AUTH",
            default=None,
            metavar="USER:PASSWORD",
            help="HTTP basic authentication for the schema registry (never shown).",
        ),
        click.option(
            "--schema-registry-property",
            "schema_registry_properties",
            multiple=True,
            metavar="NAME=VALUE",
            help="A property of confluent-kafka's schema registry client (repeatable), e.g."
            " ssl.ca.location=/etc/ca.pem, ssl.certificate.location, ssl.key.location,"
            " timeout (seconds).",
        ),
        setting(
            "--subject-name-strategy",
            "SEQGATE_SUBJECT_NAME_STRATEGY",
            default="topic",
            type=click.Choice(sorted(SUBJECT_NAME_STRATEGIES)),
            help="The registry subject of a record: topic = <topic>-value"
            " (TopicNameStrategy), record = the record's full name, topic-record ="
            " <topic>-<record name>.",
        ),
    ]
    return stacked(with_framing, options)


def registry_settings(
    url: str,
    auth: str | None,
    properties: tuple[str, ...] | list[str] | str,
    subject_name_strategy: str = "topic",
) -> RegistrySettings:
    parsed: dict[str, str] = {}
    for text in flag_list(properties):
        name, equals, value = text.partition("=")
        if not equals or not name.strip():
            raise UsageError(f"--schema-registry-property {text!r}: expected NAME=VALUE")
        parsed[name.strip()] = value.strip()
    return RegistrySettings(url, auth or None, parsed, subject_name_strategy)
