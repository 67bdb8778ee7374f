"""Registry mode end to end on a real broker: bridge publisher -> worker (with audit) ->
outbox, rejected records and decisions in the Confluent wire format, read back with
confluent-kafka's own AvroDeserializer, and checked by `verify`.

The registry is confluent-kafka's in-memory one (``mock://``), which keeps its schemas
per client: every component here shares one client (one Framing), as one process would.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext
from seqgate_devtools.samples import s3_notification, s3_record, to_bytes

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.publish.publisher import EventPublisher, Topics
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.schema_registry import RegistrySettings, connect
from seqgate.runtime.topics import TopicSpec, create_topics
from seqgate.schemas.avro_codec import AvroCodec
from seqgate.schemas.codec import DECISION_RECORD, OBJECT_EVENT, OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.confluent import confluent_frame
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.wire import SINGLE_OBJECT_MAGIC
from seqgate.streams.tools.replay import InputRecord
from seqgate.streams.tools.verify import VerifyTarget, verify
from seqgate.streams.worker.processor import WorkerConfig
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    read_all,
    verify_target,
    wait_for,
    worker_thread,
)

pytestmark = pytest.mark.kafka

GUIDE = "s3://example-input/incoming/June report+final.csv"  # the samples' default object


def registry_client(name: str) -> Any:
    return SchemaRegistryClient.new_client({"url": f"mock://{name}"})


def pipeline(bootstrap: str, name: str, tmp_path: Path, framing: Framing) -> WorkerConfig:
    audit_topic = f"{name}.object-events.decisions"
    config = make_config(bootstrap, name, tmp_path, audit_topic=audit_topic, framing=framing)
    create_topics(AdminClient({"bootstrap.servers": bootstrap}), [TopicSpec(audit_topic, 3)])
    return config


def publish(bootstrap: str, config: WorkerConfig, framing: Framing, raws: list[bytes]) -> None:
    """What `seqgate bridge file` does with each message, through ``framing``."""
    publisher = EventPublisher(
        KafkaSettings(bootstrap),
        Topics(config.input_topic, config.rejected_topic),
        framing=framing,
    )
    try:
        for index, raw in enumerate(raws):
            publisher.submit(normalize(raw, f"test:{index}"), raw, f"test:{index}")
        publisher.flush()
    finally:
        publisher.close()


def notification(sequencer: str, **fields: Any) -> bytes:
    return to_bytes(s3_notification(s3_record(sequencer=sequencer, **fields)))


def registry_id(client: Any, topic: str) -> bytes:
    schema_id = int(client.get_latest_version(f"{topic}-value").schema_id)
    return bytes([0]) + schema_id.to_bytes(4, "big")


def value(record: InputRecord) -> bytes:
    assert record.value is not None, (record.partition, record.offset)
    return record.value


def check_frames(client: Any, topic: str, records: list[InputRecord]) -> None:
    header = registry_id(client, topic)
    for record in records:
        assert value(record)[:5] == header, (topic, record.offset, value(record)[:12].hex())


def check_confluent_reads(
    client: Any, framing: Framing, codec: AvroCodec[Any], topic: str, records: list[InputRecord]
) -> None:
    """confluent-kafka's deserializer, knowing only the registry, reads what seqgate reads."""
    deserialize = AvroDeserializer(client)
    context = SerializationContext(topic, MessageField.VALUE)
    for record in records:
        theirs = deserialize(value(record), context)
        ours: dict[str, Any] = framing.decode(codec, value(record)).to_dict()
        assert isinstance(theirs, dict)
        assert list(theirs) == list(ours)
        for name, field_value in ours.items():
            assert theirs[name] == field_value, (topic, record.offset, name)
            assert type(theirs[name]) is type(field_value), (topic, record.offset, name)


