"""`seqgate tail`: the records of a topic as JSON lines, whichever way they are encoded.

Decoding is pure (`decode_value`, `record_line`: bytes in, a dict for JSON out), so that a
schema-registry lookup can be added later. Single-object encoding names its schema by
fingerprint, so such a record is decoded whatever the topic (the changelog too). The
Confluent wire format names it by a registry id that tail cannot look up: its body is read
with the schema of the record type the caller chose (`--type`, else the type seqgate writes
to that topic's family), and the id is shown. What cannot be decoded is a line with the raw
value and the reason, never an error.

Reading assigns partitions by hand under a group of its own and never commits: tail joins
no worker group and moves no committed offset.
"""

from __future__ import annotations

import base64
import itertools
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import Consumer, KafkaError, TopicPartition

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.partition_reader import reader_config
from seqgate.runtime.topics import AUDIT, INPUT, OUTBOX, REJECTED, TopicRole
from seqgate.schemas import codec as codecs
from seqgate.schemas.avro_codec import AvroCodec
from seqgate.schemas.confluent import confluent_unframe
from seqgate.schemas.errors import CodecError
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.wire import CONFLUENT_MAGIC, SINGLE_OBJECT_HEADER_LEN, SINGLE_OBJECT_MAGIC
from seqgate.streams.errors import TailError
from seqgate.streams.tools.inspect import (
    admin_client,
    earliest_offsets,
    format_time,
    high_watermarks,
    read_records,
    stable_ends,
    topic_partitions,
)
from seqgate.streams.tools.replay import InputRecord

RECORD_TYPES: Final[Mapping[str, AvroCodec[Any]]] = {
    "event": codecs.OBJECT_EVENT,
    "outbox": codecs.OUTBOX_RECORD,
    "rejected": codecs.REJECTED_RECORD,
    "audit": codecs.DECISION_RECORD,
    "watermark": codecs.WATERMARK,
    "seen": codecs.SEEN_EVENT,
}
"""The record types by the name `--type` takes and each line shows."""

_TYPE_OF_FINGERPRINT: Final = {codec.fingerprint: name for name, codec in RECORD_TYPES.items()}

# The changelog holds two types (watermarks and seen events): no single default there.
_FAMILY_TYPES: Final = {INPUT: "event", OUTBOX: "outbox", REJECTED: "rejected", AUDIT: "audit"}

_FOLLOW_BATCH: Final = 500
# How long one wait for records lasts while following: how soon a signal is noticed.
_FOLLOW_WAIT_S: Final = 0.2
_FOLLOW_FETCH_WAIT_MS: Final = 500  # librdkafka's default
_STALL_TIMEOUT_S: Final = 60.0


# ---- decoding (pure) -----------------------------------------------------------------------


def default_type(topic: str, roles: Iterable[TopicRole]) -> str | None:
    """The record type seqgate writes to `topic`, by the family it has in `roles`."""
    family = {role.name: role.family for role in roles}.get(topic)
    return None if family is None else _FAMILY_TYPES.get(family)


def json_fields(value: Any) -> Any:
    """`value` with every bytes field as base64 text, so that it can be written as JSON."""
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, dict):
        return {name: json_fields(item) for name, item in value.items()}
    return value


def _decoded(codec: AvroCodec[Any], data: bytes, *, framed: bool) -> dict[str, Any]:
    record = codec.decode(data) if framed else codec.decode_body(data)
    fields: dict[str, Any] = record.to_dict()
    return {"value": json_fields(fields)}


def _undecoded(data: bytes | None, reason: str) -> dict[str, Any]:
    return {"raw": None if data is None else json_fields(data), "reason": reason}


