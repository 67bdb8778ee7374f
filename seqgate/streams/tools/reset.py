"""`seqgate reset`: reprocessing by offset reset, with the state reset consistently.

Moving a worker group's committed input offsets back alone would be useless:
every replayed event would meet the watermark it set the first time and be
suppressed as a duplicate. So a reset always moves the *state* of each reset
partition too, in one of two explicit ways:

* `empty`: the state of the partition becomes empty (every live changelog key is
  tombstoned): the workers decide the replayed input as if they had never seen it.
* `rebuild`: the state becomes what a worker would have committed after processing
  the input exactly up to the new offset: the input from its earliest offset to the
  new one is replayed through the worker's own decision function
  (`seqgate.streams.tools.replay.PartitionReplay`, the reference model of `verify`).

How the new state is written: as a *diff appended to the changelog* (values for
keys whose value changes, tombstones for keys that disappear), never by deleting
or recreating the changelog. Every RocksDB store of any worker instance mirrors a
prefix of the changelog and records the offset it reflects; on its next
assignment it replays the changelog from that offset to the end, which now ends
with the diff, so it arrives exactly at the new state without anyone deleting a
local directory. (Deleting records instead would leave a store that is at the
old end with nothing to replay: it would silently keep the old state.)

The diff is produced in one Kafka transaction (transactional.id
`<application-id>/reset`). The new offsets are committed with
`alter_consumer_group_offsets` after the diff is written and before that
transaction commits: the broker refuses the offsets while the group has members,
and then the transaction is aborted, so either both change or neither. The only
gap is a failure of the final `commit_transaction` after the offsets moved; the
command then says so, and running the same command again completes the reset
(it is idempotent: the plan and the diff are recomputed from what is committed).

Planning (which partitions, which offsets, which diff) is pure and separate from
the Kafka I/O below it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from seqgate.streams.rules.policy import Policy
from seqgate.streams.runtime.errors import UsageError
from seqgate.streams.runtime.kafka_clients import client_config
from seqgate.streams.runtime.kafka_settings import KafkaSettings
from seqgate.streams.runtime.topics import changelog_topic
from seqgate.streams.tools.inspect import (
    GroupDescription,
    InspectError,
    admin_client,
    changelog_state,
    committed_offsets,
    describe_group,
    earliest_offsets,
    high_watermarks,
    list_offsets,
    read_partition,
    stable_ends,
    topic_partitions,
)
from seqgate.streams.tools.replay import PartitionReplay


class ResetError(UsageError):
    """The reset cannot be done as asked; the message is one line naming the fix."""


class StateMode(StrEnum):
    EMPTY = "empty"
    REBUILD = "rebuild"


class TargetKind(StrEnum):
    EARLIEST = "earliest"
    DATETIME = "datetime"
    OFFSETS = "offsets"


@dataclass(frozen=True, slots=True)
class OffsetTarget:
    """Where the group should start: the earliest offsets, the first offsets at or after a
    time, or explicit offsets of some partitions (the others keep offsets and state)."""

    kind: TargetKind
    timestamp_ms: int | None = None
    offsets: Mapping[int, int] = field(default_factory=dict)

    def describe(self) -> str:
        if self.kind is TargetKind.EARLIEST:
            return "--to-earliest"
        if self.kind is TargetKind.DATETIME:
            assert self.timestamp_ms is not None
            when = datetime.fromtimestamp(self.timestamp_ms / 1000, tz=UTC)
            return f"--to-datetime {when.isoformat(timespec='milliseconds')}"
        return "--to-offsets " + ",".join(f"{p}:{o}" for p, o in sorted(self.offsets.items()))


# ---- parsing the options (pure) ----------------------------------------------------------------


def parse_offsets(text: str) -> dict[int, int]:
    """`P:O[,P:O...]` -> {partition: offset}."""
    offsets: dict[int, int] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        partition, colon, offset = item.partition(":")
        if not colon or not partition.strip().isdigit() or not offset.strip().isdigit():
            raise ResetError(
                f"--to-offsets {text}: {item!r} is not PARTITION:OFFSET"
                " (non-negative integers, e.g. --to-offsets 0:120,1:98)"
            )
        number = int(partition)
        if number in offsets:
            raise ResetError(f"--to-offsets {text}: partition {number} is given twice")
        offsets[number] = int(offset)
    if not offsets:
        raise ResetError("--to-offsets: give at least one PARTITION:OFFSET (e.g. 0:120)")
    return offsets


def parse_datetime(text: str) -> int:
    """ISO 8601 date-time -> milliseconds since the epoch; without a zone it is UTC."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError as error:
        raise ResetError(
            f"--to-datetime {text}: not an ISO 8601 date-time"
            " (e.g. 2024-05-01T12:00:00Z or 2024-05-01T14:00:00+02:00)"
        ) from error
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def target_from_options(
    to_earliest: bool, to_datetime: str | None, to_offsets: str | None
) -> OffsetTarget:
    chosen = [
        name
        for name, given in (
            ("--to-earliest", to_earliest),
            ("--to-datetime", to_datetime is not None),
            ("--to-offsets", to_offsets is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        said = f" (got {', '.join(chosen)})" if chosen else ""
        raise ResetError(f"choose exactly one of --to-earliest, --to-datetime, --to-offsets{said}")
    if to_earliest:
        return OffsetTarget(TargetKind.EARLIEST)
    if to_datetime is not None:
        return OffsetTarget(TargetKind.DATETIME, timestamp_ms=parse_datetime(to_datetime))
    assert to_offsets is not None
    return OffsetTarget(TargetKind.OFFSETS, offsets=parse_offsets(to_offsets))


def state_mode(value: str | None) -> StateMode:
    if value is None:
        raise ResetError(
            "--state is required: --state empty (forget every watermark: replayed events are"
            " decided as new) or --state rebuild (the state as of the new offsets, replayed"
            " from the input); see docs/operations.md"
        )
    try:
        return StateMode(value.strip().lower())
    except ValueError:
        raise ResetError(f"--state {value}: use --state empty or --state rebuild") from None


# ---- the plan (pure) ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionPlan:
    partition: int
    committed: int | None  # the group's committed offset now (None: nothing committed)
    new_offset: int
    earliest: int  # first offset the input partition still holds
    end: int  # its last stable offset

    def as_dict(self) -> dict[str, int | None]:
        return {
            "partition": self.partition,
            "committed": self.committed,
            "new_offset": self.new_offset,
            "earliest": self.earliest,
            "end": self.end,
        }


def plan_offsets(
    target: OffsetTarget,
    partitions: Sequence[int],
    committed: Mapping[int, int | None],
    earliest: Mapping[int, int],
    end: Mapping[int, int],
    by_time: Mapping[int, int] | None = None,
) -> list[PartitionPlan]:
    """The new offset of each partition to reset.

    `by_time` holds, for --to-datetime, the first offset whose record time is at or
    after the target (-1 when there is none: the partition's end).
    """
    plans: list[PartitionPlan] = []
    if target.kind is TargetKind.OFFSETS:
        unknown = sorted(set(target.offsets) - set(partitions))
        if unknown:
            raise ResetError(
                f"{target.describe()}: the input has no partition {unknown[0]}"
                f" (partitions 0..{max(partitions)})"
            )
    for p in sorted(partitions):
        if target.kind is TargetKind.EARLIEST:
            new = earliest[p]
        elif target.kind is TargetKind.DATETIME:
            assert by_time is not None
            found = by_time.get(p, -1)
            new = end[p] if found < 0 else min(max(found, earliest[p]), end[p])
        else:
            if p not in target.offsets:
                continue
            new = target.offsets[p]
            if not earliest[p] <= new <= end[p]:
                raise ResetError(
                    f"{target.describe()}: offset {new} of partition {p} is outside"
                    f" {earliest[p]}..{end[p]}, the offsets that partition holds"
                )
        plans.append(PartitionPlan(p, committed.get(p), new, earliest[p], end[p]))
    return plans


def state_diff(
    current: Mapping[bytes, bytes], wanted: Mapping[bytes, bytes]
) -> dict[bytes, bytes | None]:
    """Changelog records that turn `current` into `wanted` (None: a tombstone), in key order."""
    diff: dict[bytes, bytes | None] = {}
    for key in sorted(current.keys() | wanted.keys()):
        value = wanted.get(key)
        if current.get(key) != value:
            diff[key] = value
    return diff


def active_members_message(group: GroupDescription) -> str:
    if group.members:
        who = ", ".join(member.describe() for member in group.members)
        what = f"has {len(group.members)} active member(s): {who}"
    else:
        what = f"is {group.state.replace('_', ' ')}"
    return (
        f"consumer group {group.group} {what}; stop the workers first (SIGTERM), then retry:"
        " a stopped worker stays a member until its session times out (--session-timeout-ms,"
        " 45 s by default); `seqgate status` shows the members"
    )


@dataclass(frozen=True, slots=True)
class ResetPlan:
    group: str
    input_topic: str
    changelog_topic: str
    target: OffsetTarget
    state: StateMode
    partitions: list[PartitionPlan]

    def as_dict(self) -> dict[str, object]:
        return {
            "group": self.group,
            "input_topic": self.input_topic,
            "changelog_topic": self.changelog_topic,
            "target": self.target.describe(),
            "state": self.state.value,
            "partitions": [p.as_dict() for p in self.partitions],
        }


def describe_state_step(plan: ResetPlan) -> str:
    partitions = ",".join(str(p.partition) for p in plan.partitions)
    if plan.state is StateMode.EMPTY:
        return (
            f"state: every key of {plan.changelog_topic} partition(s) {partitions} is tombstoned"
            " (empty state)"
        )
    return (
        f"state: {plan.changelog_topic} partition(s) {partitions} set to the replay of the"
        " input from its earliest offset up to the new offset (rebuilt state)"
    )


# ---- reading what is committed -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ResetRequest:
    kafka: KafkaSettings
    application_id: str
    input_topic: str
    target: OffsetTarget
    state: StateMode
    policy: Policy
    timeout_s: float = 60.0

    @property
    def changelog_topic(self) -> str:
        return changelog_topic(self.application_id)


def _refuse_if_active(admin: AdminClient, request: ResetRequest) -> None:
    group = describe_group(admin, request.application_id, request.input_topic, request.timeout_s)
    if group.active:
        raise ResetError(active_members_message(group))


def prepare(request: ResetRequest) -> ResetPlan:
    """Check that the group is idle and compute the plan; changes nothing."""
    admin = admin_client(request.kafka)
    try:
        count = topic_partitions(admin, request.input_topic, "--input-topic", request.timeout_s)
        changelog_count = topic_partitions(
            admin, request.changelog_topic, "--application-id", request.timeout_s
        )
        if changelog_count != count:
            raise ResetError(
                f"changelog {request.changelog_topic} has {changelog_count} partitions and the"
                f" input {request.input_topic} {count}: check --application-id and --input-topic"
            )
        _refuse_if_active(admin, request)
        partitions = list(range(count))
        committed = committed_offsets(
            admin, request.application_id, request.input_topic, partitions, request.timeout_s
        )
        earliest = earliest_offsets(admin, request.input_topic, partitions)
        end = stable_ends(admin, request.input_topic, partitions)
        by_time = None
        if request.target.kind is TargetKind.DATETIME:
            assert request.target.timestamp_ms is not None
            spec = OffsetSpec.for_timestamp(request.target.timestamp_ms)
            found = list_offsets(admin, request.input_topic, partitions, spec)
            by_time = {p: offset for p, (offset, _) in found.items()}
    except InspectError as error:
        raise ResetError(str(error)) from error
    plans = plan_offsets(request.target, partitions, committed, earliest, end, by_time)
    return ResetPlan(
        request.application_id,
        request.input_topic,
        request.changelog_topic,
        request.target,
        request.state,
        plans,
    )


def wanted_state(request: ResetRequest, plan: PartitionPlan) -> dict[bytes, bytes]:
    """The state partition `plan.partition` must have at its new offset."""
    if request.state is StateMode.EMPTY:
        return {}
    replay = PartitionReplay(request.policy)
    for record in read_partition(
        request.kafka,
        request.input_topic,
        plan.partition,
        start=plan.earliest,
        stop=plan.new_offset,
        group=f"{request.application_id}-reset",
        timeout=request.timeout_s,
    ):
        replay.apply(record)
    return replay.state


# ---- applying the plan -------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PartitionOutcome:
    partition: int
    committed: int | None
    new_offset: int
    written: int  # changelog values written
    tombstoned: int  # changelog keys deleted
    state_keys: int  # keys in the new state

    def as_dict(self) -> dict[str, int | None]:
        return {
            "partition": self.partition,
            "committed": self.committed,
            "new_offset": self.new_offset,
            "written": self.written,
            "tombstoned": self.tombstoned,
            "state_keys": self.state_keys,
        }


Echo = Callable[[str], None]

# How long to wait for the markers of a transaction that init_transactions aborted
# (a reset that died) before calling the changelog unstable.
_STABLE_WAIT_S = 10.0


def apply(request: ResetRequest, plan: ResetPlan, echo: Echo) -> list[PartitionOutcome]:
    """Write the state diff and commit the new offsets (see the module docstring)."""
    admin = admin_client(request.kafka)
    producer = Producer(
        client_config(
            request.kafka,
            **{
                "transactional.id": f"{request.application_id}/reset",
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "transaction.timeout.ms": 300_000,
            },
        )
    )
    failures: list[str] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            failures.append(error.str())

    try:
        _call(lambda: producer.init_transactions(request.timeout_s), "init_transactions")
        _wait_changelog_stable(admin, request, [p.partition for p in plan.partitions])
        diffs: list[tuple[PartitionPlan, dict[bytes, bytes | None], int]] = []
        for partition in plan.partitions:
            current = changelog_state(
                request.kafka,
                request.changelog_topic,
                partition.partition,
                group=f"{request.application_id}-reset",
            )
            wanted = wanted_state(request, partition)
            diffs.append((partition, state_diff(current, wanted), len(wanted)))
            echo(
                f"partition {partition.partition}: committed state {len(current)} keys,"
                f" new state {len(wanted)} keys"
            )
        _call(producer.begin_transaction, "begin_transaction")
        for partition, diff, _ in diffs:
            for key, value in diff.items():
                _produce(
                    producer, request.changelog_topic, partition.partition, key, value, on_delivery
                )
        if producer.flush(request.timeout_s) > 0 or failures:
            _abort(producer, request)
            raise ResetError(
                f"writing the state to {request.changelog_topic} failed"
                f" ({'; '.join(failures[:3]) or 'not acknowledged in time'}); nothing was"
                " changed: check the broker and run the command again"
            )
        try:
            _refuse_if_active(admin, request)
            _commit_offsets(admin, request, plan)
        except (ResetError, InspectError):
            _abort(producer, request)
            raise
        try:
            _call(lambda: producer.commit_transaction(request.timeout_s), "commit_transaction")
        except ResetError as error:
            raise ResetError(
                f"the offsets of group {plan.group} were moved but the state transaction did"
                f" not commit ({error}): run the same reset command again to complete it"
            ) from error
    except InspectError as error:
        raise ResetError(str(error)) from error
    finally:
        producer.flush(5)
    return [
        PartitionOutcome(
            partition.partition,
            partition.committed,
            partition.new_offset,
            written=sum(1 for value in diff.values() if value is not None),
            tombstoned=sum(1 for value in diff.values() if value is None),
            state_keys=keys,
        )
        for partition, diff, keys in diffs
    ]


def _produce(
    producer: Producer,
    topic: str,
    partition: int,
    key: bytes,
    value: bytes | None,
    on_delivery: Callable[[KafkaError | None, Message], None],
) -> None:
    while True:
        try:
            producer.produce(
                topic, key=key, value=value, partition=partition, on_delivery=on_delivery
            )
            return
        except BufferError:
            producer.poll(0.1)


def _call(action: Callable[[], object], what: str) -> None:
    try:
        action()
    except KafkaException as error:
        cause = error.args[0]
        text = cause.str() if isinstance(cause, KafkaError) else str(cause)
        raise ResetError(f"{what} failed: {text}") from error


def _abort(producer: Producer, request: ResetRequest) -> None:
    # On failure the broker aborts it on timeout, or the next reset's init_transactions does.
    with contextlib.suppress(KafkaException):
        producer.abort_transaction(request.timeout_s)


def _wait_changelog_stable(
    admin: AdminClient, request: ResetRequest, partitions: Sequence[int]
) -> None:
    """Refuse while a transaction is open on the changelog: a worker that is not a member
    any more (paused past its session) could still commit state behind our back."""
    deadline = time.monotonic() + _STABLE_WAIT_S
    while True:
        stable = stable_ends(admin, request.changelog_topic, partitions)
        high = high_watermarks(admin, request.changelog_topic, partitions)
        open_partitions = [p for p in partitions if stable[p] < high[p]]
        if not open_partitions:
            return
        if time.monotonic() > deadline:
            p = open_partitions[0]
            raise ResetError(
                f"changelog {request.changelog_topic} partition {p} has an open transaction"
                f" (stable end {stable[p]}, high watermark {high[p]}): a stopped worker's"
                " transaction is still open; start and stop that worker (same --instance-id)"
                " or wait for --transaction-timeout-ms, then retry"
            )
        time.sleep(0.2)  # polling the broker's answer, not synchronizing


def _commit_offsets(admin: AdminClient, request: ResetRequest, plan: ResetPlan) -> None:
    offsets = [
        TopicPartition(request.input_topic, p.partition, p.new_offset) for p in plan.partitions
    ]
    group = ConsumerGroupTopicPartitions(request.application_id, offsets)
    try:
        future = admin.alter_consumer_group_offsets([group], request_timeout=request.timeout_s)[
            request.application_id
        ]
        future.result(timeout=request.timeout_s)
    except KafkaException as error:
        cause = error.args[0]
        text = cause.str() if isinstance(cause, KafkaError) else str(cause)
        raise ResetError(
            f"committing the new offsets of group {request.application_id} failed ({text});"
            " nothing was changed: if a worker started meanwhile, stop it and run the command"
            " again"
        ) from error
