"""docs/design.md §1.1's conservation law on a mixed workload, through the bridge and a worker:
inputs = accepted + duplicate + stale + filtered + ignored + rejected."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from confluent_kafka import Producer
from seqgate_devtools.samples import s3_notification, s3_record, s3_test_event, to_bytes

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.publish.publisher import EventPublisher, Topics
from seqgate.schemas.codec import REJECTED_RECORD
from tests.support.kafka_helpers import caught_up, make_config, read_all, wait_for, worker_thread

pytestmark = pytest.mark.kafka


def test_every_input_is_accounted_for_exactly_once(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=3)
    rng = random.Random(7)
    messages: list[bytes] = []
    records = 0
    for n in range(600):
        key = f"obj-{rng.randrange(60)}"
        sequencer = f"{rng.randrange(1, 40):04x}"  # repeats: duplicates; disorder: stale
        choice = rng.random()
        # A delete marker is filtered under the default policy.
        name = "ObjectRemoved:DeleteMarkerCreated" if choice < 0.1 else "ObjectCreated:Put"
        record = s3_record(key=key, sequencer=sequencer, event_name=name)
        if choice > 0.95:
            record = s3_record(key=key, sequencer="", event_name=name)  # rejected: sequencer
        if n % 50 == 0:
            messages.append(to_bytes(s3_test_event()))  # ignored
            records += 1
        if n % 40 == 0:
            messages.append(b"{not json")  # rejected: malformed
            records += 1
        messages.append(to_bytes(s3_notification(record)))
        records += 1

    publisher = EventPublisher(kafka_bootstrap, Topics(config.input_topic, config.rejected_topic))
    for index, raw in enumerate(messages):
        publisher.submit(normalize(raw, f"test:{index}"), raw, f"test:{index}")
    publisher.close()
    bridge = publisher.counters.as_dict()
    # Garbage written straight to the input topic: the worker rejects it.
    garbage = Producer({"bootstrap.servers": kafka_bootstrap})
    for n in range(5):
        garbage.produce(config.input_topic, key=f"s3://b/garbage-{n}".encode(), value=b"junk")
    assert garbage.flush(30) == 0
    inputs = records + 5

    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
    worker = running.worker.counters.totals()

    assert bridge["ignored"] > 0 and bridge["rejected"] > 0
    assert worker["filtered"] > 0 and worker["duplicate"] > 0 and worker["stale"] > 0
    assert worker["rejected"] == 5 and worker["ignored"] == 0
    assert sum(worker.values()) == bridge["published"] + 5
    assert inputs == (
        worker["accepted"]
        + worker["duplicate"]
        + worker["stale"]
        + worker["filtered"]
        + bridge["ignored"]
        + bridge["rejected"]
        + worker["rejected"]
    )
    # The counters agree with what is in Kafka.
    assert worker["accepted"] == len(read_all(kafka_bootstrap, config.outbox_topic))
    dead = [
        REJECTED_RECORD.decode(r.value or b"")
        for r in read_all(kafka_bootstrap, config.rejected_topic)
    ]
    assert len(dead) == bridge["rejected"] + worker["rejected"]
    assert (
        sorted(d.reason for d in dead if d.origin.startswith("kafka:")) == ["undecodable_event"] * 5
    )
    per_partition = running.worker.counters.per_partition()
    assert sum(sum(counts.values()) for counts in per_partition.values()) == sum(worker.values())