def _single_object(data: bytes) -> dict[str, Any]:
    if len(data) < SINGLE_OBJECT_HEADER_LEN:
        reason = f"truncated single-object header: {len(data)} of {SINGLE_OBJECT_HEADER_LEN} bytes"
        return {"encoding": "single-object", "type": None, **_undecoded(data, reason)}
    fingerprint = data[len(SINGLE_OBJECT_MAGIC) : SINGLE_OBJECT_HEADER_LEN]
    name = _TYPE_OF_FINGERPRINT.get(fingerprint)
    line: dict[str, Any] = {"encoding": "single-object", "type": name}
    if name is None:
        reason = f"unknown schema fingerprint {fingerprint.hex()} (no record type of seqgate)"
        return {**line, **_undecoded(data, reason)}
    try:
        return {**line, **_decoded(RECORD_TYPES[name], data, framed=True)}
    except CodecError as error:
        return {**line, **_undecoded(data, str(error))}


def _confluent(data: bytes, record_type: str | None, framing: Framing) -> dict[str, Any]:
    try:
        schema_id, body = confluent_unframe(data)
    except CodecError as error:
        return {"encoding": "confluent", "type": None, **_undecoded(data, str(error))}
    line: dict[str, Any] = {"encoding": "confluent", "schema_id": schema_id, "type": record_type}
    if framing.registry is not None:
        return {**line, **_through_registry(data, record_type, framing)}
    if record_type is None:
        reason = (
            f"Confluent wire format with schema id {schema_id}: without a schema registry"
            " the record type must be given (--type)"
        )
        return {**line, **_undecoded(data, reason)}
    try:
        return {**line, **_decoded(RECORD_TYPES[record_type], body, framed=False)}
    except CodecError as error:
        return {**line, **_undecoded(data, f"read as {record_type}: {error}")}


def _through_registry(data: bytes, record_type: str | None, framing: Framing) -> dict[str, Any]:
    """A Confluent frame read with the writer schema its id names in the registry; without
    --type, as whichever of seqgate's record types that schema is."""
    names = [record_type] if record_type is not None else list(RECORD_TYPES)
    reasons = []
    for name in names:
        try:
            record = framing.decode(RECORD_TYPES[name], data)
        except CodecError as error:
            reasons.append(str(error))
            continue
        return {"type": name, "value": json_fields(record.to_dict())}
    reason = reasons[0] if len(reasons) == 1 else "not one of seqgate's record types"
    return _undecoded(data, reason)


def decode_value(
    data: bytes | None, record_type: str | None = None, framing: Framing = SINGLE_OBJECT
) -> dict[str, Any]:
    """The JSON fields of a record's value: `encoding`, `schema_id` (Confluent only),
    `type` and `value` (the decoded fields, bytes as base64); or, when it cannot be
    decoded, `raw` (base64, null for a tombstone) and `reason`. `record_type` (a name of
    RECORD_TYPES) is the schema of a Confluent-framed body, read as that schema without a
    registry (`framing` without one), else with the writer schema its id names;
    single-object encoding names its own."""
    if data is None:
        return {"encoding": "raw", "type": None, **_undecoded(None, "tombstone (no value)")}
    if data[: len(SINGLE_OBJECT_MAGIC)] == SINGLE_OBJECT_MAGIC:
        return _single_object(data)
    if data[:1] == bytes([CONFLUENT_MAGIC]):
        return _confluent(data, record_type, framing)
    reason = "foreign bytes: neither Avro single-object encoding (c3 01) nor Confluent (00)"
    return {"encoding": "raw", "type": None, **_undecoded(data, reason)}


def _key_fields(key: bytes | None) -> dict[str, Any]:
    if key is None:
        return {"key": None}
    try:
        return {"key": key.decode("utf-8")}
    except UnicodeDecodeError:
        return {"key": json_fields(key), "key_base64": True}


def record_line(
    topic: str, record: InputRecord, record_type: str | None, framing: Framing = SINGLE_OBJECT
) -> dict[str, Any]:
    """One output line of a record of `topic` (see `decode_value`)."""
    return {
        "topic": topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": format_time(record.timestamp),
        **_key_fields(record.key),
        **decode_value(record.value, record_type, framing),
    }


