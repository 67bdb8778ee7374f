"""End-to-end latency at a fixed offered load.

A producer configured like the bridge's (idempotent, acks=all, linger 5 ms,
murmur2) sends the events at a steady rate; each delivery report stamps the
record's (partition, offset) with the wall clock. A read_committed consumer
of the outbox stamps each outbox record when it becomes readable and finds
its input coordinates in the record (`input_partition`, `input_offset`).
Latency = visible - acknowledged, for every accepted event.

The offered load is calibrated in place: before the timed run, a burst of fresh
events goes through the same worker, producer and outbox reader, as fast as they
take it, and the rate at which it became visible is what this layout sustains on
this machine now (an isolated stage's rate overstated it whenever something else
shared the cores: p50 1.7 s instead of 53 ms seen at the same command). The run then
offers `share` of that. A run whose offered load was not sustained (the producer fell
behind the schedule, or the outbox took longer than a commit interval plus a second to
drain after the last send) is flagged: its latencies are a queue's, not the product's.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.partition_reader import next_batch
from seqgate.schemas.codec import OUTBOX_RECORD
from seqgate_devtools.bench.produce import bridge_like_producer, produce_waiting

Progress = Callable[[str], None]

_TICK_S = 0.005


_SUSTAINED_SHARE = 0.95  # of the offered rate the producer must achieve
_DRAIN_SLACK_S = 1.0  # beyond one commit interval, after the last send


@dataclass(frozen=True, slots=True)
class LatencyResult:
    offered_rate: float
    achieved_rate: float
    produced: int
    expected_visible: int
    latencies_ms: list[float]
    bench_gc_pauses_ms: list[float]  # the measuring process's own collections
    capacity_rate: float = 0.0  # the in-place calibration burst's visible rate
    drain_s: float = 0.0  # last send acknowledged -> last accepted event visible
    sustained: bool = True


@dataclass(frozen=True, slots=True)
class LatencyPlan:
    """What to offer: a prefix of `records` lasting `seconds` at `share` of the
    capacity measured in place with `calibration` (fresh objects, all accepted)."""

    records: Sequence[tuple[bytes, bytes]]
    expected_accepted: Callable[[int], int]  # accepted events among the first n records
    calibration: Sequence[tuple[bytes, bytes]]
    seconds: float
    commit_interval_ms: int
    share: float = 0.5


class _OutboxWatcher:
    """Reads the outbox with read_committed from a thread; stamps arrivals."""

    def __init__(self, kafka: KafkaSettings, topic: str) -> None:
        self.visible: dict[tuple[int, int], float] = {}
        self._condition = threading.Condition()
        self._stop = threading.Event()
        self._consumer = Consumer(
            client_config(
                kafka,
                **{
                    "group.id": "seqgate-bench-latency",  # never joins: partitions are assigned
                    "isolation.level": "read_committed",
                    "enable.auto.commit": False,
                    "fetch.wait.max.ms": 10,
                },
            )
        )
        partitions = self._consumer.list_topics(topic, timeout=30).topics[topic].partitions
        self._consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        self._thread = threading.Thread(target=self._run, name="bench-outbox", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                # What the consumer has fetched, stamped when it is handed over; decoded
                # after. Stamped one by one as they were decoded, the last records of a
                # committed transaction (a whole interval's worth becomes readable at once)
                # carried the bench's own decoding time, tens of ms of it, into their latency.
                messages = next_batch(self._consumer)
                now = time.time()
                arrived = [
                    OUTBOX_RECORD.decode(message.value() or b"")
                    for message in messages
                    if message.error() is None
                ]
                if not arrived:
                    continue
                with self._condition:
                    for record in arrived:
                        coordinates = (record.input_partition, record.input_offset)
                        self.visible.setdefault(coordinates, now)
                    self._condition.notify_all()
        finally:
            self._consumer.close()

    def last_visible(self, default: float) -> float:
        """When the latest record so far became visible (`default` before any)."""
        with self._condition:
            return max(self.visible.values(), default=default)

    def wait_for(self, count: int, timeout: float) -> bool:
        with self._condition:
            return self._condition.wait_for(lambda: len(self.visible) >= count, timeout)

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


class _PacedProducer:
    def __init__(self, kafka: KafkaSettings, topic: str) -> None:
        self.topic = topic
        self.acked: dict[tuple[int, int], float] = {}
        self.errors: list[str] = []
        self._producer = bridge_like_producer(kafka, linger_ms=5)

    def _on_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self.errors.append(error.str())
            return
        partition, offset = message.partition(), message.offset()
        assert partition is not None and offset is not None
        self.acked[(partition, offset)] = time.time()

    def produce(self, key: bytes, value: bytes) -> None:
        produce_waiting(self._producer, self.topic, key, value, self._on_delivery, poll_s=0.01)

    def poll(self, timeout: float) -> None:
        self._producer.poll(timeout)

    def flush(self) -> None:
        remaining = self._producer.flush(60)
        if remaining or self.errors:
            raise RuntimeError(
                f"latency input not acknowledged: {remaining} left, {self.errors[:3]}"
            )


def measure_latency(
    kafka: KafkaSettings,
    input_topic: str,
    outbox_topic: str,
    *,
    warmup: Sequence[tuple[bytes, bytes]],
    plan: LatencyPlan,
    progress: Progress,
    settle_timeout_s: float = 120.0,
) -> LatencyResult:
    """Send `warmup` and wait until the worker has forwarded all of it; calibrate the
    rate in place; then send the plan's records at `share` of it and wait until their
    accepted events are visible."""
    # The bench holds the whole workload: millions of objects a full collection
    # would walk, pausing the threads that stamp acknowledgements and arrivals
    # (seen: a p99 of 600 ms that was the bench's own pauses). Frozen objects are
    # never walked again.
    gc.collect()
    gc.freeze()
    # And no collection at all while it stamps: what it allocates meanwhile is freed by
    # reference counting (decoded records, delivery reports), and a collection of what
    # it keeps (a stamp per record) paused both stamping threads for up to 90 ms in the
    # middle of the run, moving a thousand arrivals' stamps by as much.
    gc.disable()
    pauses = _GcPauses()
    try:
        watcher = _OutboxWatcher(kafka, outbox_topic)
        producer = _PacedProducer(kafka, input_topic)
        try:
            before = _warm_up(producer, watcher, warmup, settle_timeout_s)
            capacity = _calibrate(producer, watcher, plan.calibration, settle_timeout_s)
            before = set(producer.acked)
            rate = max(1.0, capacity * plan.share)
            count = max(1, min(len(plan.records), int(rate * plan.seconds)))
            expected = plan.expected_accepted(count)
            progress(
                f"latency: {capacity:,.0f} events/s sustained in place; offering"
                f" {rate:,.0f} events/s for {count:,} events"
            )
            achieved = _offer(producer, plan.records[:count], rate, progress)
            last_sent = time.time()
            visible = len(before) + expected
            if not watcher.wait_for(visible, settle_timeout_s):
                progress(f"latency: only {len(watcher.visible):,} of {visible:,} visible")
            drain_s = max(0.0, watcher.last_visible(last_sent) - last_sent)
        finally:
            watcher.close()
        latencies = [
            (watcher.visible[coordinates] - acked) * 1000
            for coordinates, acked in producer.acked.items()
            if coordinates not in before and coordinates in watcher.visible
        ]
        gc_ms = [seconds * 1000 for seconds in pauses.seconds]
    finally:
        pauses.close()
        gc.enable()
        gc.unfreeze()
    sustained = (
        achieved >= _SUSTAINED_SHARE * rate
        and drain_s <= plan.commit_interval_ms / 1000 + _DRAIN_SLACK_S
    )
    return LatencyResult(
        rate, achieved, count, expected, latencies, gc_ms, capacity, drain_s, sustained
    )


def _calibrate(
    producer: _PacedProducer,
    watcher: _OutboxWatcher,
    burst: Sequence[tuple[bytes, bytes]],
    timeout_s: float,
) -> float:
    """Send `burst` as fast as it is taken; the rate at which it became visible."""
    already = len(watcher.visible)
    started = time.time()
    for key, value in burst:
        producer.produce(key, value)
        producer.poll(0)
    producer.flush()
    if not watcher.wait_for(already + len(burst), timeout_s):
        raise RuntimeError("the worker did not forward the calibration burst")
    return len(burst) / max(watcher.last_visible(started) - started, 1e-3)


def _warm_up(
    producer: _PacedProducer,
    watcher: _OutboxWatcher,
    warmup: Sequence[tuple[bytes, bytes]],
    timeout_s: float,
) -> set[tuple[int, int]]:
    """Send `warmup` and wait until it is visible; the input coordinates it took."""
    for key, value in warmup:
        producer.produce(key, value)
    producer.flush()
    if not watcher.wait_for(len(warmup), timeout_s):
        raise RuntimeError("the worker did not forward the warm-up events")
    return set(producer.acked)


def _offer(
    producer: _PacedProducer,
    records: Sequence[tuple[bytes, bytes]],
    rate: float,
    progress: Progress,
) -> float:
    """Send `records` at `rate` per second until all are acknowledged; the achieved rate."""
    started = time.monotonic()
    sent = 0
    total = len(records)
    next_report = started + 2.0
    while sent < total:
        now = time.monotonic()
        due = min(total, int((now - started) * rate) + 1)
        while sent < due:
            key, value = records[sent]
            producer.produce(key, value)
            sent += 1
        if now >= next_report:
            next_report = now + 2.0
            progress(f"latency: {sent:,}/{total:,} sent")
        # Serve delivery reports until the next 5 ms tick (or a report arrives):
        # waiting for each record's own slot would spin a core at high rates.
        producer.poll(_TICK_S)
    producer.flush()
    return total / (time.monotonic() - started)


class _GcPauses:
    """Durations of this process's garbage collections while it measures."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self._started = 0.0
        gc.callbacks.append(self._observe)

    def _observe(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds.append(time.perf_counter() - self._started)

    def close(self) -> None:
        gc.callbacks.remove(self._observe)
