"""The decider against an independent model of the policy (docs/design.md §3, §4.2,
docs/processor.md, docs/reconcile.md).

`verify`'s replay runs the decider itself, so it cannot see a bug in it; this model is
written from the documents alone, in the plainest terms: per object a watermark, per
partition a stream time and the accepted ids with their record time, the object's latest
accepted event for the compare-and-set of repairs. Outcomes, outbox records and the final
state (decoded) must be equal for any sequence of input records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.schemas.codec import SEEN_EVENT, WATERMARK
from seqgate.schemas.reconciled import expectation
from seqgate.schemas.records import ObjectEvent, OutboxRecord, SeenEvent, Watermark
from seqgate.streams.errors import UndecidableEvent
from seqgate.streams.rules.decider import (
    InputPosition,
    decide_record,
    purgeable,
    record_identity,
)
from seqgate.streams.rules.policy import Policy
from seqgate.streams.state.keys import (
    LATEST_PREFIX,
    SEEN_PREFIX,
    STREAM_TIME_KEY,
    decode_stream_time,
)

PARTITION = 7
# (source, bucket, key): ordered by default (s3, azure), dedupe-only by default (the rest).
OBJECTS = (
    ("s3", "b", "one"),
    ("s3", "b", "two"),
    ("azure", "acct.box", "one"),
    ("minio", "b", "one"),
    ("gcs", "b", "one"),
    ("supabase", "b", "one"),
)
KINDS = ("created", "removed", "metadata_changed")
HEX = re.compile(r"[0-9A-Fa-f]+")


# ---- the model ---------------------------------------------------------------------------------


def compare(a: str, b: str, numeric: bool) -> int:
    """docs/design.md §3, literally: the hex value, or both right-padded with 0, any case."""
    if numeric:
        x, y = int(a, 16), int(b, 16)
        return (x > y) - (x < y)
    width = max(len(a), len(b))
    p, q = a.lower().ljust(width, "0"), b.lower().ljust(width, "0")
    return (p > q) - (p < q)


@dataclass
class Model:
    ordering: str
    ordered: frozenset[str]
    kinds: frozenset[str]
    window: int
    marks: dict[str, Watermark] = field(default_factory=dict)
    stream_time: int | None = None
    seen: dict[str, SeenEvent] = field(default_factory=dict)
    latest: dict[str, SeenEvent] = field(default_factory=dict)  # accepted without a position
    last_accepted: dict[str, str] = field(default_factory=dict)  # identity -> id, any path

    def decide(
        self, event: ObjectEvent, identity: str, offset: int, time: int
    ) -> tuple[str, OutboxRecord | None]:
        mark = self.marks.get(identity)
        previous = None if mark is None else mark.position
        if event.origin.startswith("reconcile:"):
            if event.kind not in self.kinds:
                return "filtered", None
            last = self.last_accepted.get(identity)
            if last == event.id:
                return "duplicate", None
            if event.position != expectation(last):
                return "stale", None
            self.latest[identity] = SeenEvent(event.id, identity, time, PARTITION, offset)
            self.last_accepted[identity] = event.id
            return "accepted", OutboxRecord(event, previous, PARTITION, offset)
        if event.source in self.ordered and event.position is not None:
            if event.kind not in self.kinds:
                return "filtered", None
            if HEX.fullmatch(event.position) is None:
                return "rejected:invalid_sequencer", None
            if previous is not None:
                numeric = self.ordering == "numeric" or event.source == "minio"
                order = compare(event.position, previous, numeric)
                if order == 0:
                    return "duplicate", None
                if order < 0:
                    return "stale", None
            self.marks[identity] = Watermark(event.position, event.id, PARTITION, offset)
            self.last_accepted[identity] = event.id
            return "accepted", OutboxRecord(event, previous, PARTITION, offset)
        # By id, in record time: every event of this path moves stream time, whatever it becomes.
        self.stream_time = time if self.stream_time is None else max(self.stream_time, time)
        if event.kind not in self.kinds:
            return "filtered", None
        kept = self.seen.get(event.id)
        if kept is not None and kept.record_time + 2 * self.window >= self.stream_time:
            return "duplicate", None
        if time + self.window < self.stream_time:
            return "late", None
        entry = SeenEvent(event.id, identity, time, PARTITION, offset)
        self.seen[event.id] = entry
        self.latest[identity] = entry
        self.last_accepted[identity] = event.id
        return "accepted", OutboxRecord(event, None, PARTITION, offset)

    def purge(self) -> None:
        """A commit may drop what has expired (kept for two windows of stream time)."""
        if self.stream_time is not None:
            limit = self.stream_time - 2 * self.window
            self.seen = {i: s for i, s in self.seen.items() if s.record_time >= limit}

    def state(self) -> State:
        return State(dict(self.marks), dict(self.seen), dict(self.latest), self.stream_time)


# ---- the real decider, its state in a dict ------------------------------------------------------


@dataclass
class State:
    marks: dict[str, Watermark]
    seen: dict[str, SeenEvent]
    latest: dict[str, SeenEvent]
    stream_time: int | None


class Table:
    """One partition's state as the worker keeps it, by changelog key."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy
        self.state: dict[bytes, bytes] = {}

    def get(self, key: bytes) -> bytes | None:
        return self.state.get(key)

    def decide(
        self, event: ObjectEvent, identity: str, offset: int, time: int
    ) -> tuple[str, OutboxRecord | None]:
        at = InputPosition(PARTITION, offset, time)
        try:
            key = record_identity(identity.encode("utf-8"), event)
            verdict = decide_record(self, event, key, at, self.policy)
        except UndecidableEvent as error:
            return f"rejected:{error.reason}", None
        for name, value in verdict.changes.items():
            if value is None:
                self.state.pop(name, None)
            else:
                self.state[name] = value
        return str(verdict.outcome), verdict.outbox

    def purge(self) -> None:
        raw = self.state.get(STREAM_TIME_KEY)
        if raw is None:
            return
        seen = [SEEN_EVENT.decode(v) for k, v in self.state.items() if k.startswith(SEEN_PREFIX)]
        for key in purgeable(seen, decode_stream_time(raw), self.policy):
            del self.state[key]

    def decoded(self) -> State:
        result = State({}, {}, {}, None)
        for key, value in self.state.items():
            if key == STREAM_TIME_KEY:
                result.stream_time = decode_stream_time(value)
            elif key.startswith(SEEN_PREFIX):
                result.seen[key[len(SEEN_PREFIX) :].decode()] = SEEN_EVENT.decode(value)
            elif key.startswith(LATEST_PREFIX):
                result.latest[key[len(LATEST_PREFIX) :].decode()] = SEEN_EVENT.decode(value)
            else:
                result.marks[key.decode()] = WATERMARK.decode(value)
        return result