# ---- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TailRequest:
    kafka: KafkaSettings
    topic: str
    partitions: Sequence[int] = ()  # empty: every partition of the topic
    start: int | str = "end"  # "beginning", "end" or an offset
    follow: bool = False  # else stop at the end offsets taken at the start
    committed_only: bool = True  # read_committed
    record_type: str | None = None  # for Confluent-framed records
    limit: int | None = None
    framing: Framing = SINGLE_OBJECT  # its registry reads Confluent-framed records


def _partitions(request: TailRequest, count: int) -> list[int]:
    if not request.partitions:
        return list(range(count))
    for partition in request.partitions:
        if partition >= count:
            raise TailError(
                f"--partition {partition}: topic {request.topic} has {count} partitions"
                f" (0 to {count - 1})"
            )
    return sorted(set(request.partitions))


def _plan(request: TailRequest) -> dict[int, tuple[int, int]]:
    """partition -> (first offset to read, end offset taken now)."""
    admin = admin_client(request.kafka)
    partitions = _partitions(request, topic_partitions(admin, request.topic, "TOPIC"))
    ends = (stable_ends if request.committed_only else high_watermarks)(
        admin, request.topic, partitions
    )
    if request.start == "end":
        return {p: (ends[p], ends[p]) for p in partitions}
    earliest = earliest_offsets(admin, request.topic, partitions)
    offset = 0 if request.start == "beginning" else int(request.start)
    for p in partitions:
        if offset > ends[p]:
            # Past the end the consumer would start over from the earliest record.
            raise TailError(
                f"--offset {offset}: partition {p} of {request.topic} holds offsets"
                f" {earliest[p]} to {ends[p] - 1}"
            )
    return {p: (max(offset, earliest[p]), ends[p]) for p in partitions}


def _consumer(request: TailRequest) -> Consumer:
    config = reader_config(request.kafka, "seqgate-tail")
    if not request.committed_only:
        config["isolation.level"] = "read_uncommitted"
    if request.follow:
        # The reader's short fetch wait suits reading to the end; while following an idle
        # topic it would ask the brokers a hundred times a second.
        config["fetch.wait.max.ms"] = _FOLLOW_FETCH_WAIT_MS
    return Consumer(config)


def _bounded(
    consumer: Consumer, topic: str, plan: Mapping[int, tuple[int, int]]
) -> Iterator[InputRecord]:
    for partition, (begin, end) in plan.items():
        if begin < end:
            yield from read_records(
                consumer, topic, partition, begin, end, _STALL_TIMEOUT_S, TailError
            )


def _followed(
    consumer: Consumer, topic: str, plan: Mapping[int, tuple[int, int]], stop: threading.Event
) -> Iterator[InputRecord]:
    consumer.assign([TopicPartition(topic, p, begin) for p, (begin, _) in plan.items()])
    while not stop.is_set():
        for message in consumer.consume(_FOLLOW_BATCH, _FOLLOW_WAIT_S):
            error = message.error()
            partition, offset = message.partition(), message.offset()
            if error is not None:
                if error.code() != KafkaError._PARTITION_EOF:
                    raise TailError(f"reading {topic}[{partition}]: {error.str()}")
                continue
            assert partition is not None and offset is not None
            timestamp = message.timestamp()[1]
            yield InputRecord(partition, offset, message.key(), message.value(), timestamp)


def tail(request: TailRequest, stop: threading.Event) -> Iterator[dict[str, Any]]:
    """The lines of `request`'s records, partition by partition in offset order (as they
    arrive when following), until the ends taken at the start, `limit` records, or `stop`."""
    plan = _plan(request)
    consumer = _consumer(request)
    try:
        if request.follow:
            records = _followed(consumer, request.topic, plan, stop)
        else:
            records = _bounded(consumer, request.topic, plan)
        for record in itertools.islice(records, request.limit):
            yield record_line(request.topic, record, request.record_type, request.framing)
            if stop.is_set():
                return
    finally:
        consumer.close()
