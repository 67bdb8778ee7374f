"""Framing.current_body at its edges (what the outbox copies instead of re-encoding), and the
message that says how to read a Confluent frame without a registry."""

from __future__ import annotations

import pytest

from seqgate.schemas.avro_codec import AvroCodec
from seqgate.schemas.avro_schemas import PARSED_SCHEMAS
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD
from seqgate.schemas.confluent import confluent_frame
from seqgate.schemas.errors import CodecError
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.records import ObjectEvent, OutboxRecord
from seqgate.schemas.wire import SINGLE_OBJECT_HEADER_LEN
from tests.support.events import event as sample_event

# Above 2**24, so that every one of the id's four bytes counts.
BIG_ID = 0x0102_0304


class OneIdRegistry:
    """A registry that gives every schema the same id (what Framing asks of a registry)."""

    def __init__(self, schema_id: int) -> None:
        self.id = schema_id
        self.registered: list[str] = []

    def schema_id(self, topic: str, schema_name: str, schema_json: str) -> int:
        self.registered.append(topic)
        return self.id

    def schema_json(self, schema_id: int) -> str:
        raise LookupError(schema_id)


def _event(key: str) -> ObjectEvent:
    return sample_event(
        key, "0A", id=f"s3-{key}", bucket="b", etag=None, event_time=None, origin="file:x"
    )


def _known(schema_id: int) -> Framing:
    framing = Framing(OneIdRegistry(schema_id))
    framing.header(OBJECT_EVENT, "topic")  # learns the id of the event schema
    return framing


def test_the_body_of_a_single_object_record_of_the_current_schema_is_found() -> None:
    data = OBJECT_EVENT.encode(_event("k"))
    assert SINGLE_OBJECT.current_body(OBJECT_EVENT, data) == data[SINGLE_OBJECT_HEADER_LEN:]


def test_the_body_of_a_confluent_frame_is_found_by_all_four_bytes_of_its_id() -> None:
    body = OBJECT_EVENT.encode_body(_event("k"))
    framing = _known(BIG_ID)
    assert framing.current_body(OBJECT_EVENT, confluent_frame(BIG_ID, body)) == body
    assert _known(0x0002_0304).current_body(OBJECT_EVENT, confluent_frame(BIG_ID, body)) is None


def test_a_confluent_header_alone_is_an_empty_body() -> None:
    assert _known(7).current_body(OBJECT_EVENT, confluent_frame(7, b"")) == b""


def test_data_with_neither_marker_has_no_current_body() -> None:
    body = OBJECT_EVENT.encode_body(_event("k"))
    unmarked = b"\x01" + (7).to_bytes(4, "big") + body
    assert _known(7).current_body(OBJECT_EVENT, unmarked) is None


def test_the_outbox_copies_the_event_bytes_it_is_given_as_they_are() -> None:
    read = OBJECT_EVENT.encode(_event("read"))
    outbox = OutboxRecord(_event("decoded"), None, 0, 5)
    written = SINGLE_OBJECT.outbox_writer("outbox")(outbox, read)
    assert OUTBOX_RECORD.decode(written).event == _event("read")


def test_a_confluent_frame_without_a_registry_says_which_option_reads_it() -> None:
    frame = confluent_frame(9, OBJECT_EVENT.encode_body(_event("k")))
    with pytest.raises(CodecError) as raised:
        Framing().decode(OBJECT_EVENT, frame)
    assert str(raised.value) == (
        "io.seqgate.ObjectEvent in the Confluent wire format (schema id 9): reading it needs"
        " the schema registry that assigned the id (give --schema-registry-url)"
    )


class CountingRegistry(OneIdRegistry):
    """Knows no schema by id, and counts how often it was asked."""

    def __init__(self) -> None:
        super().__init__(1)
        self.asked: list[int] = []

    def schema_json(self, schema_id: int) -> str:
        self.asked.append(schema_id)
        raise LookupError(schema_id)


def _unreadable(framing: Framing, schema_id: int) -> None:
    with pytest.raises(CodecError, match=f"schema id {schema_id} is not in the schema registry"):
        framing.decode(OBJECT_EVENT, confluent_frame(schema_id, b"\x00"))


def test_a_frame_of_an_id_this_framing_registered_is_read_without_asking_the_registry() -> None:
    event = _event("k")
    framing = _known(BIG_ID)  # its registry answers no schema_json at all
    assert framing.decode(OBJECT_EVENT, framing.writer(OBJECT_EVENT, "topic")(event)) == event


def test_an_unknown_id_is_asked_once_and_only_1024_of_them_are_remembered() -> None:
    registry = CountingRegistry()
    framing = Framing(registry)
    for schema_id in range(1, 1025):
        _unreadable(framing, schema_id)
    _unreadable(framing, 1)
    assert registry.asked == list(range(1, 1025))
    _unreadable(framing, 2000)
    _unreadable(framing, 2000)
    assert registry.asked[1024:] == [2000, 2000]


def test_a_schema_is_registered_once_per_topic() -> None:
    registry = OneIdRegistry(7)
    framing = Framing(registry)
    first = framing.header(OBJECT_EVENT, "topic")
    assert framing.header(OBJECT_EVENT, "topic") == first == confluent_frame(7, b"")
    framing.header(OBJECT_EVENT, "other")
    assert registry.registered == ["topic", "other"]


def test_a_whole_header_with_no_body_is_read_as_a_body_that_ended_early() -> None:
    with pytest.raises(CodecError) as raised:
        _known(7).decode(OBJECT_EVENT, confluent_frame(7, b""))
    assert "the Avro body ended early" in str(raised.value)


def test_a_codec_without_schema_text_cannot_be_registered_and_says_so() -> None:
    codec = AvroCodec(
        PARSED_SCHEMAS["object_event.avsc"],
        ObjectEvent,
        lambda event: {},
        lambda fields: _event("k"),
        lambda fields: _event("k"),
    )
    with pytest.raises(CodecError) as raised:
        Framing(OneIdRegistry(7)).header(codec, "topic")
    assert str(raised.value) == f"{codec.schema_name} has no schema text to register"
