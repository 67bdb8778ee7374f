"""The schema registry behind the Confluent wire format (docs/consumers.md, "Schema Registry").

`RegistrySettings` is what the `--schema-registry-*` options say; `connect` turns it into a
:class:`~seqgate.schemas.framing.Framing` that writes through the registry. The HTTP client
is the one confluent-kafka ships (`confluent_kafka.schema_registry`; its extra
`schemaregistry` is a dependency of seqgate), so authentication, TLS, retries and its own
caches are Confluent's; a `mock://NAME` URL is that client's in-memory registry (one per
client, so one per process unless a client is shared).

Registration: a record's schema is registered under its topic's subject at start-up (one
request per topic and record type; the id is then cached by the `Framing`). A subject
seqgate creates gets compatibility BACKWARD first, the level its schema history is kept to
(`seqgate.schemas.compat`, checked in the tests); a subject that already exists keeps the
level its operators chose.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.schema_registry_client import (
    ConfigCompatibilityLevel,
    ServerConfig,
)

from seqgate.runtime.errors import (
    SchemaRegistryRefused,
    SchemaRegistryUnreachable,
    UsageError,
)
from seqgate.runtime.kafka_settings import is_secret
from seqgate.runtime.logs import MASK, redact
from seqgate.schemas.framing import Framing

__all__ = [
    "SUBJECT_NAME_STRATEGIES",
    "ConfluentSchemaRegistry",
    "RegistrySettings",
    "connect",
    "describe_registry",
]

SUBJECT_NAME_STRATEGIES: Final[Mapping[str, Callable[[str, str], str]]] = {
    # Confluent's TopicNameStrategy, RecordNameStrategy and TopicRecordNameStrategy.
    "topic": lambda topic, record: f"{topic}-value",
    "record": lambda topic, record: record,
    "topic-record": lambda topic, record: f"{topic}-{record}",
}
_URL_SCHEMES: Final = ("http://", "https://", "mock://")
# Properties given by their own options, so that they are masked and checked once.
_OWNED: Final = {
    "url": "give it with --schema-registry-url",
    "basic.auth.user.info": "give it with --schema-registry-auth USER:PASSWORD",
    "basic.auth.credentials.source": "seqgate sets it with --schema-registry-auth",
}
_DEFAULT_TIMEOUT_S: Final = 10
_COMPATIBILITY: Final = "BACKWARD"
_NOT_FOUND: Final = 404
_SUBJECT_NOT_FOUND: Final = 40401
_SERVER_ERROR: Final = 500


@dataclass(frozen=True, slots=True)
class RegistrySettings:
    """Where the schema registry is and how to talk to it."""

    url: str
    auth: str | None = None  # USER:PASSWORD for HTTP basic authentication
    properties: Mapping[str, str] = field(default_factory=dict)
    subject_name_strategy: str = "topic"

    def __post_init__(self) -> None:
        if not self.url.startswith(_URL_SCHEMES):
            raise UsageError(
                f"--schema-registry-url {self.url!r}: expected an http://, https:// or"
                " mock:// URL, e.g. http://registry:8081"
            )
        if self.auth is not None and ":" not in self.auth:
            raise UsageError("--schema-registry-auth: expected USER:PASSWORD")
        for name in self.properties:
            if name in _OWNED:
                raise UsageError(f"--schema-registry-property {name}: {_OWNED[name]}")
        if self.subject_name_strategy not in SUBJECT_NAME_STRATEGIES:
            raise UsageError(
                f"--subject-name-strategy {self.subject_name_strategy!r}: expected one of"
                f" {', '.join(SUBJECT_NAME_STRATEGIES)}"
            )

    def secrets(self) -> list[str]:
        found = [value for name, value in self.properties.items() if is_secret(name)]
        if self.auth is not None:
            found += [self.auth, self.auth.partition(":")[2]]
        return [value for value in found if value]

    def describe(self) -> dict[str, object]:
        """For logs and status output: secrets masked."""
        return {
            "url": self.url,
            "auth": None if self.auth is None else f"{self.auth.partition(':')[0]}:{MASK}",
            "properties": {
                name: MASK if is_secret(name) else value
                for name, value in sorted(self.properties.items())
            },
            "subject_name_strategy": self.subject_name_strategy,
        }

    def client_config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"url": self.url, "timeout": _DEFAULT_TIMEOUT_S}
        for name, value in self.properties.items():
            config[name] = _typed(name, value)
        if self.auth is not None:
            config["basic.auth.user.info"] = self.auth
        return config


def _typed(name: str, value: str) -> Any:
    """A property as the client wants it: its numeric settings refuse text."""
    kind = _NUMERIC_PROPERTIES.get(name)
    if kind is None:
        return value
    try:
        return kind(value)
    except ValueError:
        raise UsageError(
            f"--schema-registry-property {name}={value!r}: expected a number"
        ) from None


# The registry client's settings that must be numbers (confluent-kafka 2.x).
_NUMERIC_PROPERTIES: Final[Mapping[str, Callable[[str], Any]]] = {
    "timeout": float,
    "max.retries": int,
    "retries.wait.ms": int,
    "retries.max.wait.ms": int,
    "cache.capacity": int,
    "cache.latest.ttl.sec": int,
}


class ConfluentSchemaRegistry:
    """:class:`~seqgate.schemas.framing.SchemaRegistry` answered by confluent-kafka's client."""

    def __init__(self, settings: RegistrySettings, client: Any = None) -> None:
        """``client``: a `SchemaRegistryClient` to share (the in-memory registry of
        ``mock://`` lives in one client); by default one is made from ``settings``."""
        self.settings = settings
        self._subject_of = SUBJECT_NAME_STRATEGIES[settings.subject_name_strategy]
        self._client = client if client is not None else _new_client(settings)

    @property
    def client(self) -> Any:
        return self._client

    def schema_id(self, topic: str, schema_name: str, schema_json: str) -> int:
        subject = self._subject_of(topic, schema_name)
        what = f"registering {schema_name} under subject {subject!r}"
        if not self._call(what, self._subject_exists, subject):
            self._call(what, self._set_compatibility, subject)
        schema = Schema(schema_json, "AVRO")
        return int(self._call(what, self._client.register_schema, subject, schema))

    def schema_json(self, schema_id: int) -> str:
        try:
            return str(self._call(f"reading schema id {schema_id}", self._get_schema, schema_id))
        except _NotFound:
            raise LookupError(schema_id) from None

    # -- the client's calls ------------------------------------------------------------------

    def _subject_exists(self, subject: str) -> bool:
        try:
            return bool(self._client.get_versions(subject))
        except SchemaRegistryError as error:
            if error.http_status_code == _NOT_FOUND and error.error_code == _SUBJECT_NOT_FOUND:
                return False
            raise

    def _set_compatibility(self, subject: str) -> None:
        level = ConfigCompatibilityLevel(_COMPATIBILITY)
        self._client.set_config(subject, ServerConfig(compatibility=level))

    def _get_schema(self, schema_id: int) -> str:
        try:
            return str(self._client.get_schema(schema_id).schema_str)
        except SchemaRegistryError as error:
            if error.http_status_code == _NOT_FOUND:
                raise _NotFound from error
            raise

    def _call(self, what: str, call: Callable[..., Any], *args: Any) -> Any:
        """``call(*args)``, its failures as seqgate's errors naming the registry and the fix."""
        url = self.settings.url
        try:
            return call(*args)
        except _NotFound:
            raise
        except SchemaRegistryError as error:
            status = error.http_status_code
            said = f"HTTP {status}, code {error.error_code}: {error.error_message}"
            if status in (401, 403):
                raise SchemaRegistryRefused(
                    f"the schema registry at {url} refused the credentials while {what}"
                    f" ({said}): check --schema-registry-auth"
                ) from None
            if status == 409:
                raise SchemaRegistryRefused(
                    f"the schema registry at {url} refused {what}: the schema is not compatible"
                    f" with the subject's latest version under its compatibility level ({said});"
                    " see docs/consumers.md on schema evolution"
                ) from None
            if status >= _SERVER_ERROR or status < 0:
                raise SchemaRegistryUnreachable(
                    f"the schema registry at {url} failed while {what} ({said}):"
                    " check that it is up, then run the command again"
                ) from None
            raise SchemaRegistryRefused(
                f"the schema registry at {url} refused {what} ({said})"
            ) from None
        except Exception as error:
            # The client's HTTP library raises its own transport errors (connection
            # refused, time-out, TLS), besides OSError; none is anything but "not reachable".
            raise SchemaRegistryUnreachable(_unreachable(url, what, error)) from None


