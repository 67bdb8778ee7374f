"""The benchmark's workload: pure and reproducible (no I/O, no clock).

N deliveries of writes to K objects. Each object's writes carry increasing
S3 sequencers (16 hex digits, so AWS's padded-string rule and the guide's
numeric rule agree). A share of the deliveries repeats an earlier write
(redeliveries) and a share of the writes arrives late, behind later writes of
the same object (reordering), so the stream holds accepted, duplicate and
stale events in known numbers. The same seed gives the same bytes.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass

from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.identity import object_identity
from seqgate.schemas.records import ObjectEvent
from seqgate_devtools.samples import form_encode_key, s3_notification, s3_record, to_bytes

ACCEPTED, DUPLICATE, STALE = 0, 1, 2
_OUTCOME_NAMES = ("accepted", "duplicate", "stale")


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    events: int = 1_000_000
    identities: int = 100_000
    partitions: int = 6
    redelivery_rate: float = 0.2
    reorder_rate: float = 0.2
    seed: int = 7

    def __post_init__(self) -> None:
        if self.identities < 1 or self.partitions < 1:
            raise ValueError("identities and partitions must be positive")
        if not (0 <= self.redelivery_rate < 1 and 0 <= self.reorder_rate <= 1):
            raise ValueError("rates must be within [0, 1) (redelivery) and [0, 1] (reorder)")
        if int(self.events * (1 - self.redelivery_rate)) < self.identities:
            raise ValueError(
                f"{self.events} events with {self.redelivery_rate:.0%} redeliveries leave fewer"
                f" writes than the {self.identities} identities: every object is written once"
            )

    @property
    def late_window(self) -> int:
        """How many deliveries a late write (or a redelivery) may trail its slot."""
        return min(40_000, max(1_000, self.events // 20))


@dataclass(frozen=True, slots=True)
class Workload:
    """Pre-serialized input in delivery order, plus what it holds."""

    spec: WorkloadSpec
    records: list[tuple[bytes, bytes]]  # (identity key, Avro ObjectEvent)
    writes: list[tuple[int, int]]  # write index -> (object, write number)
    order: list[int]  # delivery index -> write index
    outcomes: bytes  # delivery index -> ACCEPTED / DUPLICATE / STALE (guide's rule)
    redeliveries: int
    reordered: int

    def __len__(self) -> int:
        return len(self.records)

    def expected(self, limit: int | None = None) -> dict[str, int]:
        """Outcome counts of the first `limit` deliveries (all by default)."""
        counts = Counter(self.outcomes[:limit])
        return {name: counts[code] for code, name in enumerate(_OUTCOME_NAMES)}

    def event(self, delivery: int) -> ObjectEvent:
        obj, write = self.writes[self.order[delivery]]
        return make_event(obj, write)

    def notification(self, delivery: int) -> bytes:
        """The raw native S3 notification that the bridge turns into delivery `delivery`."""
        obj, write = self.writes[self.order[delivery]]
        return raw_notification(obj, write)

    def summary(self) -> dict[str, object]:
        return {
            "events": len(self.records),
            "identities": self.spec.identities,
            "partitions": self.spec.partitions,
            "writes": len(self.writes),
            "redeliveries": self.redeliveries,
            "reordered_writes": self.reordered,
            "redelivery_rate": round(self.redeliveries / max(1, len(self.records)), 4),
            "reorder_rate": round(self.reordered / max(1, len(self.writes)), 4),
            "seed": self.spec.seed,
            "expected": self.expected(),
        }


def _bucket(obj: int) -> str:
    return f"bench-{obj % 4}"


def _key(obj: int) -> str:
    return f"incoming/object {obj:07d}+v.csv"


def sequencer(write: int) -> str:
    return f"{write:016X}"


def make_event(obj: int, write: int) -> ObjectEvent:
    """The ObjectEvent the bridge would publish for write `write` of object `obj`."""
    return ObjectEvent(
        id=f"s3-bench-{obj:07x}-{write:06x}",
        source="s3",
        bucket=_bucket(obj),
        key=_key(obj),
        kind="created",
        event_name="ObjectCreated:Put",
        position=sequencer(write),
        version_id=f"v{write}",
        size=1024 + write,
        etag=None,
        event_time=None,
        origin=f"bench:{obj}:{write}",
    )


def raw_notification(obj: int, write: int) -> bytes:
    record = s3_record(
        bucket=_bucket(obj),
        key=form_encode_key(_key(obj)),
        sequencer=sequencer(write),
        version_id=f"v{write}",
        size=1024 + write,
    )
    return to_bytes(s3_notification(record))


def identity_key(obj: int) -> bytes:
    return object_identity("s3", _bucket(obj), _key(obj)).encode("utf-8")


def build_workload(spec: WorkloadSpec) -> Workload:
    """Generate the deliveries of `spec` (deterministic for a given seed)."""
    rng = random.Random(spec.seed)
    writes_wanted = int(spec.events * (1 - spec.redelivery_rate))
    per_object = [0] * spec.identities
    writes: list[tuple[int, int]] = []
    objects = list(range(spec.identities))
    rng.shuffle(objects)
    for index in range(writes_wanted):
        obj = objects[index] if index < spec.identities else rng.randrange(spec.identities)
        per_object[obj] += 1
        writes.append((obj, per_object[obj]))
    window = spec.late_window
    # (delivery slot, tie-breaker, write index): late writes and redeliveries move later.
    timeline: list[tuple[float, int, int]] = []
    reordered = 0
    for index in range(len(writes)):
        slot = float(index)
        if rng.random() < spec.reorder_rate:
            slot += rng.uniform(1, window)
            reordered += 1
        timeline.append((slot, index, index))
    redeliveries = spec.events - len(writes)
    for number in range(redeliveries):
        index = rng.randrange(len(writes))
        timeline.append((index + rng.uniform(0, window), len(writes) + number, index))
    timeline.sort()

    encoded: dict[int, tuple[bytes, bytes]] = {}
    records: list[tuple[bytes, bytes]] = []
    order: list[int] = []
    outcomes = bytearray()
    highest = [0] * spec.identities
    for _, _, index in timeline:
        obj, write = writes[index]
        pair = encoded.get(index)
        if pair is None:
            pair = encoded[index] = (identity_key(obj), OBJECT_EVENT.encode(make_event(obj, write)))
        records.append(pair)
        order.append(index)
        current = highest[obj]
        if write > current:
            highest[obj] = write
            outcomes.append(ACCEPTED)
        else:
            outcomes.append(DUPLICATE if write == current else STALE)
    return Workload(spec, records, writes, order, bytes(outcomes), redeliveries, reordered)