# ---- the comparison -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    obj: int  # index into OBJECTS
    n: int  # which of the object's few ids: repeats are redeliveries
    kind: str = "created"
    position: str | None = "1"
    dt: int = 1  # record time moves by this much (either way: CreateTime is any producer's)
    repair: bool = False  # a reconciled event, computed against an earlier latest event
    pick: int = 0  # which earlier latest event it expects (wrapped; 0 is "none accepted")
    purge: bool = False  # a commit purges expired ids before this record


@dataclass(frozen=True)
class Config:
    ordering: str = "aws"
    ordered: frozenset[str] = frozenset({"s3", "azure"})
    kinds: frozenset[str] = frozenset({"created", "removed"})
    window: int = 10


def identity_of(obj: int) -> str:
    source, bucket, key = OBJECTS[obj]
    return f"{'gs' if source == 'gcs' else source}://{bucket}/{key}"


def build(step: Step, history: list[str | None]) -> ObjectEvent:
    source, bucket, key = OBJECTS[step.obj]
    if step.repair:
        expected = history[step.pick % len(history)]
        prefix, origin, position = "reconcile-", f"reconcile:{bucket}", expectation(expected)
    else:
        prefix, origin, position = "", "test", step.position
    return ObjectEvent(
        id=f"{prefix}{source}-{key}-{step.n}",
        source=source,
        bucket=bucket,
        key=key,
        kind=step.kind,
        event_name="Test",
        position=position,
        version_id=None,
        size=1,
        etag="e",
        event_time=None,
        origin=origin,
    )


@dataclass
class Run:
    outcomes: list[str]
    outbox: list[OutboxRecord]
    state: State