class _NotFound(Exception):
    """A schema id the registry does not have."""


def _unreachable(url: str, what: str, error: BaseException) -> str:
    return (
        f"the schema registry at {url} did not answer while {what}"
        f" ({type(error).__name__}: {error}): check --schema-registry-url and that the"
        " registry is up"
    )


def _new_client(settings: RegistrySettings) -> Any:
    try:
        return SchemaRegistryClient.new_client(settings.client_config())
    except (ValueError, TypeError) as error:
        raise UsageError(f"--schema-registry-property: {error}") from None
    except OSError as error:  # a TLS file that cannot be read
        name = getattr(error, "filename", None) or "a file"
        raise UsageError(
            f"--schema-registry-property: cannot read {name} ({error.strerror or error}):"
            " check ssl.ca.location, ssl.certificate.location and ssl.key.location"
        ) from None


def describe_registry(framing: Framing) -> dict[str, object] | None:
    """The registry of ``framing`` as --print-config shows it (secrets masked), or None."""
    registry = framing.registry
    return registry.settings.describe() if isinstance(registry, ConfluentSchemaRegistry) else None


def connect(settings: RegistrySettings | None, client: Any = None) -> Framing:
    """The framing of a command: through the registry of ``settings``, or single-object
    encoding when there is none. Secrets are masked in logs from here on."""
    if settings is None:
        return Framing()
    redact(settings.secrets())
    return Framing(ConfluentSchemaRegistry(settings, client))
