"""The faust codecs of seqgate.schemas.faust_codec: both encodings in, single-object out."""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import entry_points
from typing import Any

import pytest
from faust.serializers import codecs
from faust.serializers.registry import Registry

from seqgate.schemas import faust_codec
from seqgate.schemas.avro_codec import AvroCodec
from seqgate.schemas.codec import DECISION_RECORD, OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.confluent import confluent_frame
from seqgate.schemas.errors import CodecError
from seqgate.schemas.records import DecisionRecord, ObjectEvent, OutboxRecord, RejectedRecord

EVENT = ObjectEvent(
    "s3-1",
    "s3",
    "bucket",
    "a/b.csv",
    "created",
    "ObjectCreated:Put",
    "0a",
    "v1",
    5,
    None,
    None,
    "o",
)
CASES: list[tuple[str, type[Any], AvroCodec[Any], Any]] = [
    ("seqgate_outbox", faust_codec.OutboxModel, OUTBOX_RECORD, OutboxRecord(EVENT, "09", 2, 41)),
    (
        "seqgate_rejected",
        faust_codec.RejectedModel,
        REJECTED_RECORD,
        RejectedRecord(b"\xff{", "http:/s3", "malformed_json", "not JSON", None),
    ),
    (
        "seqgate_decision",
        faust_codec.DecisionModel,
        DECISION_RECORD,
        DecisionRecord(
            2, 41, "s3://bucket/a/b.csv", "s3-1", "0a", "created", "accepted", None, None
        ),
    ),
]


@pytest.mark.parametrize(("name", "model", "avro", "record"), CASES)
@pytest.mark.parametrize("confluent", [False, True])
def test_decodes_both_encodings_into_the_model_and_encodes_single_object(
    name: str, model: type[Any], avro: AvroCodec[Any], record: Any, confluent: bool
) -> None:
    data = confluent_frame(7, avro.encode_body(record)) if confluent else avro.encode(record)
    value = Registry().loads_value(model, data, serializer=name)
    assert isinstance(value, model)
    assert faust_codec._plain(value) == record.to_dict()
    assert value.dumps() == avro.encode(record)
    assert codecs.dumps(name, record) == avro.encode(record)


def test_the_nested_event_is_a_model() -> None:
    value = Registry().loads_value(
        faust_codec.OutboxModel, OUTBOX_RECORD.encode(CASES[0][3]), serializer="seqgate_outbox"
    )
    assert isinstance(value.event, faust_codec.ObjectEventModel)
    assert value.event.id == "s3-1"


def test_refuses_another_encoding_and_another_record_type() -> None:
    with pytest.raises(CodecError, match="expected c3"):
        codecs.loads("seqgate_outbox", b'{"event": null}')
    with pytest.raises(CodecError, match="fingerprint"):
        codecs.loads("seqgate_outbox", DECISION_RECORD.encode(CASES[2][3]))


def test_importing_seqgate_schemas_does_not_import_faust() -> None:
    code = "import sys, seqgate.schemas.codec; print('faust' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_codecs_are_faust_entry_points() -> None:
    found = {e.name: e.load() for e in entry_points(group="faust.codecs")}
    assert {name: found.get(name) for name in faust_codec.CODEC_NAMES} == faust_codec.CODEC_NAMES


def test_through_a_registry_the_schema_id_decides_how_a_confluent_record_is_read() -> None:
    """Without a registry a Confluent body is read as the current schema whatever its id;
    once given one, the id must name a schema of that record type in it."""
    from seqgate.runtime.schema_registry import RegistrySettings, connect
    from seqgate.schemas.confluent import confluent_frame as frame

    record = CASES[0][3]
    framing = connect(RegistrySettings("mock://faust-codec"))
    written = framing.writer(OUTBOX_RECORD, "object-events.outbox")(record)
    unknown_id = frame(4242, OUTBOX_RECORD.encode_body(record))
    assert codecs.loads("seqgate_outbox", unknown_id) == record.to_dict()
    faust_codec.use_schema_registry(framing)
    try:
        assert codecs.loads("seqgate_outbox", written) == record.to_dict()
        with pytest.raises(CodecError, match="4242 is not in the schema registry"):
            codecs.loads("seqgate_outbox", unknown_id)
    finally:
        faust_codec._registry.clear()
    with pytest.raises(ValueError, match="schema registry"):
        faust_codec.use_schema_registry(connect(None))
