"""The compiled record step against the Python one (docs/design.md §5.4).

The Python record step is the specification. For any list of consumed records — valid
or hostile, against any committed state and policy — the compiled engine must write
exactly what it writes: the same produce() calls in the same order with the same bytes
(outbox, rejected records, audit records), the same state changes, the same bookkeeping of
the open transaction, the same exception. `test_clean_input_is_decided_by_the_core`
proves the core is the one deciding (a silent fall-back to Python would pass the rest).
The soak tier runs the two over a million records (`test_a_million_records_decide_the_same`).
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import replace

import pytest
from confluent_kafka import KafkaError, KafkaException
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seqgate_devtools.bench.workload import WorkloadSpec, build_workload

from seqgate.runtime.engines import load_core
from seqgate.runtime.faults import FaultPoint, RaiseAt
from seqgate.schemas.codec import OBJECT_EVENT, SEEN_EVENT, encode_watermark
from seqgate.schemas.identity import event_identity, identity_partition
from seqgate.schemas.reconciled import expectation
from seqgate.schemas.records import ObjectEvent, SeenEvent
from seqgate.streams.rules.policy import Policy
from seqgate.streams.state.keys import (
    STREAM_TIME_KEY,
    encode_stream_time,
    latest_key,
    seen_key,
)
from tests.support.engines import Message, run_engine

OBJECTS = (
    ("s3", "b", "one"),
    ("s3", "b", "dir/é ü"),
    ("azure", "acct.box", "one"),
    ("minio", "b", "one"),
    ("gcs", "b", "one"),
    ("supabase", "b", "one"),
)
KINDS = ("created", "removed", "metadata_changed")
POSITIONS = (
    None,
    "1",
    "01",
    "f",
    "F0",
    "10",
    "000F",
    "0",
    "zz",
    "",
    "\u0661",
)  # not ASCII hex: an Arabic-Indic one
IDS = ("a", "b", "c", "d")
BASE_TIME = 1_700_000_000_000


def identity_of(source: str, bucket: str, key: str) -> str:
    """The object's identity; "" where the event has none (it is rejected)."""
    try:
        return event_identity(source, bucket, key)
    except ValueError:
        return ""


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    return Policy.build(
        draw(st.sampled_from(["aws", "numeric"])),
        draw(st.sets(st.sampled_from(KINDS))),
        ordered_sources=draw(st.sets(st.sampled_from(["s3", "azure", "minio", "gcs"]))),
        dedupe_window_ms=draw(st.sampled_from([1, 1000, 60_000])),
    )


@st.composite
def events(draw: st.DrawFn) -> ObjectEvent:
    source, bucket, key = draw(st.sampled_from(OBJECTS))
    reconciled = draw(st.integers(0, 9)) == 0
    position = draw(st.sampled_from(POSITIONS))
    event_id = draw(st.sampled_from(IDS))
    if reconciled:
        position = draw(st.sampled_from([None, expectation(draw(st.sampled_from(IDS)))]))
    odd = draw(st.integers(0, 24))
    if odd == 0:
        source = "ftp"  # unknown: rejected
    elif odd == 1:
        key = "k" * 4097  # past its limit
    elif odd == 2:
        bucket = "a/b"
    return ObjectEvent(
        id=event_id,
        source=source,
        bucket=bucket,
        key=key,
        kind=draw(st.sampled_from(KINDS)),
        event_name="ObjectCreated:Put",
        position=position,
        version_id=draw(st.sampled_from([None, "v1"])),
        size=draw(st.sampled_from([None, 0, 7, 2**40, -1])),
        etag=draw(st.sampled_from([None, "e"])),
        event_time=draw(st.sampled_from([None, "2026-12-06T00:00:00Z"])),
        origin=f"reconcile:{bucket}" if reconciled else "sqs:queue",
    )


