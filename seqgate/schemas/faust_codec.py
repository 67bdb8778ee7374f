"""faust-streaming codecs and ``Record`` models of seqgate's outbox, rejected records and audit log.

Only a faust user imports this module (the optional extra ``seqgate[faust]``);
:mod:`seqgate.schemas` itself never imports faust. Importing it registers three
codecs with :func:`faust.serializers.codecs.register` (they are also entry points
of group ``faust.codecs``, so faust finds them by name alone):

* ``seqgate_outbox``: topic ``object-events.outbox``, model :class:`OutboxModel`;
* ``seqgate_rejected``: topic ``object-events.rejected``, model :class:`RejectedModel`;
* ``seqgate_decision``: topic ``object-events.decisions``, model :class:`DecisionModel`.

Decoding accepts both encodings, told apart by the first byte: ``C3`` is Avro
single-object encoding (what the worker writes by default), ``00`` the Confluent wire
format (``00`` + schema id + body, what it writes with a schema registry). A Confluent
body is read with the writer schema its id names once :func:`use_schema_registry` was
given the registry, else with the current schema, whatever its id says. Encoding always
writes single-object encoding.
A codec returns the record's dict form (:meth:`OutboxRecord.to_dict` …), which
faust turns into the model given as ``value_type``. The models are made from the
dataclasses of :mod:`seqgate.schemas.records`, so their fields are those of the
``.avsc`` files, in order (docs/contracts.md).
"""

from __future__ import annotations

import types
from dataclasses import fields
from typing import Any, ClassVar, Final, get_type_hints

import faust
from faust.serializers import codecs

from seqgate.schemas.avro_codec import AvroCodec
from seqgate.schemas.codec import DECISION_RECORD, OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.confluent import confluent_unframe
from seqgate.schemas.errors import CodecError
from seqgate.schemas.framing import Framing
from seqgate.schemas.records import DecisionRecord, ObjectEvent, OutboxRecord, RejectedRecord
from seqgate.schemas.wire import CONFLUENT_MAGIC, SINGLE_OBJECT_MAGIC

__all__ = [
    "CODEC_NAMES",
    "DecisionCodec",
    "DecisionModel",
    "ObjectEventModel",
    "OutboxCodec",
    "OutboxModel",
    "RejectedCodec",
    "RejectedModel",
    "decode_either",
    "use_schema_registry",
]

# faust's own marker of a model's class, added to to_representation() unless disabled.
_FAUST_METADATA: Final = "__faust"


# The registry of Confluent-framed records, once given: faust's codecs are global too.
_registry: list[Framing] = []


def use_schema_registry(framing: Framing) -> None:
    """Read Confluent-framed records through ``framing``'s schema registry (made with
    ``seqgate.runtime.schema_registry.connect``, as the worker's is)."""
    if framing.registry is None:
        raise ValueError("use_schema_registry needs a Framing with a schema registry")
    _registry[:] = [framing]


def decode_either(codec: AvroCodec[Any], data: bytes) -> Any:
    """``data`` in single-object encoding or in the Confluent wire format, decoded."""
    if data[:1] == SINGLE_OBJECT_MAGIC[:1]:
        return codec.decode(data)
    if data[:1] == bytes([CONFLUENT_MAGIC]) and _registry:
        return _registry[0].decode(codec, data)
    if data[:1] == bytes([CONFLUENT_MAGIC]):
        _schema_id, body = confluent_unframe(data)
        return codec.decode_body(body)
    raise CodecError(
        f"unknown encoding for {codec.schema_name}: expected c3 (Avro single-object "
        f"encoding) or 00 (Confluent wire format), found {data[:1].hex() or 'nothing'}"
    )


class _SeqgateCodec(codecs.Codec):
    """A faust codec of one seqgate record type."""

    avro: ClassVar[AvroCodec[Any]]
    record_type: ClassVar[type[Any]]

    def _loads(self, s: bytes) -> Any:
        return decode_either(self.avro, s).to_dict()

    def _dumps(self, s: Any) -> bytes:
        if isinstance(s, faust.Record | dict):
            s = self.record_type.from_dict(_plain(s))
        return self.avro.encode(s)


def _plain(value: Any) -> Any:
    """A model (nested ones too) or its representation -> plain dicts, without faust's marker."""
    if isinstance(value, faust.Record):
        value = value.asdict()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != _FAUST_METADATA}
    return value


class OutboxCodec(_SeqgateCodec):
    avro = OUTBOX_RECORD
    record_type = OutboxRecord


class RejectedCodec(_SeqgateCodec):
    avro = REJECTED_RECORD
    record_type = RejectedRecord


class DecisionCodec(_SeqgateCodec):
    avro = DECISION_RECORD
    record_type = DecisionRecord


CODEC_NAMES: Final = {
    "seqgate_outbox": OutboxCodec,
    "seqgate_rejected": RejectedCodec,
    "seqgate_decision": DecisionCodec,
}
for _name, _codec_type in CODEC_NAMES.items():
    codecs.register(_name, _codec_type())


# -- the models: built from the dataclasses, so their fields are the .avsc fields, in order ------


def _model(record_type: type[Any], serializer: str | None = None, **nested: Any) -> Any:
    """A ``faust.Record`` with the fields of ``record_type`` (a nested record's type replaced
    by its model, given by field name); encoded by codec ``serializer``."""
    hints = get_type_hints(record_type)
    annotations = {f.name: nested.get(f.name, hints[f.name]) for f in fields(record_type)}
    options: dict[str, Any] = {"include_metadata": False}
    if serializer is not None:
        options["serializer"] = serializer
    return types.new_class(
        f"{record_type.__name__}Model",
        (faust.Record,),
        options,
        lambda namespace: namespace.update(
            {"__annotations__": annotations, "__module__": __name__}
        ),
    )


ObjectEventModel: Final = _model(ObjectEvent)
OutboxModel: Final = _model(OutboxRecord, "seqgate_outbox", event=ObjectEventModel)
RejectedModel: Final = _model(RejectedRecord, "seqgate_rejected")
DecisionModel: Final = _model(DecisionRecord, "seqgate_decision")
