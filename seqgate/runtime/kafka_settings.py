"""The user's Kafka client properties: where they come from, which ones seqgate refuses,
and how secrets are kept out of output.

Every command that opens a Kafka client takes librdkafka properties from three sources,
the first that names a property winning: `-X NAME=VALUE` flags, `SEQGATE_KAFKA_<NAME>`
variables, then a Java-style `.properties` file given with `--kafka-config`. The result
is one `KafkaSettings`, applied to every client the command creates
(`seqgate.runtime.kafka_clients.client_config`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer

from seqgate.runtime.errors import KafkaSettingsError
from seqgate.runtime.logs import MASK, mask_values

DEFAULT_TIMEOUT_S = 15.0
ENV_PREFIX = "SEQGATE_KAFKA_"
# Variables under the prefix that are seqgate's own options, not client properties.
RESERVED_VARIABLES = frozenset({"SEQGATE_KAFKA_CONFIG", "SEQGATE_KAFKA_TIMEOUT"})


# Properties seqgate sets itself because exactly-once or the partitioning depends on them.
# Each is refused with its reason rather than silently overridden.
_OWNED: dict[str, str] = {
    "bootstrap.servers": "give the address with --bootstrap-servers (or SEQGATE_BOOTSTRAP_SERVERS)",
    "metadata.broker.list": "give the address with --bootstrap-servers",
    "transactional.id": "seqgate derives it from --application-id and --instance-id"
    " (or --transactional-id): the broker fences a restarted instance by it",
    "enable.idempotence": "seqgate's producers are idempotent; exactly-once depends on it",
    "acks": "seqgate's producers use acks=all; exactly-once depends on it",
    "request.required.acks": "seqgate's producers use acks=all; exactly-once depends on it",
    "isolation.level": "seqgate reads read_committed so that aborted records never count",
    "enable.auto.commit": "seqgate commits offsets itself, in its transactions or after delivery",
    "auto.commit.enable": "seqgate commits offsets itself, in its transactions or after delivery",
    "enable.auto.offset.store": "seqgate stores offsets itself",
    "auto.offset.reset": "a new group starts at the earliest offset so that no input is skipped;"
    " move a group with `seqgate reset`",
    "group.id": "give the group with --application-id (or --group-id)",
    "group.instance.id": "give it with --instance-id",
    "partitioner": "bridge and worker must map a key to the same partition (murmur2_random,"
    " the Java client's)",
    "partition.assignment.strategy": "seqgate's consumers rebalance cooperatively (the worker:"
    " choose with --rebalance)",
    "enable.partition.eof": "seqgate sets it per client to notice the end of a partition",
    "metadata.recovery.strategy": "seqgate sets none: the default left an offset commit"
    " hanging after a full broker outage (librdkafka issue 5456)",
    "transaction.timeout.ms": "give it with --transaction-timeout-ms",
    "session.timeout.ms": "give it with --session-timeout-ms",
}
_CALLBACKS = frozenset(
    {
        "error_cb",
        "throttle_cb",
        "stats_cb",
        "oauth_cb",
        "on_delivery",
        "on_commit",
        "logger",
        "dr_cb",
        "dr_msg_cb",
        "default.topic.config",
    }
)
_JAVA_ONLY_HINTS = {
    "sasl.jaas.config": "a Java client setting; librdkafka takes sasl.username and"
    " sasl.password (and sasl.mechanism)",
    "ssl.truststore.location": "a Java client setting; librdkafka takes ssl.ca.location"
    " (a PEM file)",
    "ssl.keystore.type": "a Java client setting; librdkafka takes ssl.certificate.location"
    " and ssl.key.location (PEM), or ssl.keystore.location (PKCS#12)",
    "ssl.truststore.password": "a Java client setting; librdkafka's ssl.ca.location needs none",
    "client.dns.lookup": "a Java client setting with no librdkafka equivalent; remove it",
    "key.serializer": "a Java client setting; seqgate encodes its own records",
    "value.serializer": "a Java client setting; seqgate encodes its own records",
    "key.deserializer": "a Java client setting; seqgate decodes its own records",
    "value.deserializer": "a Java client setting; seqgate decodes its own records",
}
_SECRET_PARTS = ("password", "secret", "passphrase", "key.pem", "private.key", "oauthbearer.config")


def is_secret(name: str) -> bool:
    """A property whose value is never shown (`sasl.password`, `ssl.key.password`, ...)."""
    lowered = name.lower()
    return any(part in lowered for part in _SECRET_PARTS)


@dataclass(frozen=True, slots=True)
class ClientProperty:
    name: str
    value: str
    origin: str  # "-X", "SEQGATE_KAFKA_SASL_MECHANISM" or "path/client.properties:3"


@dataclass(frozen=True, slots=True)
class KafkaSettings:
    """Where the brokers are and how to talk to them, for every client of one command."""

    bootstrap_servers: str
    properties: Mapping[str, str] = field(default_factory=dict)
    origins: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = DEFAULT_TIMEOUT_S

    def masked_properties(self) -> dict[str, str]:
        return {
            name: MASK if is_secret(name) else value
            for name, value in sorted(self.properties.items())
        }

    def secrets(self) -> list[str]:
        return [value for name, value in self.properties.items() if is_secret(name) and value]

    def mask(self, text: str) -> str:
        """`text` (a librdkafka message, say) with every secret value replaced by ***."""
        return mask_values(text, self.secrets())

    def environment(self) -> dict[str, str]:
        """Variables that give a child `seqgate` process these same settings (secrets stay
        out of its command line, which other users can read)."""
        env = {
            "SEQGATE_BOOTSTRAP_SERVERS": self.bootstrap_servers,
            "SEQGATE_KAFKA_TIMEOUT": repr(self.timeout_s),
        }
        for name, value in self.properties.items():
            env[ENV_PREFIX + name.upper().replace(".", "_")] = value
        return env

    def describe(self) -> dict[str, object]:
        """For --print-config: the properties with secrets masked, and their origins."""
        return {
            "bootstrap_servers": self.bootstrap_servers,
            "timeout_s": self.timeout_s,
            "properties": self.masked_properties(),
            "origins": dict(sorted(self.origins.items())),
        }


# ---- the three sources ---------------------------------------------------------------------


def parse_flag(text: str) -> ClientProperty:
    """`-X NAME=VALUE`."""
    name, sep, value = text.partition("=")
    name = name.strip()
    if not sep or not name:
        raise KafkaSettingsError(f"-X {text!r}: expected NAME=VALUE, e.g. -X sasl.mechanism=PLAIN")
    return ClientProperty(name, value, "-X")


def from_environment(environ: Mapping[str, str]) -> list[ClientProperty]:
    """`SEQGATE_KAFKA_SASL_MECHANISM=PLAIN` → `sasl.mechanism=PLAIN`."""
    found = []
    for variable, value in sorted(environ.items()):
        if not variable.startswith(ENV_PREFIX) or variable in RESERVED_VARIABLES:
            continue
        name = variable[len(ENV_PREFIX) :].lower().replace("_", ".")
        if name:
            found.append(ClientProperty(name, value, variable))
    return found


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
_SEPARATOR = re.compile(r"\s*[=:]\s*|\s+")


def parse_properties(text: str, source: str) -> list[ClientProperty]:
    """A Java `.properties` text (comments with # or !, `key=value`, `key: value`,
    `key value`, backslash line continuations and escapes), each property with its
    `source:line`.

    Written here rather than taken from a package because the errors must name the
    line a property came from, which the parsers on PyPI do not keep.
    """
    found = []
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        number = index + 1
        line = lines[index].lstrip()
        index += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and index < len(lines):
            line = line[:-1] + lines[index].lstrip()
            index += 1
        if _continues(line):
            line = line[:-1]
        key_end = _key_end(line)
        raw_key, rest = line[:key_end], line[key_end:]
        separator = _SEPARATOR.match(rest)
        raw_value = rest[separator.end() :] if separator else rest
        origin = f"{source}:{number}"
        key = _unescape(raw_key, origin)
        found.append(ClientProperty(key, _unescape(raw_value, origin), origin))
    return found


def _continues(line: str) -> bool:
    trailing = len(line) - len(line.rstrip("\\"))
    return trailing % 2 == 1


def _key_end(line: str) -> int:
    escaped = False
    for position, char in enumerate(line):
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in "=: \t\f":
            return position
    return len(line)


def _unescape(text: str, origin: str) -> str:
    out: list[str] = []
    position = 0
    while position < len(text):
        char = text[position]
        if char != "\\" or position + 1 == len(text):
            out.append(char)
            position += 1
            continue
        nxt = text[position + 1]
        if nxt == "u":
            digits = text[position + 2 : position + 6]
            if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                raise KafkaSettingsError(
                    f"{origin}: malformed \\u escape {text[position : position + 6]!r}"
                )
            out.append(chr(int(digits, 16)))
            position += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        position += 2
    return "".join(out)


def read_properties_file(path: str | Path) -> list[ClientProperty]:
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as error:
        raise KafkaSettingsError(
            f"--kafka-config {file}: cannot read it ({error.strerror or error})"
        ) from error
    except UnicodeDecodeError as error:
        raise KafkaSettingsError(
            f"--kafka-config {file}: not UTF-8 text ({error.reason})"
        ) from error
    return parse_properties(text, str(file))


# ---- combining and checking -----------------------------------------------------------------


def build_settings(
    bootstrap_servers: str,
    *,
    flags: Iterable[str] = (),
    environ: Mapping[str, str] | None = None,
    config_file: str | Path | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> KafkaSettings:
    """The command's client settings: flags over variables over the file, each property
    checked (refused, unknown or invalid ones raise `KafkaSettingsError`)."""
    chosen: dict[str, ClientProperty] = {}
    layers: list[list[ClientProperty]] = [
        read_properties_file(config_file) if config_file else [],
        from_environment(environ or {}),
        [parse_flag(flag) for flag in flags],
    ]
    for layer in layers:  # later layers win
        for prop in layer:
            refuse_owned(prop)
            chosen[prop.name] = prop
    settings = KafkaSettings(
        bootstrap_servers=bootstrap_servers,
        properties={name: prop.value for name, prop in chosen.items()},
        origins={name: prop.origin for name, prop in chosen.items()},
        timeout_s=timeout_s,
    )
    check_with_librdkafka(settings)
    return settings


def refuse_owned(prop: ClientProperty) -> None:
    name = prop.name
    if name in _OWNED:
        raise KafkaSettingsError(
            f"{name} ({prop.origin}): seqgate sets this property itself; {_OWNED[name]}"
        )
    if name in _CALLBACKS:
        raise KafkaSettingsError(
            f"{name} ({prop.origin}): a Python callback of confluent-kafka, not a setting"
        )


_QUIET = logging.getLogger("seqgate.librdkafka.check")
_QUIET.addHandler(logging.NullHandler())
_QUIET.propagate = False


def check_with_librdkafka(settings: KafkaSettings) -> None:
    """Let librdkafka itself judge the properties all together (a CA file that cannot be
    read, a SASL mechanism this build lacks), as a producer and as a consumer; when it
    refuses them, one at a time, so that the error names where the bad one came from.

    Creating a client without `bootstrap.servers` opens no connection.
    """
    problem = _librdkafka_problem(dict(settings.properties))
    if not problem:
        return
    for name, value in settings.properties.items():
        alone = _librdkafka_problem({name: value})
        # "Failed to create ..." judges the combination (security.protocol=SASL_SSL alone
        # asks for GSSAPI): left to the message of all properties together.
        if alone and not alone.startswith("Failed to create"):
            hint = _JAVA_ONLY_HINTS.get(name, alone)
            raise KafkaSettingsError(settings.mask(f"{_shown(settings, name)}: {hint}"))
    culprit = _culprit(problem, settings)
    where = f"{_shown(settings, culprit)}: " if culprit else ""
    raise KafkaSettingsError(settings.mask(f"Kafka client properties: {where}{problem}"))


def _shown(settings: KafkaSettings, name: str) -> str:
    """`name=value (origin)`, the value masked for a secret."""
    value = MASK if is_secret(name) else settings.properties.get(name, "")
    return f"{name}={value} ({settings.origins.get(name, '?')})"


def _culprit(problem: str, settings: KafkaSettings) -> str | None:
    named = [name for name in settings.properties if name in problem]
    return max(named, key=len) if named else None


def _librdkafka_problem(properties: dict[str, str]) -> str | None:
    base: dict[str, object] = {"logger": _QUIET, **properties}
    trials: list[dict[str, object]] = [
        {**base, "enable.idempotence": True, "acks": "all"},
        {**base, "group.id": "seqgate-config-check", "isolation.level": "read_committed"},
    ]
    for index, trial in enumerate(trials):
        try:
            client = Producer(trial) if index == 0 else Consumer(trial)
        except KafkaException as error:
            return str(error.args[0].str())
        except (TypeError, ValueError) as error:
            return str(error)
        if isinstance(client, Consumer):
            client.close()
    return None
