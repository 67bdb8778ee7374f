"""End-to-end latency at a fixed offered load.

A producer configured like the bridge's (idempotent, acks=all, linger 5 ms,
murmur2) sends the events at a steady rate; each delivery report stamps the
record's (partition, offset) with the wall clock. A read_committed consumer
of the outbox stamps each outbox record when it becomes readable and finds
its input coordinates in the record (`input_partition`, `input_offset`).
Latency = visible - acknowledged, for every accepted event.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, Message, TopicPartition

from seqgate.schemas.codec import OUTBOX_RECORD
from seqgate.streams.devtools.bench.produce import bridge_like_producer, produce_waiting
from seqgate.streams.runtime.kafka_clients import client_config
from seqgate.streams.runtime.kafka_settings import KafkaSettings

Progress = Callable[[str], None]

_TICK_S = 0.005


@dataclass(frozen=True, slots=True)
class LatencyResult:
    offered_rate: float
    achieved_rate: float
    produced: int
    expected_visible: int
    latencies_ms: list[float]
    bench_gc_pauses_ms: list[float]  # the measuring process's own collections


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
                # One record per poll: a batch consume waits for a full batch or its
                # timeout, which would add up to that timeout to the stamps.
                message = self._consumer.poll(0.05)
                if message is None or message.error() is not None:
                    continue
                now = time.time()
                record = OUTBOX_RECORD.decode(message.value() or b"")
                with self._condition:
                    self.visible.setdefault((record.input_partition, record.input_offset), now)
                    self._condition.notify_all()
        finally:
            self._consumer.close()

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
    records: Sequence[tuple[bytes, bytes]],
    expected_accepted: int,
    rate: float,
    progress: Progress,
    settle_timeout_s: float = 120.0,
) -> LatencyResult:
    """Send `warmup` and wait until the worker has forwarded all of it, then send
    `records` at `rate` per second and wait until their accepted events are visible."""
    # The bench holds the whole workload: millions of objects a full collection
    # would walk, pausing the threads that stamp acknowledgements and arrivals
    # (seen: a p99 of 600 ms that was the bench's own pauses). Frozen objects are
    # never walked again.
    gc.collect()
    gc.freeze()
    pauses = _GcPauses()
    try:
        watcher = _OutboxWatcher(kafka, outbox_topic)
        producer = _PacedProducer(kafka, input_topic)
        try:
            warm = _warm_up(producer, watcher, warmup, settle_timeout_s)
            progress(f"latency: warm, offering {rate:,.0f} events/s for {len(records):,} events")
            achieved = _offer(producer, records, rate, progress)
            if not watcher.wait_for(len(warmup) + expected_accepted, settle_timeout_s):
                progress(
                    f"latency: only {len(watcher.visible) - len(warmup):,} of"
                    f" {expected_accepted:,} accepted events visible after"
                    f" {settle_timeout_s:.0f} s"
                )
        finally:
            watcher.close()
        latencies = [
            (watcher.visible[coordinates] - acked) * 1000
            for coordinates, acked in producer.acked.items()
            if coordinates not in warm and coordinates in watcher.visible
        ]
        gc_ms = [seconds * 1000 for seconds in pauses.seconds]
    finally:
        pauses.close()
        gc.unfreeze()
    return LatencyResult(rate, achieved, len(records), expected_accepted, latencies, gc_ms)


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
