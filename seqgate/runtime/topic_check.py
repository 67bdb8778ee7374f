"""`seqgate topics check`: do the topics seqgate uses fit what it relies on?

`check_topics` is the decision, a pure function of the described topics and the
expectations; `describe_topics` is the Kafka I/O that feeds it. The rules and their
reasons are in docs/operations.md ("Topics for a production cluster").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource  # type: ignore[attr-defined]

from seqgate.runtime.errors import TopicCheckError
from seqgate.runtime.topics import (
    AUDIT,
    CHANGELOG,
    INPUT,
    OUTBOX,
    REJECTED,
    SOURCE,
    TopicRole,
)

OK, WARN, MISMATCH = "ok", "warn", "mismatch"

# Topics whose partition count should follow the input's (co-partitioning: an object's
# events are in partition N of each of them); the changelog's must.
_CO_PARTITIONED = frozenset({OUTBOX, REJECTED, AUDIT})
# What compaction would silently drop from each non-changelog topic.
_COMPACTION_LOSES = {
    INPUT: "events no worker has read yet",
    OUTBOX: "accepted events",
    REJECTED: "rejected records",
    AUDIT: "decisions",
    SOURCE: "notifications the bridge has not read yet",
}


@dataclass(frozen=True, slots=True)
class DescribedTopic:
    """What the cluster says about one existing topic."""

    name: str
    partitions: int
    replication_factor: int  # the smallest replica count of its partitions
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Expectations:
    """The minimums to check against; None: not required (see `check_topics`)."""

    partitions: int | None = None
    replication_factor: int | None = None
    min_insync_replicas: int | None = None


@dataclass(frozen=True, slots=True)
class Finding:
    topic: str
    family: str
    property: str
    status: str  # OK, WARN or MISMATCH
    detail: str
    fix: str = ""

    def line(self) -> str:
        text = f"{self.detail}; fix: {self.fix}" if self.fix else self.detail
        return "\t".join((self.topic, self.family, self.property, self.status, text))

    def as_dict(self) -> dict[str, str]:
        return asdict(self)


def _alter(topic: str, name: str, value: str) -> str:
    return (
        f"kafka-configs.sh --alter --entity-type topics --entity-name {topic}"
        f" --add-config {name}={value}"
    )


def check_topics(
    roles: Iterable[TopicRole],
    described: Mapping[str, DescribedTopic],
    expected: Expectations,
) -> list[Finding]:
    """The findings for each topic of `roles` (absent from `described`: missing), in order:
    exists, partitions, replication.factor, min.insync.replicas, cleanup.policy, then
    the input's message.timestamp.type."""
    roles = list(roles)
    reference = expected.partitions
    if reference is None:
        inputs = [described[r.name] for r in roles if r.family == INPUT and r.name in described]
        reference = inputs[0].partitions if inputs else None
    findings: list[Finding] = []
    for role in roles:
        topic = described.get(role.name)
        if topic is None:
            findings.append(
                Finding(
                    role.name,
                    role.family,
                    "exists",
                    MISMATCH,
                    "missing",
                    "create it with `seqgate topics create` and the same options",
                )
            )
            continue
        findings.append(Finding(role.name, role.family, "exists", OK, "exists"))
        findings.append(_partitions(role, topic, reference, expected.partitions))
        findings.append(_replication(role, topic, expected.replication_factor))
        insync = _min_insync(role, topic, expected.min_insync_replicas)
        if insync is not None:
            findings.append(insync)
        findings.append(_cleanup(role, topic))
        if role.family == INPUT:
            findings.append(_timestamps(role, topic))
    return findings


def _partitions(
    role: TopicRole, topic: DescribedTopic, reference: int | None, asked: int | None
) -> Finding:
    count = topic.partitions

    def found(status: str, detail: str, fix: str = "") -> Finding:
        return Finding(role.name, role.family, "partitions", status, detail, fix)

    if role.family == INPUT:
        if asked is not None and count != asked:
            return found(
                MISMATCH,
                f"{count} partitions, expected {asked}",
                f"pass --partitions {count}, or recreate the topic with {asked}"
                " (an object's partition depends on the count)",
            )
        return found(OK, f"{count}")
    if (
        reference is None
        or count == reference
        or role.family not in (_CO_PARTITIONED | {CHANGELOG})
    ):
        return found(OK, f"{count}")
    if role.family == CHANGELOG:
        return found(
            MISMATCH,
            f"{count} partitions, the input has {reference}: changelog partition N holds"
            " the state of input partition N, so the counts must be equal",
            f"recreate it with {reference} partitions, then rebuild the state with"
            " `seqgate reset --state rebuild`",
        )
    fix = (
        f"add partitions: kafka-topics.sh --alter --topic {role.name} --partitions {reference}"
        if count < reference
        else f"recreate it with {reference} partitions (partitions cannot be removed)"
    )
    return found(
        MISMATCH,
        f"{count} partitions, the input has {reference}: with equal counts an object's"
        " events are in the same partition number of the input and of this topic",
        fix,
    )


def _replication(role: TopicRole, topic: DescribedTopic, expected: int | None) -> Finding:
    factor = topic.replication_factor

    def found(status: str, detail: str, fix: str = "") -> Finding:
        return Finding(role.name, role.family, "replication.factor", status, detail, fix)

    if expected is not None and factor < expected:
        return found(
            MISMATCH,
            f"{factor}, expected at least {expected}",
            f"reassign its partitions to {expected} replicas each (kafka-reassign-partitions.sh)",
        )
    if expected is None and factor == 1:
        return found(
            WARN,
            "1: the topic is unavailable while its one broker is down, and lost with its disk",
            "on a production cluster use 3 (topics create --replication-factor 3); pass"
            " --replication-factor 1 to accept 1",
        )
    return found(OK, f"{factor}")


