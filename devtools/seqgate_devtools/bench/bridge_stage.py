"""Bridge: parse + normalize + produce raw S3 notifications, against a raw produce.

The bridge path is `bridge file`'s, message by message
(`seqgate.connectors.sources.files.publish_read`, no filter): with the compiled engine
(the default), the core reads each clean native S3 notification and writes its records,
which `seqgate.connectors.publish.publisher.EventPublisher` (its idempotent producer,
acks=all) queues; anything else is normalized and submitted. Flushed until Kafka
acknowledged everything. The raw path produces the same
notification bytes, keyed by the same identities, with a producer of the same
configuration and the same produce loop, minus the parsing and encoding.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.connectors.publish.filters import EventFilter
from seqgate.connectors.publish.publisher import EventPublisher, Topics
from seqgate.connectors.sources.files import publish_read
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate_devtools.bench.produce import (
    DeliveryErrors,
    bridge_like_producer,
    produce_waiting,
)
from seqgate_devtools.bench.report import Throughput


def bridge_publish(
    kafka: KafkaSettings, topics: Topics, notifications: Sequence[bytes], engine: str
) -> Throughput:
    publisher = EventPublisher(kafka, topics, engine=engine)
    options = S3ParseOptions(engine=engine)
    unfiltered = EventFilter()
    try:
        started = time.perf_counter()
        for index, raw in enumerate(notifications):
            publish_read(publisher, raw, f"bench:{index}", options, unfiltered)
        publisher.flush()
        seconds = time.perf_counter() - started
    finally:
        publisher.close()
    published = publisher.counters.as_dict()["published"]
    if published != len(notifications):
        raise RuntimeError(f"the bridge published {published} of {len(notifications)} events")
    return Throughput(published, seconds)


def raw_produce(
    kafka: KafkaSettings, topic: str, records: Sequence[tuple[bytes, bytes]]
) -> Throughput:
    delivery = DeliveryErrors()
    producer = bridge_like_producer(kafka, linger_ms=5)
    started = time.perf_counter()
    for key, value in records:
        produce_waiting(producer, topic, key, value, delivery, poll_s=0.1)
        producer.poll(0)
    remaining = producer.flush(60)
    seconds = time.perf_counter() - started
    if remaining or delivery.errors:
        raise RuntimeError(f"raw produce: {remaining} unacknowledged, errors {delivery.errors[:3]}")
    return Throughput(len(records), seconds)
