"""Where each partition's standby replicas are, and how far behind, and which partitions
are being restored (`seqgate status`).

A worker with `--standby-replicas` commits, about once a second, how far each of its
standby stores has applied the changelog, under its own consumer group
(`seqgate.runtime.topics.standby_group`), with the time in the offset's metadata.
The group keeps those offsets after a standby is dropped or its worker dies, so only the
ones committed within `fresh_s` count as standbys now. An assigned partition's restore
reports the same way, in the group of the restore consumers (worker/restore_report.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException
from confluent_kafka.admin import AdminClient

from seqgate.runtime.topics import (
    STANDBY_STAMP,
    read_restore_stamp,
    restore_group,
    standby_group_prefix,
)

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


@dataclass(frozen=True, slots=True)
class RestoreProgress:
    instance_id: str
    partition: int
    remaining: int  # changelog records the restore has yet to read (an upper bound)

    def describe(self) -> str:
        return f"{self.instance_id}({self.remaining:,} left)"


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


def restores_under_way(
    admin: AdminClient,
    application_id: str,
    changelog_topic: str,
    timeout: float,
    *,
    now_ms: int | None = None,
    fresh_s: float = FRESH_S,
) -> dict[int, RestoreProgress]:
    """Partition -> its restore under way, as reported within `fresh_s`."""
    group = restore_group(application_id)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    try:
        answer = admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=timeout
        )[group]
        offsets = answer.result(timeout=timeout).topic_partitions or []
    except KafkaException:
        return {}  # no restore ever reported
    found = {}
    for tp in offsets:
        report = read_restore_stamp(tp.metadata)
        if tp.topic != changelog_topic or report is None or now_ms - report[0] > fresh_s * 1000:
            continue
        found[tp.partition] = RestoreProgress(report[1], tp.partition, report[2])
    return found
