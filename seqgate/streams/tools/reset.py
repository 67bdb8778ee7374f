"""`seqgate reset`, the Kafka I/O: read what is committed, then apply the plan.

The plan is `seqgate.streams.tools.reset_plan` (pure; its docstring says why a reset
moves the state with the offsets, and in which order). Applying it writes the state
diff in one Kafka transaction through the `TransactionalSession` every transaction
of seqgate runs on (transactional.id `<application-id>/reset`), moves the group's
offsets with `alter_consumer_group_offsets` after the diff is written, then commits.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass

from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, OffsetSpec  # type: ignore[attr-defined]

from seqgate.runtime.kafka_clients import ProducerSettings
from seqgate.runtime.progress import Meter, NoMeter
from seqgate.runtime.session import TransactionalSession
from seqgate.runtime.transaction_failures import SessionRole
from seqgate.streams.errors import InspectError, ResetError
from seqgate.streams.tools.inspect import (
    admin_client,
    changelog_state,
    committed_offsets,
    describe_group,
    earliest_offsets,
    high_watermarks,
    list_offsets,
    read_partition,
    span,
    stable_ends,
    topic_partitions,
)
from seqgate.streams.tools.replay import PartitionReplay
from seqgate.streams.tools.reset_plan import (
    PartitionPlan,
    ResetPlan,
    ResetRequest,
    StateMode,
    TargetKind,
    active_members_message,
    plan_offsets,
    state_diff,
)

# ---- reading what is committed -------------------------------------------------------------------


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


def wanted_state(
    request: ResetRequest, plan: PartitionPlan, meter: Meter | None = None
) -> dict[bytes, bytes]:
    """The state partition `plan.partition` must have at its new offset."""
    if request.state is StateMode.EMPTY:
        return {}
    replay = PartitionReplay(request.policy, framing=request.framing)
    for record in read_partition(
        request.kafka,
        request.input_topic,
        plan.partition,
        start=plan.earliest,
        stop=plan.new_offset,
        group=f"{request.application_id}-reset",
        timeout=request.timeout_s,
        meter=meter,
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
        return asdict(self)


Echo = Callable[[str], None]
Diff = tuple[PartitionPlan, dict[bytes, bytes | None], int]  # the plan, its diff, new state keys

# How long to wait for the markers of a transaction that init_transactions aborted
# (a reset that died) before calling the changelog unstable.
_STABLE_WAIT_S = 10.0


def apply(
    request: ResetRequest, plan: ResetPlan, echo: Echo, meter: Meter | None = None
) -> list[PartitionOutcome]:
    """Write the state diff and commit the new offsets (see `seqgate.streams.tools.reset_plan`);
    `meter` follows the reads of the changelog and, for a rebuild, of the input."""
    admin = admin_client(request.kafka)
    session = _reset_session(request)
    scanned = meter if meter is not None else NoMeter()
    try:
        session.init()
        _wait_changelog_stable(admin, request, [p.partition for p in plan.partitions])
        scanned.expect(_reads(admin, request, plan))
        diffs = [_diff(request, partition, echo, scanned) for partition in plan.partitions]
        # 1. The diff, into the transaction; nothing changed if it is not acknowledged.
        _write_diffs(session, request, diffs)
        # 2. The new offsets, while the diff is not committed: refused while the group
        #    has members, and then the transaction is aborted.
        try:
            _refuse_if_active(admin, request)
            _commit_offsets(admin, request, plan)
        except (ResetError, InspectError):
            session.abandon(request.timeout_s)
            raise
        # 3. The commit protocol (no input offsets in it: they moved in step 2).
        try:
            session.commit(())
        except KafkaException as error:
            raise ResetError(
                f"the offsets of group {plan.group} were moved but the state transaction did"
                f" not commit (commit_transaction failed: {_text(error)}): run the same reset"
                " command again to complete it"
            ) from error
    except InspectError as error:
        raise ResetError(str(error)) from error
    finally:
        session.close(flush_timeout_s=5)
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


def _reset_session(request: ResetRequest) -> TransactionalSession:
    transactional_id = f"{request.application_id}/reset"
    role = SessionRole("reset", transactional_id, "--application-id", 300_000)
    # Every record names its changelog partition: no partitioner of seqgate's.
    producer = ProducerSettings(request.kafka, linger_ms=20, partitioner=None)
    return TransactionalSession(producer, role, timeout_s=request.timeout_s, failed=ResetError)


def _reads(admin: AdminClient, request: ResetRequest, plan: ResetPlan) -> int:
    """The offsets `apply` reads: the changelog partitions, and the input for a rebuild."""
    total = span(admin, request.changelog_topic, [p.partition for p in plan.partitions])
    if request.state is StateMode.REBUILD:
        total += sum(max(p.new_offset - p.earliest, 0) for p in plan.partitions)
    return total


def _diff(request: ResetRequest, partition: PartitionPlan, echo: Echo, meter: Meter) -> Diff:
    current = changelog_state(
        request.kafka,
        request.changelog_topic,
        partition.partition,
        group=f"{request.application_id}-reset",
        meter=meter,
    )
    wanted = wanted_state(request, partition, meter)
    echo(
        f"partition {partition.partition}: committed state {len(current)} keys,"
        f" new state {len(wanted)} keys"
    )
    return partition, state_diff(current, wanted), len(wanted)


def _write_diffs(session: TransactionalSession, request: ResetRequest, diffs: list[Diff]) -> None:
    try:
        session.begin()
    except KafkaException as error:
        raise ResetError(f"begin_transaction failed: {_text(error)}") from error
    for partition, diff, _ in diffs:
        for key, value in diff.items():
            session.produce(
                request.changelog_topic,
                value,
                key=key,
                partition=partition.partition,
                on_delivery=session.on_delivery,
            )
    if session.flush(request.timeout_s) > 0 or session.delivery_errors:
        failures = "; ".join(error.str() for error in session.delivery_errors[:3])
        # On failure the broker aborts it on timeout, or the next reset's init_transactions does.
        session.abandon(request.timeout_s)
        raise ResetError(
            f"writing the state to {request.changelog_topic} failed"
            f" ({failures or 'not acknowledged in time'}); nothing was"
            " changed: check the broker and run the command again"
        )


def _text(error: KafkaException) -> str:
    cause = error.args[0]
    return cause.str() if isinstance(cause, KafkaError) else str(cause)


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
        raise ResetError(
            f"committing the new offsets of group {request.application_id} failed"
            f" ({_text(error)}); nothing was changed: if a worker started meanwhile, stop it and"
            " run the command again"
        ) from error
