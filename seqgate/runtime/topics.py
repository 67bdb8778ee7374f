"""Creating the topics of the pipeline, idempotently, with the operator's topic configs."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from seqgate.runtime.errors import TopicConfigError, TopicCreateError


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    compacted: bool = False
    broker_time: bool = False
    # The operator's topic configs (`topics create --config`), checked by `family_configs`.
    overrides: Mapping[str, str] = field(default_factory=dict)

    def config(self) -> dict[str, str]:
        return {**self.owned_config(), **self.overrides}

    def owned_config(self) -> dict[str, str]:
        if self.compacted:
            # Changelogs keep the latest value per key forever.
            return {"cleanup.policy": "compact", "min.compaction.lag.ms": "0"}
        if self.broker_time:
            # The worker's dedupe window runs on record time: stamped by the broker
            # on append, no producer's clock (or choice) can move it, and a replay
            # still reads the same timestamps (docs/processor.md#record-time).
            return {"message.timestamp.type": "LogAppendTime"}
        return {}


def changelog_topic(application_id: str) -> str:
    return f"{application_id}-watermarks-changelog"


# The metadata of a standby's committed progress: this prefix, then epoch milliseconds.
STANDBY_STAMP = "standby@"


def standby_group(application_id: str, instance_id: str) -> str:
    """The consumer group under which a worker's standby replicas record how far each has
    applied the changelog (read by `seqgate status` and any Kafka tool that shows a
    group's lag). It never joins the group: it only commits offsets there."""
    return f"{standby_group_prefix(application_id)}{instance_id}"


def standby_group_prefix(application_id: str) -> str:
    return f"{application_id}-standby-"


# The metadata of an owner's stamp: this prefix, epoch milliseconds, ":", the instance id.
OWNER_STAMP = "owner@"


def owners_group(application_id: str) -> str:
    """The group in which each worker with standby replicas stamps, every few seconds, the
    input partitions it owns (an offset per partition, the owner in its metadata), so that
    every worker reads the same assignment without describing the group
    (worker/standby.py). Never joined."""
    return f"{application_id}-owners"


def owner_stamp(at_ms: int, instance_id: str) -> str:
    return f"{OWNER_STAMP}{at_ms}:{instance_id}"


def read_owner_stamp(metadata: str | None) -> tuple[int, str] | None:
    """(epoch milliseconds, owner) of an owner's stamp; None for anything else."""
    return _read_stamp(OWNER_STAMP, metadata)


# The metadata of a restore's progress report: this prefix, epoch milliseconds, ":", the
# restoring worker's instance id, ":", the changelog records it has yet to read. A finished
# restore reports RESTORED_STAMP the same way.
RESTORE_STAMP = "restoring@"
RESTORED_STAMP = "restored@"


def restore_group(application_id: str) -> str:
    """The group of the workers' restore consumers: never joined, it holds, per changelog
    partition, the last progress report of its restore (worker/restore_report.py)."""
    return f"{application_id}-restore"


def restore_stamp(at_ms: int, instance_id: str, remaining: int, *, done: bool = False) -> str:
    return f"{RESTORED_STAMP if done else RESTORE_STAMP}{at_ms}:{instance_id}:{remaining}"


def read_restore_stamp(metadata: str | None) -> tuple[int, str, int] | None:
    """(epoch milliseconds, instance id, records left) of a restore under way; None for a
    finished one or anything else."""
    stamp = _read_stamp(RESTORE_STAMP, metadata)
    if stamp is None:
        return None
    instance, _, remaining = stamp[1].rpartition(":")
    if not remaining.isdigit() or not instance:
        return None
    return stamp[0], instance, int(remaining)


# The metadata of a takeover's mark: this prefix, epoch milliseconds, ":", the new owner.
FENCE_STAMP = "fenced@"


def fenced_group(application_id: str, instance_id: str) -> str:
    """The consumer group under which the new owner of a departed worker's partitions marks,
    just before it ends that worker's open transaction, when and by whom it did
    (worker/handover.py). A worker whose producer is fenced reads it to tell a takeover of
    its partitions from a second process with its --instance-id. Never joined: offsets only."""
    return f"{application_id}-fenced-{instance_id}"


def fence_stamp(at_ms: int, by: str) -> str:
    return f"{FENCE_STAMP}{at_ms}:{by}"


def read_fence_stamp(metadata: str | None) -> tuple[int, str] | None:
    """(epoch milliseconds, new owner) of a takeover's mark; None for anything else."""
    return _read_stamp(FENCE_STAMP, metadata)


def _read_stamp(prefix: str, metadata: str | None) -> tuple[int, str] | None:
    """`<prefix><epoch ms>:<instance id>` read back; None for anything else."""
    if not metadata or not metadata.startswith(prefix):
        return None
    at, _, by = metadata[len(prefix) :].partition(":")
    if not at.isdigit() or not by:
        return None
    return int(at), by


def pipeline_topics(
    *,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    partitions: int,
    broker_time: bool = True,
) -> list[TopicSpec]:
    """The topics of docs/design.md §1.2. The changelog has as many partitions as the input:
    changelog partition N holds the state of input partition N. The input stamps its
    records on append (`broker_time`) unless told to keep the producers' timestamps."""
    return [
        TopicSpec(input_topic, partitions, broker_time=broker_time),
        TopicSpec(outbox_topic, partitions),
        TopicSpec(rejected_topic, partitions),
        TopicSpec(changelog_topic(application_id), partitions, compacted=True),
    ]


# ---- the topics seqgate uses, by family ---------------------------------------------------------

INPUT, OUTBOX, REJECTED, CHANGELOG, AUDIT, SOURCE = (
    "input",
    "outbox",
    "rejected",
    "changelog",
    "audit",
    "source",
)
FAMILIES = (INPUT, OUTBOX, REJECTED, CHANGELOG, AUDIT, SOURCE)
ALL = "all"


@dataclass(frozen=True, slots=True)
class TopicRole:
    """A topic seqgate uses and what for (its family: `input`, `changelog`, ...)."""

    family: str
    name: str


def topic_roles(
    *,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    audit_topic: str | None = None,
    source_topics: Iterable[str] = (),
) -> list[TopicRole]:
    roles = [
        TopicRole(INPUT, input_topic),
        TopicRole(OUTBOX, outbox_topic),
        TopicRole(REJECTED, rejected_topic),
        TopicRole(CHANGELOG, changelog_topic(application_id)),
    ]
    if audit_topic:
        roles.append(TopicRole(AUDIT, audit_topic))
    roles.extend(TopicRole(SOURCE, name) for name in source_topics)
    return roles


def role_specs(
    roles: Iterable[TopicRole], partitions: int, configs: Mapping[str, Mapping[str, str]]
) -> list[TopicSpec]:
    """The specs of `roles`, each with its family's configs (from `family_configs`)."""
    return [
        TopicSpec(
            role.name,
            partitions,
            compacted=role.family == CHANGELOG,
            broker_time=role.family == INPUT,
            overrides=dict(configs.get(role.family, {})),
        )
        for role in roles
    ]


# ---- the operator's topic configs ---------------------------------------------------------------


_CONFIG_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")


def parse_topic_config(text: str) -> tuple[str, str, str]:
    """`outbox:retention.ms=604800000` -> ("outbox", "retention.ms", "604800000")."""
    families = "|".join((*FAMILIES, ALL))
    example = "e.g. --config outbox:retention.ms=604800000"
    family, colon, setting = text.partition(":")
    name, equals, value = setting.partition("=")
    family, name, value = family.strip(), name.strip(), value.strip()
    if not colon or not equals:
        raise TopicConfigError(
            f"--config {text!r}: expected FAMILY:NAME=VALUE, FAMILY one of {families}, {example}"
        )
    if family not in (*FAMILIES, ALL):
        raise TopicConfigError(
            f"--config {text!r}: unknown topic family {family!r}; use one of {families}, {example}"
        )
    if not _CONFIG_NAME.fullmatch(name):
        raise TopicConfigError(
            f"--config {text!r}: {name!r} is not a topic config name"
            f" (lower case, dotted, as in Kafka's docs), {example}"
        )
    if not value:
        raise TopicConfigError(f"--config {text!r}: no value after '=', {example}")
    return family, name, value


def _refusal(family: str, name: str, value: str) -> str | None:
    """Why seqgate owns this config of this family (None: the operator may set it)."""
    if name == "cleanup.policy" and family == CHANGELOG:
        return (
            "the changelog's cleanup.policy is seqgate's (compact: it must keep the latest"
            " state of every key forever)"
        )
    if name == "cleanup.policy" and "compact" in value:
        return (
            f"a compacted {family} topic loses all but the latest record of each key"
            " (every earlier event of an object); use cleanup.policy=delete or leave it"
        )
    if name == "message.timestamp.type" and family == INPUT:
        return (
            "the input's message.timestamp.type is seqgate's (LogAppendTime: the dedupe window"
            " runs on broker-stamped record time, docs/processor.md#record-time-and-late-events)"
        )
    return None


def family_configs(
    values: Iterable[str],
    families: Iterable[str],
    min_insync_replicas: int | None = None,
) -> dict[str, dict[str, str]]:
    """{family: {name: value}} for the families present, from `--config` values (the
    family's own win over `all:`) and `--min-insync-replicas` (which both win over)."""
    present = list(dict.fromkeys(families))
    general: dict[str, str] = {}
    specific: dict[str, dict[str, str]] = {family: {} for family in present}
    for text in values:
        family, name, value = parse_topic_config(text)
        targets = present if family == ALL else [family]
        if family != ALL and family not in specific:
            raise TopicConfigError(
                f"--config {text!r}: no {family} topic is created by this command"
                f" ({_how_to_add(family)}); remove the flag or add the topic"
            )
        for target in targets:
            reason = _refusal(target, name, value)
            if reason:
                raise TopicConfigError(f"--config {text!r}: {reason}; remove it")
        (general if family == ALL else specific[family])[name] = value
    result: dict[str, dict[str, str]] = {}
    for family in present:
        merged = {**general, **specific[family]}
        if min_insync_replicas is not None:
            merged.setdefault("min.insync.replicas", str(min_insync_replicas))
        result[family] = merged
    return result


def _how_to_add(family: str) -> str:
    return {AUDIT: "add --audit or --audit-topic", SOURCE: "add --source-topic"}.get(
        family, "every command creates it"
    )


# ---- creating ----------------------------------------------------------------------------------


# -1: the broker's default.replication.factor (KIP-464), which a production cluster sets.
BROKER_DEFAULT_REPLICATION = -1


def create_topics(
    admin: AdminClient,
    specs: list[TopicSpec],
    replication_factor: int = 1,
    timeout: float = 30.0,
) -> dict[str, str]:
    """Create missing topics; return {name: "created" | "exists"}.

    An existing topic is left alone, but a partition count that differs from
    the spec is an error: the object-to-partition mapping depends on it. A topic
    the broker refuses raises `TopicCreateError` naming it and the broker's reason.
    """
    existing = admin.list_topics(timeout=timeout).topics
    result: dict[str, str] = {}
    to_create: list[NewTopic] = []
    for spec in specs:
        metadata = existing.get(spec.name)
        if metadata is not None and metadata.error is None:
            found = len(metadata.partitions)
            if found != spec.partitions:
                raise ValueError(
                    f"topic {spec.name} exists with {found} partitions, expected {spec.partitions}:"
                    f" pass --partitions {found} or recreate the topic"
                )
            result[spec.name] = "exists"
            continue
        to_create.append(
            NewTopic(
                spec.name,
                num_partitions=spec.partitions,
                replication_factor=replication_factor,
                config=spec.config(),
            )
        )
    if not to_create:  # the client refuses an empty request
        return result
    refused: dict[str, list[str]] = {}  # the broker's reason -> the topics it refused for it
    for name, future in admin.create_topics(to_create, request_timeout=timeout).items():
        try:
            future.result()
            result[name] = "created"
        except KafkaException as error:
            kafka_error = error.args[0]
            if kafka_error.code() != KafkaError.TOPIC_ALREADY_EXISTS:
                refused.setdefault(kafka_error.str().rstrip("."), []).append(name)
                continue
            result[name] = "exists"
    if refused:
        # Every request got an answer: the topics that were created stay (a rerun skips them).
        raise TopicCreateError(
            "; ".join(
                f"the broker refused to create {'topic' if len(names) == 1 else 'topics'}"
                f" {', '.join(sorted(names))}: {reason}"
                for reason, names in sorted(refused.items())
            )
        )
    return result
