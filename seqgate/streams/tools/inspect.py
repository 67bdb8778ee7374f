"""Read-only views of a worker group's committed state: `seqgate watermark` and `seqgate status`.

Everything here reads what is *committed*: the changelog and the input with
`isolation.level=read_committed` (up to the last stable offset), the group's
committed offsets without waiting for open transactions (KIP-447's pending
offsets are not committed yet). Nothing here joins the worker group: readers
assign partitions by hand under a group id of their own.

The helpers below (group description, offsets, reading a partition to its
stable end) are shared with `seqgate.streams.tools.reset`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVar

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    IsolationLevel,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from seqgate.runtime.errors import PartitionStalled
from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.partition_reader import PartitionReader, PartitionReadFailed, reader_config
from seqgate.runtime.progress import Meter, NoMeter
from seqgate.schemas.codec import WATERMARK
from seqgate.schemas.errors import CodecError
from seqgate.schemas.identity import identity_partition
from seqgate.schemas.records import Watermark
from seqgate.streams.errors import InspectError
from seqgate.streams.state.keys import watermark_key
from seqgate.streams.tools.replay import InputRecord
from seqgate.streams.tools.standby_status import (
    RestoreProgress,
    StandbyProgress,
    restores_under_way,
    standby_progress,
)

_T = TypeVar("_T")


# ---- the group -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupMember:
    member_id: str
    instance_id: str | None  # group.instance.id (the worker's --instance-id)
    client_id: str
    host: str
    partitions: tuple[int, ...]  # assigned partitions of the input topic

    def describe(self) -> str:
        name = self.instance_id or self.member_id
        return f"{name} (client {self.client_id}, host {self.host})"


@dataclass(frozen=True, slots=True)
class GroupDescription:
    group: str
    state: str  # lower case: stable, empty, dead (no such group), preparing_rebalance, ...
    members: tuple[GroupMember, ...]

    @property
    def active(self) -> bool:
        """Whether any consumer is a member (a stopped worker with static membership stays
        one until its session times out)."""
        return bool(self.members) or self.state not in ("empty", "dead", "unknown")


def admin_client(kafka: KafkaSettings) -> AdminClient:
    return AdminClient(client_config(kafka))


def _kafka_text(error: KafkaException) -> str:
    cause = error.args[0] if error.args else error
    return cause.str() if isinstance(cause, KafkaError) else str(cause)


def _answer(request: Callable[[], Future[_T]], timeout: float, failure: str, fix: str = "") -> _T:
    """The result of one admin request; InspectError `failure: cause fix` when it fails."""
    try:
        return request().result(timeout=timeout)
    except KafkaException as error:
        raise InspectError(f"{failure}: {_kafka_text(error)}{fix}") from error


def describe_group(
    admin: AdminClient, group: str, input_topic: str, timeout: float = 30.0
) -> GroupDescription:
    description = _answer(
        lambda: admin.describe_consumer_groups([group], request_timeout=timeout)[group],
        timeout,
        f"cannot describe consumer group {group}",
        " (check --bootstrap-servers and that the broker is up)",
    )
    members = []
    for member in description.members:
        assigned: tuple[int, ...] = ()
        if member.assignment is not None:
            assigned = tuple(
                sorted(
                    tp.partition
                    for tp in member.assignment.topic_partitions
                    if tp.topic == input_topic
                )
            )
        members.append(
            GroupMember(
                member_id=member.member_id,
                instance_id=member.group_instance_id,
                client_id=member.client_id,
                host=member.host,
                partitions=assigned,
            )
        )
    state = getattr(description.state, "name", str(description.state)).lower()
    members.sort(key=lambda m: (m.instance_id or "", m.member_id))
    return GroupDescription(group, state, tuple(members))


def topic_partitions(admin: AdminClient, topic: str, option: str, timeout: float = 30.0) -> int:
    """The partition count of `topic`; `option` names the flag that chose it."""
    try:
        metadata = admin.list_topics(topic, timeout=timeout)
    except KafkaException as error:
        raise InspectError(f"cannot read the metadata of {topic}: {_kafka_text(error)}") from error
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise InspectError(f"{option} {topic}: no such topic (check {option} or create it)")
    return len(found.partitions)


def committed_offsets(
    admin: AdminClient, group: str, topic: str, partitions: Sequence[int], timeout: float = 30.0
) -> dict[int, int | None]:
    """The group's committed offset per partition (None: nothing committed).

    Transactional offsets still pending in an open transaction are not committed
    yet and are not waited for (require_stable is off).
    """
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in partitions])
    result = _answer(
        lambda: admin.list_consumer_group_offsets([request], request_timeout=timeout)[group],
        timeout,
        f"cannot read the committed offsets of group {group}",
    )
    found: dict[int, int | None] = {p: None for p in partitions}
    for tp in result.topic_partitions:
        if tp.topic == topic and tp.offset >= 0:
            found[tp.partition] = tp.offset
    return found


# The leader of a partition is changing or not serving yet: the same request succeeds later.
_LEADER_MOVING = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE})
_LEADER_PAUSE_S = 0.1


def list_offsets(
    admin: AdminClient,
    topic: str,
    partitions: Sequence[int],
    spec: Any,
    *,
    committed_only: bool = True,
    timeout: float = 30.0,
) -> dict[int, tuple[int, int]]:
    """partition -> (offset, timestamp) for one OffsetSpec. With committed_only the latest
    offset is the last stable offset (what a read_committed consumer can reach).

    A partition whose leader is moving, or not serving yet (a topic created a moment ago:
    the broker makes itself leader only when it applies the metadata record), answers
    NOT_LEADER_FOR_PARTITION, which librdkafka's admin client hands back: the request is
    asked again until ``timeout`` (seen in CI: a changelog listed right after its creation).
    """
    isolation = IsolationLevel.READ_COMMITTED if committed_only else IsolationLevel.READ_UNCOMMITTED
    request = {TopicPartition(topic, p): spec for p in partitions}
    deadline = time.monotonic() + timeout
    pause = _LEADER_PAUSE_S
    while True:
        try:
            futures = admin.list_offsets(
                request, isolation_level=isolation, request_timeout=timeout
            )
            return {
                tp.partition: (info.offset, info.timestamp)
                for tp, future in futures.items()
                for info in [future.result(timeout=timeout)]
            }
        except KafkaException as error:
            code = error.args[0].code() if error.args else None
            if code in _LEADER_MOVING and time.monotonic() + pause < deadline:
                time.sleep(pause)
                pause = min(2 * pause, 1.0)
                continue
            raise InspectError(
                f"cannot list the offsets of {topic}: {_kafka_text(error)}"
            ) from error


def earliest_offsets(admin: AdminClient, topic: str, partitions: Sequence[int]) -> dict[int, int]:
    spec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
    return {p: o for p, (o, _) in list_offsets(admin, topic, partitions, spec).items()}


def stable_ends(admin: AdminClient, topic: str, partitions: Sequence[int]) -> dict[int, int]:
    """The last stable offset (LSO) of each partition."""
    spec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    return {p: o for p, (o, _) in list_offsets(admin, topic, partitions, spec).items()}


def high_watermarks(admin: AdminClient, topic: str, partitions: Sequence[int]) -> dict[int, int]:
    spec = OffsetSpec.latest()  # type: ignore[no-untyped-call]
    offsets = list_offsets(admin, topic, partitions, spec, committed_only=False)
    return {p: o for p, (o, _) in offsets.items()}


def span(admin: AdminClient, topic: str, partitions: Sequence[int]) -> int:
    """How many offsets a full read of `partitions` covers (for a progress total)."""
    low = earliest_offsets(admin, topic, partitions)
    high = high_watermarks(admin, topic, partitions)
    return sum(max(high[p] - low[p], 0) for p in partitions)


# ---- reading committed records ------------------------------------------------------------------


def read_partition(
    kafka: KafkaSettings,
    topic: str,
    partition: int,
    *,
    start: int = 0,
    stop: int | None = None,
    group: str = "seqgate-inspect",
    timeout: float = 60.0,
    meter: Meter | None = None,
) -> Iterator[InputRecord]:
    """Committed records of one partition from `start` to its stable end, or to `stop`
    (exclusive), in offset order. Fails after `timeout` seconds without progress.
    `meter` is advanced by the offsets read (its total is the caller's to expect)."""
    consumer = Consumer(reader_config(kafka, group))
    try:
        tp = TopicPartition(topic, partition)
        low, high = consumer.get_watermark_offsets(tp, timeout=timeout)
        begin = max(start, low)
        end = high if stop is None else min(stop, high)
        if begin >= end:
            return
        yield from read_records(
            consumer, topic, partition, begin, end, timeout, InspectError, meter
        )
    finally:
        consumer.close()


def read_records(
    consumer: Consumer,
    topic: str,
    partition: int,
    begin: int,
    end: int,
    timeout: float,
    fail: Callable[[str], Exception],
    meter: Meter | None = None,
) -> Iterator[InputRecord]:
    """Records of one partition from `begin` to `end` (exclusive) with `consumer`
    (read_committed, partition EOF events on), in offset order; raises `fail(message)`
    after `timeout` seconds without progress or on a consumer error. `meter` advances
    by offsets, so the gaps of compaction and transaction markers count as scanned."""
    reader = PartitionReader(consumer, topic, partition, timeout=timeout)
    scanned = meter if meter is not None else NoMeter()
    position = begin
    try:
        for records in reader.batches(begin, stop=end):
            for message in records:
                offset = message.offset()
                assert offset is not None
                scanned.advance(offset + 1 - position)
                position = offset + 1
                timestamp = message.timestamp()[1]
                yield InputRecord(partition, offset, message.key(), message.value(), timestamp)
        scanned.advance(max(end - position, 0))
    except PartitionStalled:
        raise fail(f"reading {topic}[{partition}] made no progress for {timeout:.0f}s") from None
    except PartitionReadFailed as failed:
        raise fail(f"reading {topic}[{partition}]: {failed.error.str()}") from None


def changelog_state(
    kafka: KafkaSettings,
    changelog_topic: str,
    partition: int,
    group: str = "seqgate-inspect",
    meter: Meter | None = None,
) -> dict[bytes, bytes]:
    """The committed state of one partition: the last value per changelog key."""
    state: dict[bytes, bytes] = {}
    for record in read_partition(kafka, changelog_topic, partition, group=group, meter=meter):
        key = record.key or b""
        if record.value is None:
            state.pop(key, None)
        else:
            state[key] = record.value
    return state


# ---- seqgate watermark ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class WatermarkView:
    identity: str
    watermark: Watermark
    changelog_topic: str
    changelog_partition: int
    changelog_offset: int  # where the committed value was written
    written_at_ms: int  # that record's timestamp

    def as_dict(self) -> dict[str, object]:
        return {
            "identity": self.identity,
            **self.watermark.to_dict(),
            "changelog_topic": self.changelog_topic,
            "changelog_partition": self.changelog_partition,
            "changelog_offset": self.changelog_offset,
            "written_at": format_time(self.written_at_ms),
        }


def find_watermark(
    kafka: KafkaSettings,
    application_id: str,
    input_topic: str,
    changelog_topic: str,
    identity: str,
    timeout: float = 30.0,
    meter: Meter | None = None,
) -> tuple[int, WatermarkView | None]:
    """(changelog partition, the identity's committed watermark or None); `meter`
    follows the scan of that changelog partition."""
    admin = admin_client(kafka)
    partitions = topic_partitions(admin, input_topic, "--input-topic", timeout)
    changelog_count = topic_partitions(admin, changelog_topic, "--application-id", timeout)
    if changelog_count != partitions:
        raise InspectError(
            f"changelog {changelog_topic} has {changelog_count} partitions and input"
            f" {input_topic} {partitions}: check --input-topic and --application-id"
        )
    partition = identity_partition(identity, partitions)
    key = watermark_key(identity)
    last: InputRecord | None = None
    group = f"{application_id}-inspect"
    if meter is not None:
        meter.expect(span(admin, changelog_topic, [partition]))
    for record in read_partition(kafka, changelog_topic, partition, group=group, meter=meter):
        if record.key == key:
            last = record
    if last is None or last.value is None:
        return partition, None
    try:
        watermark = WATERMARK.decode(last.value)
    except CodecError as error:
        raise InspectError(
            f"the changelog record of {identity} at {changelog_topic}[{partition}]@{last.offset}"
            f" is not a Watermark ({error})"
        ) from error
    view = WatermarkView(
        identity, watermark, changelog_topic, partition, last.offset, last.timestamp
    )
    return partition, view


# ---- seqgate status ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionStatus:
    partition: int
    committed: int | None  # the group's committed input offset (None: nothing committed)
    end: int  # last stable offset of the input partition
    lag: int  # end - committed (or end - earliest when nothing is committed)
    last_commit_ms: int | None  # newest record time of the changelog partition
    standbys: tuple[StandbyProgress, ...] = ()  # reported lately (tools/standby_status.py)
    restoring: RestoreProgress | None = None  # its owner's restore, reported lately

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), "last_commit": format_time(self.last_commit_ms)}


