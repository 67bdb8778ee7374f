"""`seqgate verify`: check docs/design.md §5.7's invariant from outside the workers.

For each input partition, in offset order up to the group's committed
offset, the same pure decision function (`seqgate.streams.tools.replay`) says which
outbox records must exist. They are compared with the outbox as a
`read_committed` consumer sees it, and the final replay state with the
committed watermarks in the changelog.

Memory is bounded by one partition's state (one watermark per object),
never by the number of records: both sides are streamed in input-offset
order and merged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field

from confluent_kafka import Consumer, KafkaException, TopicPartition

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.partition_reader import reader_config
from seqgate.runtime.progress import Meter, NoMeter
from seqgate.schemas.codec import OUTBOX_RECORD, REJECTED_RECORD, SEEN_EVENT, WATERMARK
from seqgate.schemas.errors import CodecError
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.reconciled import is_reconciled
from seqgate.schemas.records import OutboxRecord
from seqgate.streams.errors import VerifyError
from seqgate.streams.rules.policy import Policy, Trust, expired
from seqgate.streams.state.keys import (
    LATEST_PREFIX,
    SEEN_PREFIX,
    STREAM_TIME_KEY,
    decode_stream_time,
)
from seqgate.streams.tools.inspect import read_records
from seqgate.streams.tools.replay import InputRecord, PartitionReplay

# The counts of a PartitionReport that are problems, and all its counts.
PROBLEMS = ("missing", "unexpected", "duplicated", "not_increasing", "watermark_mismatches")
COUNTS = ("inputs", "expected", "found", *PROBLEMS)


@dataclass
class PartitionReport:
    partition: int
    committed_offset: int = 0
    inputs: int = 0
    expected: int = 0
    found: int = 0
    missing: int = 0
    unexpected: int = 0
    duplicated: int = 0
    not_increasing: int = 0
    watermark_mismatches: int = 0
    examples: list[str] = field(default_factory=list)

    def problems(self) -> int:
        return sum(getattr(self, name) for name in PROBLEMS)

    def note(self, text: str) -> None:
        if len(self.examples) < 5:
            self.examples.append(text)


@dataclass
class VerifyReport:
    partitions: list[PartitionReport]

    def ok(self) -> bool:
        return all(report.problems() == 0 for report in self.partitions)

    def totals(self) -> dict[str, int]:
        return {name: sum(getattr(r, name) for r in self.partitions) for name in COUNTS}

    def as_dict(self) -> dict[str, object]:
        return {
            "ok": self.ok(),
            "totals": self.totals(),
            "partitions": [asdict(report) for report in self.partitions],
        }


@dataclass(frozen=True, slots=True)
class VerifyTarget:
    kafka: KafkaSettings
    application_id: str
    input_topic: str
    outbox_topic: str
    changelog_topic: str
    policy: Policy
    timeout_s: float = 60.0
    # The workers' rejected records: inputs rejected as unwritable_record are the
    # one decision the replay cannot make (the broker refused what they became).
    rejected_topic: str | None = None
    framing: Framing = SINGLE_OBJECT  # the records come in either encoding


Progress = Callable[[int, PartitionReport], None]


def verify(
    target: VerifyTarget, progress: Progress | None = None, meter: Meter | None = None
) -> VerifyReport:
    """`progress` hears of each partition checked; `meter` of every record read."""
    reader = _Reader(target, meter)
    try:
        committed = reader.committed_offsets()
        outbox_partitions = reader.partitions(target.outbox_topic)
        same_layout = len(outbox_partitions) == len(committed)
        reader.expect_all(committed, outbox_partitions, same_layout)
        unwritable = _unwritable_offsets(reader, target)
        reports = []
        for partition in sorted(committed):
            report = PartitionReport(partition, committed_offset=committed[partition])
            sources = [partition] if same_layout else outbox_partitions
            _check_partition(
                reader, target, report, sources, frozenset(unwritable.get(partition, ()))
            )
            reports.append(report)
            if progress is not None:
                progress(len(committed), report)
        return VerifyReport(reports)
    finally:
        reader.close()


def _unwritable_offsets(reader: _Reader, target: VerifyTarget) -> dict[int, set[int]]:
    """Input offsets per partition that the workers rejected as unwritable_record."""
    found: dict[int, set[int]] = {}
    topic = target.rejected_topic
    if topic is None or not reader.exists(topic):
        return found
    prefix = f"kafka:{target.input_topic}:"
    for message in reader.read(topic, reader.partitions(topic)):
        try:
            record = target.framing.decode(REJECTED_RECORD, message.value or b"")
        except CodecError:
            continue
        if record.reason != RejectReason.UNWRITABLE_RECORD or not record.origin.startswith(prefix):
            continue
        partition, _, offset = record.origin[len(prefix) :].partition(":")
        if partition.isdigit() and offset.isdigit():
            found.setdefault(int(partition), set()).add(int(offset))
    return found


def _check_partition(
    reader: _Reader,
    target: VerifyTarget,
    report: PartitionReport,
    outbox_sources: list[int],
    unwritable: frozenset[int],
) -> None:
    partition = report.partition
    replay = PartitionReplay(target.policy, unwritable, target.framing)

    def expected_records() -> Iterator[OutboxRecord]:
        for record in reader.read(target.input_topic, [partition], stop=report.committed_offset):
            report.inputs += 1
            accepted = replay.apply(record)
            if accepted is not None:
                report.expected += 1
                yield accepted

    found = _found_records(reader, target, report, outbox_sources)
    _merge(expected_records(), found, report)
    _check_watermarks(reader, target, report, replay.state)


def _found_records(
    reader: _Reader, target: VerifyTarget, report: PartitionReport, sources: list[int]
) -> Iterator[OutboxRecord]:
    last_position: dict[str, str] = {}
    for message in reader.read(target.outbox_topic, sources):
        try:
            record = target.framing.decode(OUTBOX_RECORD, message.value or b"")
        except CodecError as error:
            report.unexpected += 1
            report.note(f"outbox offset {message.offset}: undecodable ({error})")
            continue
        if record.input_partition != report.partition:
            continue
        report.found += 1
        identity = (message.key or b"").decode("utf-8", "replace")
        position = record.event.position
        if target.policy.trust_for(record.event.source) is not Trust.ORDERED or is_reconciled(
            record.event
        ):
            yield record  # no position that orders (dedupe-only, a repair); the merge checks it
            continue
        previous = last_position.get(identity)
        if previous is not None and position is not None:
            comparison = target.policy.order_for(record.event.source).compare(position, previous)
            if comparison == 0:
                report.duplicated += 1
                report.note(f"{identity}@{position} twice in the outbox")
            elif comparison < 0:
                report.not_increasing += 1
                report.note(f"{identity}: {position} after {previous} in the outbox")
        if position is not None:
            last_position[identity] = position
        yield record


def _merge(
    expected: Iterator[OutboxRecord], found: Iterator[OutboxRecord], report: PartitionReport
) -> None:
    """Walk both streams in input-offset order."""
    want = next(expected, None)
    have = next(found, None)
    while want is not None or have is not None:
        if have is None or (want is not None and want.input_offset < have.input_offset):
            assert want is not None
            report.missing += 1
            report.note(f"missing: input offset {want.input_offset} ({want.event.id})")
            want = next(expected, None)
        elif want is None or have.input_offset < want.input_offset:
            report.unexpected += 1
            report.note(f"unexpected: outbox record for input offset {have.input_offset}")
            have = next(found, None)
        else:
            if have != want:
                report.unexpected += 1
                report.missing += 1
                report.note(f"different record for input offset {have.input_offset}")
            want = next(expected, None)
            have = next(found, None)


def _check_watermarks(
    reader: _Reader, target: VerifyTarget, report: PartitionReport, state: dict[bytes, bytes]
) -> None:
    """The committed state (changelog, read_committed) must equal the replay's.

    The one allowed difference: a dedupe id that has expired in record time
    may already be purged (tombstoned) on one side and not the other.
    """
    committed: dict[bytes, bytes] = {}
    for message in reader.read(target.changelog_topic, [report.partition]):
        key = message.key or b""
        if message.value is None:
            committed.pop(key, None)
        else:
            committed[key] = message.value
    raw_time = state.get(STREAM_TIME_KEY)
    stream_time = decode_stream_time(raw_time) if raw_time is not None else None
    for key in state.keys() | committed.keys():
        want, have = state.get(key), committed.get(key)
        if want == have:
            continue
        if key.startswith(SEEN_PREFIX) and stream_time is not None:
            only = want if have is None else have if want is None else None
            if only is not None and expired(SEEN_EVENT.decode(only), stream_time, target.policy):
                continue
        report.watermark_mismatches += 1
        report.note(
            f"state of {key.decode('utf-8', 'replace')!r}: committed {_show(key, have)},"
            f" replay {_show(key, want)}"
        )


def _show(key: bytes, value: bytes | None) -> str:
    if value is None:
        return "nothing"
    try:
        if key.startswith((SEEN_PREFIX, LATEST_PREFIX)):
            return str(SEEN_EVENT.decode(value))
        if key == STREAM_TIME_KEY:
            return value.decode("ascii")
        return str(WATERMARK.decode(value))
    except (CodecError, UnicodeDecodeError):
        return repr(value[:40])


class _Reader:
    """Reads partitions to their end with read_committed.

    Each read has its own consumer, because the merge walks two streams
    (input and outbox) at the same time.
    """

    def __init__(self, target: VerifyTarget, meter: Meter | None = None) -> None:
        self.target = target
        self.meter = meter if meter is not None else NoMeter()
        self._consumer = self._new_consumer()

    def _new_consumer(self) -> Consumer:
        return Consumer(reader_config(self.target.kafka, f"{self.target.application_id}-verify"))

    def exists(self, topic: str) -> bool:
        metadata = self._consumer.list_topics(topic, timeout=self.target.timeout_s)
        found = metadata.topics.get(topic)
        return found is not None and found.error is None

    def partitions(self, topic: str) -> list[int]:
        metadata = self._consumer.list_topics(topic, timeout=self.target.timeout_s)
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            raise VerifyError(f"topic {topic} does not exist: check the topic options")
        return sorted(found.partitions)

    def committed_offsets(self) -> dict[int, int]:
        topic = self.target.input_topic
        partitions = [TopicPartition(topic, p) for p in self.partitions(topic)]
        group = self.target.application_id
        # A read_committed consumer asks for stable offsets: this waits while a
        # transaction of a dead worker still holds offsets for the group.
        consumer = Consumer(
            client_config(
                self.target.kafka,
                **{"group.id": group, "isolation.level": "read_committed"},
            )
        )
        try:
            offsets = consumer.committed(partitions, timeout=self.target.timeout_s)
        except KafkaException as error:
            raise VerifyError(
                f"cannot read the committed offsets of group {group}: {error.args[0].str()}"
                " (an open transaction of a stopped worker holds them until it is aborted:"
                " restart that worker or wait for transaction.timeout.ms)"
            ) from error
        finally:
            consumer.close()
        return {tp.partition: max(tp.offset, 0) for tp in offsets}

    def span(self, topic: str, partitions: list[int], stop: int | None = None) -> int:
        """The offsets `read` covers: what the progress total counts."""
        total = 0
        for partition in partitions:
            tp = TopicPartition(topic, partition)
            low, high = self._consumer.get_watermark_offsets(tp, timeout=self.target.timeout_s)
            total += max((high if stop is None else min(stop, high)) - low, 0)
        return total

    def expect_all(
        self, committed: dict[int, int], outbox_partitions: list[int], same_layout: bool
    ) -> None:
        """Tell the meter everything verify will read: each input partition to its
        committed offset, the outbox (once per input partition unless co-partitioned),
        the changelog and the rejected records."""
        target = self.target
        total = sum(self.span(target.input_topic, [p], committed[p]) for p in committed)
        outbox = self.span(target.outbox_topic, outbox_partitions)
        total += outbox if same_layout else outbox * len(committed)
        total += self.span(target.changelog_topic, sorted(committed))
        rejected = target.rejected_topic
        if rejected is not None and self.exists(rejected):
            total += self.span(rejected, self.partitions(rejected))
        self.meter.expect(total)

    def read(
        self, topic: str, partitions: list[int], stop: int | None = None
    ) -> Iterator[InputRecord]:
        """Records of `partitions` (in order, one partition after the other) up to the end,
        or up to offset `stop` (exclusive) when given."""
        for partition in partitions:
            yield from self._read_one(topic, partition, stop)

    def _read_one(self, topic: str, partition: int, stop: int | None) -> Iterator[InputRecord]:
        tp = TopicPartition(topic, partition)
        low, high = self._consumer.get_watermark_offsets(tp, timeout=self.target.timeout_s)
        end = high if stop is None else min(stop, high)
        if end <= low:
            return
        consumer = self._new_consumer()
        try:
            yield from read_records(
                consumer, topic, partition, low, end, self.target.timeout_s, VerifyError, self.meter
            )
        finally:
            consumer.close()

    def close(self) -> None:
        self._consumer.close()
