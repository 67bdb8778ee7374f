"""Where each partition's standby replicas are, and how far behind (`seqgate status`).

A worker with `--standby-replicas` commits, about once a second, how far each of its
standby stores has applied the changelog, under its own consumer group
(`seqgate.streams.runtime.topics.standby_group`), with the time in the offset's metadata.
The group keeps those offsets after a standby is dropped or its worker dies, so only the
ones committed within `fresh_s` count as standbys now.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka.admin import AdminClient

from seqgate.streams.runtime.topics import STANDBY_STAMP, standby_group_prefix

# A standby reports every second; three missed reports and it is no longer counted.
FRESH_S = 5.0


@dataclass(frozen=True, slots=True)
class StandbyProgress:
    instance_id: str
    partition: int
    offset: int  # the next changelog offset its store has not applied
    lag: int  # changelog end - offset

    def describe(self) -> str:
        return f"{self.instance_id}(lag {self.lag})"


def stamped_ms(metadata: str | None) -> int | None:
    """The epoch milliseconds a standby wrote into its offset's metadata, if any."""
    if not metadata or not metadata.startswith(STANDBY_STAMP):
        return None
    try:
        return int(metadata[len(STANDBY_STAMP) :])
    except ValueError:
        return None


def standby_progress(
    admin: AdminClient,
    application_id: str,
    changelog_topic: str,
    changelog_ends: dict[int, int],
    timeout: float,
    *,
    now_ms: int | None = None,
    fresh_s: float = FRESH_S,
) -> list[StandbyProgress]:
    """The standbys of the application's workers reported within `fresh_s`, by partition."""
    prefix = standby_group_prefix(application_id)
    listed = admin.list_consumer_groups(request_timeout=timeout).result(timeout=timeout)
    groups = sorted(g.group_id for g in listed.valid if g.group_id.startswith(prefix))
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    found = []
    for group in groups:
        request = [ConsumerGroupTopicPartitions(group)]
        try:
            answer = admin.list_consumer_group_offsets(request, request_timeout=timeout)[group]
            offsets = answer.result(timeout=timeout).topic_partitions or []
        except KafkaException:
            continue  # a group deleted meanwhile
        for tp in offsets:
            at = stamped_ms(tp.metadata)
            if tp.topic != changelog_topic or at is None or now_ms - at > fresh_s * 1000:
                continue
            end = changelog_ends.get(tp.partition, tp.offset)
            lag = max(0, end - tp.offset)
            found.append(StandbyProgress(group[len(prefix) :], tp.partition, tp.offset, lag))
    return sorted(found, key=lambda s: (s.partition, s.instance_id))