def test_the_pipeline_writes_the_confluent_wire_format_end_to_end(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    client = registry_client(unique_name)
    framing = connect(RegistrySettings("mock://pipeline"), client)
    config = pipeline(kafka_bootstrap, unique_name, tmp_path, framing)
    publish(
        kafka_bootstrap,
        config,
        framing,
        [
            notification("f"),  # accepted
            notification("f"),  # duplicate
            notification("e"),  # stale
            notification("f1", size=0),  # accepted
            # accepted, another object, optional fields left out
            notification("1", key="other.txt", version_id=None, etag=None),
            b"{not json",  # rejected record at the bridge
        ],
    )
    # A Confluent frame whose schema id the registry does not know: the worker's rejected record.
    producer = Producer({"bootstrap.servers": kafka_bootstrap})
    unknown = confluent_frame(999_999, b"\x02x")
    producer.produce(config.input_topic, key=b"s3://b/unknown-id", value=unknown)
    assert producer.flush(30) == 0

    inputs = read_all(kafka_bootstrap, config.input_topic)
    assert len(inputs) == 6
    published = [record for record in inputs if value(record) != unknown]
    check_frames(client, config.input_topic, published)

    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
    assert not running.errors

    assert config.audit_topic is not None
    outbox = read_all(kafka_bootstrap, config.outbox_topic)  # read_committed
    rejected = read_all(kafka_bootstrap, config.rejected_topic)
    audit = read_all(kafka_bootstrap, config.audit_topic)
    for topic, records in (
        (config.outbox_topic, outbox),
        (config.rejected_topic, rejected),
        (config.audit_topic, audit),
    ):
        assert records, topic
        check_frames(client, topic, records)
    check_confluent_reads(client, framing, OUTBOX_RECORD, config.outbox_topic, outbox)
    check_confluent_reads(client, framing, REJECTED_RECORD, config.rejected_topic, rejected)
    check_confluent_reads(client, framing, DECISION_RECORD, config.audit_topic, audit)

    decisions = [framing.decode(DECISION_RECORD, value(record)) for record in audit]
    assert Counter(d.outcome for d in decisions) == {
        "accepted": 3,
        "duplicate": 1,
        "stale": 1,
        "rejected": 1,
    }
    assert Counter(d.outcome.value for d in running.decisions) == Counter(
        d.outcome for d in decisions
    )
    guide = sorted((d for d in decisions if d.identity == GUIDE), key=lambda d: d.input_offset)
    assert [(d.position, d.outcome) for d in guide] == [
        ("f", "accepted"),
        ("f", "duplicate"),
        ("e", "stale"),
        ("f1", "accepted"),
    ]

    accepted = [framing.decode(OUTBOX_RECORD, value(record)) for record in outbox]
    assert sorted((a.event.key, a.event.position, a.previous_position) for a in accepted) == [
        ("incoming/June report+final.csv", "f", None),
        ("incoming/June report+final.csv", "f1", "f"),
        ("other.txt", "1", None),
    ]
    # The outbox's event is the input event as published, field for field.
    published_events = {
        (record.partition, record.offset): framing.decode(OBJECT_EVENT, value(record))
        for record in published
    }
    for record in accepted:
        assert published_events[(record.input_partition, record.input_offset)] == record.event

    dead = sorted(
        (framing.decode(REJECTED_RECORD, value(record)) for record in rejected),
        key=lambda d: d.origin,
    )
    assert [(d.origin.split(":")[0], d.reason) for d in dead] == [
        ("kafka", "undecodable_event"),
        ("test", "malformed_json"),
    ]
    assert dead[0].raw == unknown  # the exact bytes received
    assert "999999" in dead[0].message
    assert dead[1].raw == b"{not json"

    report = verify(VerifyTarget(**{**_fields(verify_target(config)), "framing": framing}))
    assert report.ok(), report.as_dict()
    assert report.totals()["found"] == 3
    # Without the registry the same topics cannot be verified: the frames need it.
    assert not verify(verify_target(config)).ok()


def test_switching_writers_to_the_registry_needs_no_flag_day(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """Events written in single-object encoding, then the rest through the registry, into
    one input topic: a worker in registry mode decides every one of them."""
    client = registry_client(unique_name)
    framing = connect(RegistrySettings("mock://switch"), client)
    config = pipeline(kafka_bootstrap, unique_name, tmp_path, framing)
    before = [
        notification("0a"),
        notification("0b"),
        notification("01", key="second.txt"),
    ]
    after = [
        notification("0b"),  # duplicate of one written before the switch
        notification("0c"),
        notification("09"),  # stale
        notification("02", key="second.txt"),
        notification("01", key="third.txt"),
    ]
    publish(kafka_bootstrap, config, SINGLE_OBJECT, before)
    publish(kafka_bootstrap, config, framing, after)

    inputs = read_all(kafka_bootstrap, config.input_topic)
    kinds = Counter(value(record)[:2] for record in inputs)
    assert kinds[SINGLE_OBJECT_MAGIC] == 3
    assert sum(n for prefix, n in kinds.items() if prefix[:1] == b"\x00") == 5

    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
    assert not running.errors

    assert Counter(d.outcome.value for d in running.decisions) == {
        "accepted": 6,
        "duplicate": 1,
        "stale": 1,
    }
    assert read_all(kafka_bootstrap, config.rejected_topic) == []
    outbox = read_all(kafka_bootstrap, config.outbox_topic)
    assert len(outbox) == 6
    check_frames(client, config.outbox_topic, outbox)  # written through the registry
    check_confluent_reads(client, framing, OUTBOX_RECORD, config.outbox_topic, outbox)
    positions = sorted(
        (r.event.key, r.event.position)
        for r in (framing.decode(OUTBOX_RECORD, value(record)) for record in outbox)
    )
    assert positions == [
        ("incoming/June report+final.csv", "0a"),
        ("incoming/June report+final.csv", "0b"),
        ("incoming/June report+final.csv", "0c"),
        ("second.txt", "01"),
        ("second.txt", "02"),
        ("third.txt", "01"),
    ]

    # A reader of another process (its own Framing, the same registry) verifies it all.
    reader = connect(RegistrySettings("mock://switch"), client)
    report = verify(VerifyTarget(**{**_fields(verify_target(config)), "framing": reader}))
    assert report.ok(), report.as_dict()
    assert report.totals()["inputs"] == 8


def _fields(target: VerifyTarget) -> dict[str, Any]:
    return {name: getattr(target, name) for name in VerifyTarget.__slots__}