@st.composite
def record_values(draw: st.DrawFn, event: ObjectEvent) -> bytes | None:
    try:
        value = OBJECT_EVENT.encode(event)
    except ValueError:  # a size out of range: not encodable, so garbage instead
        value = b"\xc3\x01garbage"
    how = draw(st.integers(0, 19))
    if how == 0:
        return value[:-1]  # truncated
    if how == 1:
        return value + b"\x00"  # trailing bytes
    if how == 2:
        return None
    if how == 3:
        return b"\xc3\x01" + bytes(8) + value[10:]  # another schema's fingerprint
    if how == 4:
        return b"\x00\x00\x00\x00\x07" + value[10:]  # Confluent framing, no registry
    return value


@st.composite
def batches(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    offsets = {0: draw(st.integers(0, 5)), 1: 100, 2: 0}
    for _ in range(draw(st.integers(1, 40))):
        partition = draw(st.sampled_from([0, 0, 0, 1, 1, 2]) if draw(st.booleans()) else st.just(0))
        if partition == 2 and draw(st.integers(0, 3)) != 0:
            partition = 0  # a partition not assigned: rare
        offset = offsets[partition]
        offsets[partition] += 1
        time = BASE_TIME + draw(st.integers(-5000, 5000))
        if draw(st.integers(0, 29)) == 0:
            error = KafkaError(KafkaError._TRANSPORT)  # a consumer error, not fatal
            messages.append(Message(None, None, partition, offset, time, error))
            continue
        event = draw(events())
        identity = identity_of(event.source, event.bucket, event.key)
        key_choice = draw(st.integers(0, 19))
        key: bytes | None = identity.encode()
        if key_choice == 0:
            key = None
        elif key_choice == 1:
            key = b""
        elif key_choice == 2:
            key = b"s3://b/other"
        elif key_choice == 3:
            key = b"\xff\xfe"
        messages.append(Message(draw(record_values(event)), key, partition, offset, time))
    return messages


@st.composite
def committed_states(draw: st.DrawFn) -> dict[int, dict[bytes, bytes]]:
    states: dict[int, dict[bytes, bytes]] = {0: {}, 1: {}}
    for partition in (0, 1):
        state = states[partition]
        for source, bucket, key in draw(st.lists(st.sampled_from(OBJECTS), max_size=3)):
            identity = identity_of(source, bucket, key)
            position = draw(st.sampled_from(["1", "f", "F0", "10", "000F"]))
            state[identity.encode()] = encode_watermark(position, "a", partition, 3)
            if draw(st.booleans()):
                entry = SeenEvent("b", identity, BASE_TIME - 100, partition, 4)
                state[latest_key(identity)] = SEEN_EVENT.encode(entry)
        for event_id in draw(st.lists(st.sampled_from(IDS), max_size=2)):
            time = BASE_TIME + draw(st.integers(-200_000, 1000))
            entry = SeenEvent(event_id, "s3://b/one", time, partition, 2)
            state[seen_key(event_id)] = SEEN_EVENT.encode(entry)
        if draw(st.booleans()):
            state[STREAM_TIME_KEY] = encode_stream_time(BASE_TIME + draw(st.integers(-3000, 3000)))
        damage = draw(st.integers(0, 29))
        if damage == 0:
            state[b"s3://b/one"] = b"\xc3\x01" + bytes(8) + b"\x02"  # unreadable watermark
        elif damage == 1:
            state[b"s3://b/one"] = b"\xffbroken"  # the store fails to read it
        elif damage == 2:
            state[STREAM_TIME_KEY] = b"+12"  # int() reads it; the core leaves it
    return states


def refusals(topic: str, value: bytes | None) -> BaseException | None:
    """A full queue for some outbox records, a refusal for good for others."""
    if topic != "object-events.outbox" or value is None:
        return None
    if len(value) % 7 == 0:
        return BufferError("Local: Queue full")
    if len(value) % 11 == 0:
        return KafkaException(KafkaError(KafkaError.MSG_SIZE_TOO_LARGE))
    return None


PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(batches(), committed_states(), policies(), st.booleans(), st.booleans())
def test_both_engines_write_the_same(
    messages: list[Message],
    committed: dict[int, dict[bytes, bytes]],
    policy: Policy,
    audit: bool,
    keep_decisions: bool,
) -> None:
    kwargs = dict(policy=policy, audit=audit, keep_decisions=keep_decisions, refuse=refusals)
    python = run_engine("python", messages, committed, **kwargs)  # type: ignore[arg-type]
    compiled = run_engine("compiled", messages, committed, **kwargs)  # type: ignore[arg-type]
    assert replace(compiled, python_records=0) == replace(python, python_records=0)


@PROPERTY
@given(batches(), committed_states(), policies(), st.integers(1, 6))
def test_an_injected_fault_ends_both_at_the_same_record(
    messages: list[Message],
    committed: dict[int, dict[bytes, bytes]],
    policy: Policy,
    after: int,
) -> None:
    python = run_engine("python", messages, committed, policy=policy, faults=_after(after))
    compiled = run_engine("compiled", messages, committed, policy=policy, faults=_after(after))
    assert replace(compiled, python_records=0) == replace(python, python_records=0)


class _after(RaiseAt):
    """Raises at the `n`th time a record's state is updated."""

    def __init__(self, n: int) -> None:
        super().__init__(FaultPoint.AFTER_STATE_UPDATE)
        self._left = n

    def reach(self, point: FaultPoint) -> None:
        self._left -= 1
        if self._left == 0:
            super().reach(point)


def clean_batch(count: int) -> list[Message]:
    """Valid records of every source, keyed by identity: all the core's to decide."""
    messages = []
    for offset in range(count):
        source, bucket, key = OBJECTS[offset % len(OBJECTS)]
        event = ObjectEvent(
            f"id-{offset % 17}",
            source,
            bucket,
            key,
            KINDS[offset % 2],
            "Put",
            format(offset * 7 % 50, "x"),
            None,
            offset,
            None,
            None,
            "sqs:q",
        )
        identity = identity_of(source, bucket, key).encode()
        messages.append(
            Message(OBJECT_EVENT.encode(event), identity, offset % 2, offset, BASE_TIME + offset)
        )
    return messages


def test_clean_input_is_decided_by_the_core() -> None:
    messages = clean_batch(500)
    policy = Policy.build("aws", ["created", "removed"])
    compiled = run_engine("compiled", messages, {0: {}, 1: {}}, policy=policy, audit=True)
    python = run_engine("python", messages, {0: {}, 1: {}}, policy=policy, audit=True)
    assert compiled.python_records == 0
    assert python.python_records == 500
    assert replace(compiled, python_records=0) == replace(python, python_records=0)
    outcomes = {outcome for (_, outcome, _, _) in compiled.tally}
    assert {o.value for o in outcomes} >= {"accepted", "duplicate", "stale"}


def random_batch(rng: random.Random, size: int, offsets: dict[int, int], now: int) -> list[Message]:
    """`size` records over a few hundred objects: mostly valid, a few of each hostile kind."""
    messages = []
    for _ in range(size):
        partition = rng.choice((0, 1))
        offset = offsets[partition]
        offsets[partition] += 1
        source, bucket, _ = rng.choice(OBJECTS)
        key = f"k{rng.randrange(300)}"
        odd = rng.randrange(200)
        event = ObjectEvent(
            f"id-{rng.randrange(5000)}",
            "ftp" if odd == 0 else source,
            bucket,
            key,
            rng.choice(KINDS),
            "ObjectCreated:Put",
            rng.choice(POSITIONS) if odd == 1 else format(rng.randrange(1, 4000), "x"),
            None,
            rng.randrange(10**6),
            None,
            None,
            f"reconcile:{bucket}" if odd == 2 else "sqs:queue",
        )
        value: bytes | None = OBJECT_EVENT.encode(event)
        if odd == 3:
            value = value[:-1]  # type: ignore[index]
        identity = identity_of(event.source, bucket, key).encode()
        record_key = b"s3://b/other" if odd == 4 else identity
        time = now + rng.randrange(-30_000, 1000)
        messages.append(Message(value, record_key, partition, offset, time))
    return messages


@pytest.mark.tier("soak")
def test_a_million_records_decide_the_same() -> None:
    """Both engines over 1,000,000 records in transactions of 1,000, the committed state
    carried from one to the next, as a worker's is."""
    rng = random.Random(38)
    policy = Policy.build("aws", ["created", "removed"], dedupe_window_ms=60_000)
    committed: dict[int, dict[bytes, bytes]] = {0: {}, 1: {}}
    offsets = {0: 0, 1: 0}
    decided = left = 0
    for transaction in range(TRANSACTIONS):
        messages = random_batch(rng, 1000, offsets, BASE_TIME + transaction * 2000)
        python = run_engine("python", messages, committed, policy=policy, audit=True)
        compiled = run_engine("compiled", messages, committed, policy=policy, audit=True)
        assert replace(compiled, python_records=0) == replace(python, python_records=0), (
            f"transaction {transaction}"
        )
        left += compiled.python_records  # the hostile ones: the core decides the rest
        decided += python.records
        for partition, changes in python.changes.items():
            for key, value in changes.items():
                if value is None:
                    committed[partition].pop(key, None)
                else:
                    committed[partition][key] = value
    assert decided == TRANSACTIONS * 1000
    assert left < decided * 0.03  # about 2.3% are generated hostile


TRANSACTIONS = 1000


def test_the_bench_workload_gives_the_same_outbox_digest() -> None:
    """The bench's input (redeliveries, reorders, 2,000 objects over six partitions) through
    both engines, in transactions of 500 with the state carried over: the same SHA-256
    over everything produced, and the core decides every record."""
    workload = build_workload(WorkloadSpec(events=20_000, identities=2_000, partitions=6))
    offsets: dict[int, int] = {}
    messages = []
    for key, value in workload.records:
        partition = identity_partition(key.decode(), 6)
        offset = offsets.get(partition, 0)
        offsets[partition] = offset + 1
        messages.append(Message(value, key, partition, offset, BASE_TIME + len(messages)))
    digests, left = {}, {}
    for engine in ("python", "compiled"):
        committed: dict[int, dict[bytes, bytes]] = {p: {} for p in range(6)}
        digest = hashlib.sha256()
        left[engine] = 0
        for start in range(0, len(messages), 500):
            run = run_engine(
                engine, messages[start : start + 500], committed, policy=Policy.build()
            )
            assert run.raised is None
            left[engine] += run.python_records
            for topic, value, key, timestamp in run.sent:
                digest.update(repr((topic, key, timestamp)).encode() + (value or b""))
            for partition, changes in run.changes.items():
                committed[partition].update({k: v for k, v in changes.items() if v is not None})
        digests[engine] = digest.hexdigest()
    assert digests["compiled"] == digests["python"]
    assert left == {"python": 20_000, "compiled": 0}


def test_the_changelog_records_are_produced_as_the_checkpoint_loop_does() -> None:
    """`produce_changes`: the checkpoint's calls in the overlay's order, the delivery report
    on the last only; at a produce that raises, the count so far (the rest is the
    checkpoint's own loop)."""
    calls: list[tuple[object, ...]] = []
    refuse_at: list[int] = []

    def produce(topic: str, value: bytes | None = None, **kwargs: object) -> None:
        if len(calls) in refuse_at:
            raise BufferError("Local: Queue full")
        calls.append((topic, value, kwargs["key"], kwargs["partition"], kwargs.get("on_delivery")))

    def on_last(error: object, message: object) -> None:
        pass

    changes: dict[bytes, bytes | None] = {b"a": b"1", b"\x00seen\x00b": None, b"c": b"3"}
    produce_changes = load_core().produce_changes
    assert produce_changes(produce, "cl", 4, changes, on_last) == 3
    assert calls == [
        ("cl", b"1", b"a", 4, None),
        ("cl", None, b"\x00seen\x00b", 4, None),
        ("cl", b"3", b"c", 4, on_last),
    ]
    calls.clear()
    refuse_at.append(1)
    assert produce_changes(produce, "cl", 4, changes, on_last) == 1
    assert calls == [("cl", b"1", b"a", 4, None)]
