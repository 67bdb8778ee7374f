"""Helpers of the local-state tests (tests/kafka/test_state_damage.py and
tests/kafka/test_state_write_failures.py): events, a worker run to the end, its rebuilds."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from seqgate.connectors.parsers.normalize import normalize
from seqgate.schemas.records import ObjectEvent, Watermark
from seqgate.streams.devtools.samples import s3_notification, s3_record, to_bytes
from seqgate.streams.state.store import StateDirectory
from seqgate.streams.worker.processor import Worker, WorkerConfig
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    produce_events,
    wait_for,
    worker_thread,
)

TOPIC = "object-events"


def mark(i: int) -> Watermark:
    return Watermark(f"{i:016x}", f"event-{i}", 0, i)


OBJECTS = 3_000  # enough watermarks for a store of many SST data blocks


def s3_event(key: str, sequencer: str = "10") -> ObjectEvent:
    notification = s3_notification(s3_record(key=key, sequencer=sequencer))
    result = normalize(to_bytes(notification), "test")
    assert not result.rejections, result.rejections
    return result.events[0]


def objects(count: int, prefix: str = "obj") -> list[ObjectEvent]:
    return [s3_event(f"{prefix}-{i:05d}") for i in range(count)]


def partition_path(config: WorkerConfig, partition: int) -> Path:
    return StateDirectory(config.state_dir, config.input_topic).partition_path(partition)


def run_until_caught_up(
    config: WorkerConfig, what: str, seen: list[Worker] | None = None
) -> list[str]:
    """Run a worker until the input is committed; its committed outcomes, in input order.
    The worker is appended to `seen`."""
    with worker_thread(config) as running:
        if seen is not None:
            seen.append(running.worker)
        wait_for(
            lambda: bool(running.errors) or caught_up(config.kafka.bootstrap_servers, config)(),
            120,
            what,
        )
    assert not running.errors, repr(running.errors[0])
    decisions = sorted(running.decisions, key=lambda d: (d.partition, d.offset))
    return [d.outcome.value for d in decisions]


def rebuilds_counted(worker: Worker, reason: str, partition: int = 0) -> float | None:
    return worker.metrics.registry.get_sample_value(
        "seqgate_worker_state_rebuilds_total", {"partition": str(partition), "reason": reason}
    )


def rebuild_warnings(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        r
        for r in caplog.records
        if r.levelno >= logging.WARNING and "rebuilt from the changelog" in r.getMessage()
    ]


def processed_then_stopped(
    kafka_bootstrap: str,
    unique_name: str,
    tmp_path: Path,
    *,
    partitions: int = 1,
    kafka_timeout_s: float = 30.0,
) -> WorkerConfig:
    """A pipeline whose worker has accepted OBJECTS events and stopped."""
    config = make_config(
        kafka_bootstrap,
        unique_name,
        tmp_path,
        partitions=partitions,
        kafka_timeout_s=kafka_timeout_s,
    )
    produce_events(kafka_bootstrap, config.input_topic, objects(OBJECTS))
    first = run_until_caught_up(config, "the first worker to accept every object")
    assert first == ["accepted"] * OBJECTS
    return config


def redelivered_and_one_new(kafka_bootstrap: str, config: WorkerConfig) -> None:
    produce_events(kafka_bootstrap, config.input_topic, [*objects(OBJECTS), s3_event("new")])
