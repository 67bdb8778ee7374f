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

This module is the planning (which partitions, which offsets, which diff): pure.
The Kafka I/O that reads what is committed and applies a plan is
`seqgate.streams.tools.reset`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from enum import StrEnum

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import changelog_topic
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.streams.errors import ResetError
from seqgate.streams.rules.policy import Policy
from seqgate.streams.tools.inspect import GroupDescription


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
        return asdict(self)


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


@dataclass(frozen=True, slots=True)
class ResetRequest:
    kafka: KafkaSettings
    application_id: str
    input_topic: str
    target: OffsetTarget
    state: StateMode
    policy: Policy
    timeout_s: float = 60.0
    framing: Framing = SINGLE_OBJECT  # the input events come in either encoding

    @property
    def changelog_topic(self) -> str:
        return changelog_topic(self.application_id)
