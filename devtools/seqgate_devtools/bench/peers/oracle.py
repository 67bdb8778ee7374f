"""The oracle every system of `seqgate bench --peers` and `--peer-torture` is judged by.

The workload knows which deliveries the guide's policy accepts (the first delivery of
each write that is newer than everything its object saw before). An outbox is exact
when, read with `read_committed`, it holds each of those events once and nothing
else: the count of records alone would let a lost event hide behind a duplicated one.
An event is named by (record key, event id); the workload gives every write its own id.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaException, Message

from seqgate.runtime.errors import PartitionStalled
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.partition_reader import PartitionReader, reader_config
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD
from seqgate_devtools.bench.workload import ACCEPTED, Workload
from seqgate_devtools.errors import OutboxUnreadable

EventName = tuple[bytes, str]  # (record key, event id)
_EXAMPLES = 3
_READ_ATTEMPTS = 3


def expected_accepted(workload: Workload, limit: int | None = None) -> Counter[EventName]:
    """The events the policy accepts among the first `limit` deliveries, once each."""
    accepted: Counter[EventName] = Counter()
    for delivery, outcome in enumerate(workload.outcomes[:limit]):
        if outcome == ACCEPTED:
            key = workload.records[delivery][0]
            accepted[(key, workload.event(delivery).id)] += 1
    return accepted


def event_id_of_event(value: bytes) -> str:
    """A peer's outbox record: the input's ObjectEvent, unchanged."""
    return OBJECT_EVENT.decode(value).id


def event_id_of_outbox(value: bytes) -> str:
    """The Worker's outbox record: an OutboxRecord around the event."""
    return OUTBOX_RECORD.decode(value).event.id


@dataclass(frozen=True, slots=True)
class Verdict:
    """How one system's outbox compares with the replay."""

    expected: int
    found: int
    missing: int  # accepted events not in the outbox
    duplicated: int  # extra copies of accepted events
    unexpected: int  # records the policy does not accept (stale or duplicate deliveries)
    examples: tuple[str, ...] = ()  # a few of the offending event ids, for the report

    @property
    def exact(self) -> bool:
        return self.missing == self.duplicated == self.unexpected == 0

    def as_dict(self) -> dict[str, object]:
        return {
            "expected": self.expected,
            "found": self.found,
            "missing": self.missing,
            "duplicated": self.duplicated,
            "unexpected": self.unexpected,
            "exact": self.exact,
            "examples": list(self.examples),
        }


def judge(expected: Counter[EventName], found: Counter[EventName]) -> Verdict:
    missing = [name for name in expected if name not in found]
    duplicated = {name: n - 1 for name, n in found.items() if name in expected and n > 1}
    unexpected = {name: n for name, n in found.items() if name not in expected}
    examples = [f"missing {name[1]}" for name in missing[:_EXAMPLES]]
    examples += [f"duplicated {name[1]}" for name in list(duplicated)[:_EXAMPLES]]
    examples += [f"unexpected {name[1]}" for name in list(unexpected)[:_EXAMPLES]]
    return Verdict(
        expected=sum(expected.values()),
        found=sum(found.values()),
        missing=len(missing),
        duplicated=sum(duplicated.values()),
        unexpected=sum(unexpected.values()),
        examples=tuple(examples),
    )


def read_outbox(
    kafka: KafkaSettings,
    topic: str,
    partitions: int,
    event_id: Callable[[bytes], str],
    *,
    timeout: float = 60.0,
) -> Counter[EventName]:
    """Every committed record of `topic`, named by (key, event id). A read the consumer
    reports an error for is made again from the start with a fresh consumer, up to
    `_READ_ATTEMPTS` times: a transient client error must not pass for a verdict."""
    for attempt in range(1, _READ_ATTEMPTS + 1):
        try:
            return _read_once(kafka, topic, partitions, event_id, timeout)
        except (KafkaException, PartitionStalled) as error:
            if attempt == _READ_ATTEMPTS:
                raise OutboxUnreadable(f"{topic}: {error}") from error
    raise AssertionError("unreachable")


def _read_once(
    kafka: KafkaSettings,
    topic: str,
    partitions: int,
    event_id: Callable[[bytes], str],
    timeout: float,
) -> Counter[EventName]:
    consumer = Consumer(reader_config(kafka, f"seqgate-bench-oracle-{uuid.uuid4().hex[:8]}"))
    found: Counter[EventName] = Counter()
    try:
        for partition in range(partitions):
            reader = PartitionReader(consumer, topic, partition, timeout=timeout)
            for batch in reader.batches(0):
                found.update(_names(batch_pairs(batch), event_id))
    finally:
        consumer.close()
    return found


def batch_pairs(batch: Iterable[Message]) -> Iterable[tuple[bytes, bytes]]:
    for message in batch:
        key, value = message.key(), message.value()
        yield (bytes(key or b""), bytes(value or b""))


def _names(
    pairs: Iterable[tuple[bytes, bytes]], event_id: Callable[[bytes], str]
) -> Iterable[EventName]:
    for key, value in pairs:
        yield (key, event_id(value))