@dataclass(frozen=True, slots=True)
class GroupStatus:
    group: GroupDescription
    input_topic: str
    changelog_topic: str
    partitions: list[PartitionStatus] = field(default_factory=list)

    def total_lag(self) -> int:
        return sum(p.lag for p in self.partitions)

    def as_dict(self) -> dict[str, object]:
        return {
            "group": self.group.group,
            "state": self.group.state,
            "members": [asdict(m) for m in self.group.members],
            "input_topic": self.input_topic,
            "changelog_topic": self.changelog_topic,
            "total_lag": self.total_lag(),
            "partitions": [p.as_dict() for p in self.partitions],
        }


def group_status(
    kafka: KafkaSettings,
    application_id: str,
    input_topic: str,
    changelog_topic: str,
    timeout: float = 30.0,
) -> GroupStatus:
    admin = admin_client(kafka)
    count = topic_partitions(admin, input_topic, "--input-topic", timeout)
    partitions = list(range(count))
    description = describe_group(admin, application_id, input_topic, timeout)
    committed = committed_offsets(admin, application_id, input_topic, partitions, timeout)
    ends = stable_ends(admin, input_topic, partitions)
    earliest = earliest_offsets(admin, input_topic, partitions)
    last_commit: dict[int, int | None] = {p: None for p in partitions}
    standbys: dict[int, list[StandbyProgress]] = {p: [] for p in partitions}
    restoring: dict[int, RestoreProgress] = {}
    if topic_partitions_or_none(admin, changelog_topic, timeout) == count:
        spec = OffsetSpec.max_timestamp()  # type: ignore[no-untyped-call]
        for p, (offset, timestamp) in list_offsets(
            admin, changelog_topic, partitions, spec
        ).items():
            last_commit[p] = timestamp if offset >= 0 and timestamp >= 0 else None
        changelog_ends = stable_ends(admin, changelog_topic, partitions)
        for standby in standby_progress(
            admin, application_id, changelog_topic, changelog_ends, timeout
        ):
            standbys.setdefault(standby.partition, []).append(standby)
        restoring = restores_under_way(admin, application_id, changelog_topic, timeout)
    rows = []
    for p in partitions:
        done = committed[p]
        start = done if done is not None else earliest[p]
        lag = max(ends[p] - start, 0)
        rows.append(
            PartitionStatus(
                p, done, ends[p], lag, last_commit[p], tuple(standbys[p]), restoring.get(p)
            )
        )
    return GroupStatus(description, input_topic, changelog_topic, rows)


def topic_partitions_or_none(admin: AdminClient, topic: str, timeout: float) -> int | None:
    try:
        return topic_partitions(admin, topic, "--application-id", timeout)
    except InspectError:
        return None


def format_time(ms: int | None) -> str | None:
    if ms is None or ms < 0:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat(timespec="milliseconds")