def _min_insync(role: TopicRole, topic: DescribedTopic, expected: int | None) -> Finding | None:
    raw = topic.configs.get("min.insync.replicas")
    if raw is None or not raw.strip().isdigit():
        return None
    value, factor = int(raw), topic.replication_factor

    def found(status: str, detail: str, fix: str = "") -> Finding:
        return Finding(role.name, role.family, "min.insync.replicas", status, detail, fix)

    if value > factor:
        return found(
            MISMATCH,
            f"{value}, more than the replication factor {factor}: no acks=all write"
            " (seqgate's producers) can succeed",
            _alter(role.name, "min.insync.replicas", str(max(1, factor - 1))),
        )
    if expected is not None and value < expected:
        return found(
            MISMATCH,
            f"{value}, expected at least {expected}: an acknowledged write may be on"
            f" only {value} replica(s)",
            _alter(role.name, "min.insync.replicas", str(expected)),
        )
    if value == factor and factor > 1:
        return found(
            WARN,
            f"{value}, equal to the replication factor: with one replica down acks=all"
            " producers (the bridge, the workers) cannot write",
            f"lower it: {_alter(role.name, 'min.insync.replicas', str(factor - 1))};"
            " or raise the replication factor",
        )
    return found(OK, f"{value}")


def _policies(raw: str) -> set[str]:
    return {part.strip() for part in raw.split(",") if part.strip()}


def _cleanup(role: TopicRole, topic: DescribedTopic) -> Finding:
    raw = topic.configs.get("cleanup.policy", "delete")
    policies = _policies(raw)

    def found(status: str, detail: str, fix: str = "") -> Finding:
        return Finding(role.name, role.family, "cleanup.policy", status, detail, fix)

    if role.family == CHANGELOG:
        if policies != {"compact"}:
            return found(
                MISMATCH,
                f"{raw}, expected compact: the changelog must keep the latest state of every"
                " key; deletion by retention forgets the watermarks of quiet objects",
                _alter(role.name, "cleanup.policy", "compact"),
            )
        return found(OK, raw)
    if "compact" in policies:
        return found(
            MISMATCH,
            f"{raw}, expected delete: compaction keeps only the latest record of each key,"
            f" so it loses {_COMPACTION_LOSES.get(role.family, 'records')}",
            _alter(role.name, "cleanup.policy", "delete"),
        )
    return found(OK, raw)


def _timestamps(role: TopicRole, topic: DescribedTopic) -> Finding:
    raw = topic.configs.get("message.timestamp.type", "CreateTime")
    if raw == "LogAppendTime":
        return Finding(role.name, role.family, "message.timestamp.type", OK, raw)
    return Finding(
        role.name,
        role.family,
        "message.timestamp.type",
        MISMATCH,
        f"{raw}, expected LogAppendTime: the dedupe window runs on record time, which"
        " the broker must stamp (docs/processor.md#record-time-and-late-events)",
        _alter(role.name, "message.timestamp.type", "LogAppendTime"),
    )


def mismatches(findings: Iterable[Finding]) -> list[Finding]:
    return [finding for finding in findings if finding.status == MISMATCH]


def summary(findings: list[Finding]) -> str:
    """The last line: OK (with the warnings counted) or FAILED naming each mismatch."""
    topics = len(dict.fromkeys(finding.topic for finding in findings))
    warnings = sum(finding.status == WARN for finding in findings)
    bad = mismatches(findings)
    counts = (
        f"{_count(topics, 'topic')}, {_count(len(findings), 'check')},"
        f" {_count(warnings, 'warning')}"
    )
    if not bad:
        return f"OK: {counts}"
    named = ", ".join(f"{finding.topic} {finding.property}" for finding in bad)
    return f"FAILED: {counts}, {_count(len(bad), 'mismatch')}: {named}"


def _count(number: int, noun: str) -> str:
    plural = noun + ("es" if noun.endswith("h") else "s")
    return f"{number} {noun if number == 1 else plural}"


# ---- Kafka I/O ---------------------------------------------------------------------------------

_CONFIGS = ("cleanup.policy", "min.insync.replicas", "message.timestamp.type")


def describe_topics(
    admin: AdminClient, names: Iterable[str], timeout: float
) -> dict[str, DescribedTopic]:
    """The existing topics among `names`, with their partitions, replication factor
    and the configs the check reads (as the broker applies them, defaults included)."""
    try:
        metadata = admin.list_topics(timeout=timeout).topics
    except KafkaException as error:
        raise TopicCheckError(f"cannot list the topics: {error.args[0].str()}") from error
    present = {}
    for name in dict.fromkeys(names):
        topic = metadata.get(name)
        if topic is None or topic.error is not None or not topic.partitions:
            continue
        replicas = min(len(partition.replicas) for partition in topic.partitions.values())
        present[name] = (len(topic.partitions), replicas)
    if not present:
        return {}
    resources = [ConfigResource("topic", name) for name in present]
    described: dict[str, DescribedTopic] = {}
    for resource, future in admin.describe_configs(resources, request_timeout=timeout).items():
        name = resource.name
        try:
            entries = future.result()
        except KafkaException as error:
            raise TopicCheckError(
                f"topic {name}: cannot describe its configs: {error.args[0].str()}"
            ) from error
        configs = {key: entries[key].value for key in _CONFIGS if key in entries}
        partitions, replicas = present[name]
        described[name] = DescribedTopic(name, partitions, replicas, configs)
    return described