def check(steps: list[Step], config: Config = Config()) -> Run:
    """Run both on the same records; assert they agree at every step and at the end."""
    policy = Policy.build(
        config.ordering,
        config.kinds,
        ordered_sources=config.ordered,
        dedupe_window_ms=config.window,
    )
    model = Model(config.ordering, config.ordered, config.kinds, config.window)
    table = Table(policy)
    histories: dict[int, list[str | None]] = {}
    run = Run([], [], State({}, {}, {}, None))
    time = 1_000
    for offset, step in enumerate(steps):
        if step.purge:
            model.purge()
            table.purge()
        time += step.dt
        history = histories.setdefault(step.obj, [None])
        event = build(step, history)
        identity = identity_of(step.obj)
        want = model.decide(event, identity, offset, time)
        have = table.decide(event, identity, offset, time)
        assert have == want, f"record {offset}: {event}"
        history.append(model.last_accepted.get(identity))
        run.outcomes.append(have[0])
        if have[1] is not None:
            run.outbox.append(have[1])
    run.state = table.decoded()
    assert run.state == model.state()
    return run


# ---- one scenario per way the decider could go wrong, then any sequence ------------------------


def test_an_accepted_ordered_event_names_the_watermark_it_superseded() -> None:
    run = check([Step(0, 0, position="0a"), Step(0, 1, position="0b"), Step(0, 2, position="0c")])
    assert [r.previous_position for r in run.outbox] == [None, "0a", "0b"]
    assert [r.input_offset for r in run.outbox] == [0, 1, 2]


def test_a_repair_names_the_current_watermark_too() -> None:
    run = check([Step(0, 0, position="0a"), Step(0, 0, repair=True, pick=1)])
    assert run.outcomes == ["accepted", "accepted"]
    assert run.outbox[1].previous_position == "0a"


def test_an_accepted_id_keeps_its_own_record_time_not_stream_time() -> None:
    run = check([Step(3, 0, dt=5), Step(3, 1, dt=-4)])
    assert run.outcomes == ["accepted", "accepted"]
    assert run.state.seen["minio-one-1"].record_time == 1_001
    assert run.state.latest["minio://b/one"].record_time == 1_001


def test_an_ordered_source_without_a_position_is_decided_by_id() -> None:
    run = check([Step(0, 0, position=None), Step(0, 0, position=None), Step(2, 0, position=None)])
    assert run.outcomes == ["accepted", "duplicate", "accepted"]
    assert run.state.marks == {}


def test_a_duplicate_still_moves_stream_time() -> None:
    """The duplicate at 1015 moves stream time, so the record at 1004 is late."""
    run = check([Step(3, 0, dt=0), Step(3, 0, dt=15), Step(3, 1, dt=-11)], Config(window=10))
    assert run.outcomes == ["accepted", "duplicate", "late"]
    assert run.state.stream_time == 1_015


def test_filtered_and_late_events_move_stream_time_as_well() -> None:
    steps = [Step(4, 0, kind="metadata_changed", dt=50), Step(4, 1, dt=-20), Step(4, 2, dt=5)]
    assert check(steps).outcomes == ["filtered", "late", "late"]


def test_minio_positions_compare_by_value_under_either_ordering() -> None:
    steps = [Step(3, 0, position="f"), Step(3, 1, position="10"), Step(3, 2, position="00F")]
    config = Config(ordering="aws", ordered=frozenset({"minio"}))
    assert check(steps, config).outcomes == ["accepted", "accepted", "stale"]


HEX_POSITIONS = st.text("0123456789abcdefABCDEF", min_size=1, max_size=3)
POSITIONS = st.one_of(HEX_POSITIONS, HEX_POSITIONS, st.none(), st.sampled_from(["", "zz"]))
STEPS = st.builds(
    Step,
    obj=st.sampled_from((0, 0, 0, *range(len(OBJECTS)))),
    n=st.integers(0, 2),
    kind=st.sampled_from(("created", *KINDS)),
    position=POSITIONS,
    dt=st.integers(-25, 30),
    repair=st.sampled_from((False, False, False, True)),
    pick=st.integers(0, 50),
    purge=st.booleans(),
)
CONFIGS = st.builds(
    Config,
    ordering=st.sampled_from(["aws", "numeric"]),
    ordered=st.frozensets(st.sampled_from(["azure", "minio", "gcs"])).map(
        lambda chosen: chosen | {"s3"}
    ),
    kinds=st.frozensets(st.sampled_from(KINDS)).map(lambda chosen: chosen | {"created"}),
    window=st.integers(1, 30),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(STEPS, min_size=4, max_size=30), CONFIGS)
def test_the_decider_agrees_with_the_model(steps: list[Step], config: Config) -> None:
    check(steps, config)
