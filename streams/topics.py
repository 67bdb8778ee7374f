"""Creating the topics of the pipeline, idempotently."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]


@dataclass(frozen=True, slots=True)
class TopicSpec:
    name: str
    partitions: int
    compacted: bool = False
    broker_time: bool = False

    def config(self) -> dict[str, str]:
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


def pipeline_topics(
    *,
    input_topic: str,
    outbox_topic: str,
    rejected_topic: str,
    application_id: str,
    partitions: int,
    broker_time: bool = True,
) -> list[TopicSpec]:
    """The topics of DESIGN §1. The changelog has as many partitions as the input:
    changelog partition N holds the state of input partition N. The input stamps its
    records on append (`broker_time`) unless told to keep the producers' timestamps."""
    return [
        TopicSpec(input_topic, partitions, broker_time=broker_time),
        TopicSpec(outbox_topic, partitions),
        TopicSpec(rejected_topic, partitions),
        TopicSpec(changelog_topic(application_id), partitions, compacted=True),
    ]


def create_topics(
    admin: AdminClient, specs: list[TopicSpec], replication_factor: int = 1, timeout: float = 30.0
) -> dict[str, str]:
    """Create missing topics; return {name: "created" | "exists"}.

    An existing topic is left alone, but a partition count that differs from
    the spec is an error: the object-to-partition mapping depends on it.
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
    for name, future in admin.create_topics(to_create, request_timeout=timeout).items():
        try:
            future.result()
            result[name] = "created"
        except KafkaException as error:
            if error.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise
            result[name] = "exists"
    return result
