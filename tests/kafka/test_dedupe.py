"""Dedupe-only sources (docs/design.md §4.2): decided by event id within a record-time window."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path

import pytest
from confluent_kafka import Producer

from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD
from seqgate.schemas.identity import event_identity
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.rules.policy import Policy
from seqgate.streams.state.keys import SEEN_PREFIX
from seqgate.streams.tools.verify import VerifyTarget, verify
from tests.support.dedupe_events import WINDOW, minio_event
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    read_all,
    verify_target,
    wait_for,
    worker_thread,
)

# ---- against the broker ------------------------------------------------------------------------


def produce_at(bootstrap: str, topic: str, timed: list[tuple[ObjectEvent, int]]) -> None:
    """Produce events with explicit record timestamps (the dedupe window's clock)."""
    producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
    for event, timestamp in timed:
        key = event_identity(event.source, event.bucket, event.key).encode("utf-8")
        producer.produce(topic, key=key, value=OBJECT_EVENT.encode(event), timestamp=timestamp)
    assert producer.flush(30) == 0


def recent_base() -> int:
    """A record time an hour ago: well inside the topic's retention (a fixed date falls out
    of the default 7 days, and the broker deletes the input under the test) and leaving the
    hour of the broker's default tolerance for a timestamp 50 minutes ahead of it."""
    return int(time.time() * 1000) - 60 * 60 * 1000


@pytest.mark.kafka
def test_dedupe_window_redeliveries_expiry_and_purge_through_kafka(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1, broker_time=False)
    config = dataclasses.replace(config, policy=Policy.build(dedupe_window_ms=WINDOW))
    base = recent_base()
    a1 = minio_event("a.txt", "17A6B2C3D4E5F607")
    a2 = minio_event("a.txt", "17A6B2C3D4E5F600")  # an older node clock: still a new write
    b = minio_event("b.txt", "17A6B2C3D4E5F700")
    timed = [
        (a1, base),
        (a1, base + 1_000),  # redelivered inside the window
        (a2, base + 2_000),  # dedupe-only: no ordering between writes
        (b, base + 30_000),  # stream time moves on: a1 and a2 expire (two windows)
        (a1, base + 31_000),  # the same id again, after its window
    ]
    with worker_thread(config) as running:
        # Two batches, so that the expired ids are committed state when the
        # second transaction runs its purge.
        produce_at(kafka_bootstrap, config.input_topic, timed[:3])
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
        produce_at(kafka_bootstrap, config.input_topic, timed[3:])
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up again")
    outcomes = [d.outcome.value for d in sorted(running.decisions, key=lambda d: d.offset)]
    assert outcomes == ["accepted", "duplicate", "accepted", "accepted", "accepted"]

    outbox = [
        OUTBOX_RECORD.decode(r.value or b"") for r in read_all(kafka_bootstrap, config.outbox_topic)
    ]
    assert [r.input_offset for r in outbox] == [0, 2, 3, 4]
    assert all(r.previous_position is None for r in outbox)

    changelog = read_all(kafka_bootstrap, config.changelog_topic)
    tombstones = [r.key for r in changelog if r.value in (None, b"")]
    assert SEEN_PREFIX + a2.id.encode() in tombstones, "the expired id was not purged"

    report = verify(
        VerifyTarget(
            kafka_bootstrap,
            config.application_id,
            config.input_topic,
            config.outbox_topic,
            config.changelog_topic,
            config.policy,
        )
    )
    assert report.ok(), report.as_dict()
    assert report.totals()["expected"] == 4


@pytest.mark.kafka
def test_a_future_timestamp_never_gets_a_redelivery_accepted_twice(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """A producer stamps one record 50 minutes ahead (the broker's default tolerance is an
    hour) on a topic with producer time: before the late rule, the 20 redeliveries that
    followed with true timestamps were all accepted again (stream time had passed their id's
    window); now they are duplicates while the id is kept and late after."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1, broker_time=False)
    window = 10 * 60 * 1000
    config = dataclasses.replace(config, policy=Policy.build(dedupe_window_ms=window))
    base = recent_base()
    original = minio_event("a.txt", "17A6B2C3D4E5F607")
    ahead = minio_event("b.txt", "17A6B2C3D4E5F700")
    timed = [(original, base), (ahead, base + 50 * 60 * 1000)]
    timed += [(original, base + 1_000 + n) for n in range(20)]
    with worker_thread(config) as running:
        produce_at(kafka_bootstrap, config.input_topic, timed)
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
    outcomes = [d.outcome.value for d in sorted(running.decisions, key=lambda d: d.offset)]
    assert outcomes == ["accepted", "accepted", *["late"] * 20]
    outbox = read_all(kafka_bootstrap, config.outbox_topic)
    assert [OUTBOX_RECORD.decode(r.value or b"").input_offset for r in outbox] == [0, 1]
    assert running.worker.counters.totals()["late"] == 20
    report = verify(verify_target(config))
    assert report.ok(), report.as_dict()


@pytest.mark.kafka
def test_topics_are_created_with_broker_time(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """The input topic stamps records on append: a producer's timestamp is replaced, so no
    producer can move stream time (the worker's record time) at all."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1)
    future = int(time.time() * 1000) + 50 * 60 * 1000
    before = int(time.time() * 1000)
    produce_at(kafka_bootstrap, config.input_topic, [(minio_event("a.txt", "01"), future)])
    [record] = read_all(kafka_bootstrap, config.input_topic)
    assert before <= record.timestamp <= int(time.time() * 1000)
