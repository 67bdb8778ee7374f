"""The bridges' compiled path (`--engine compiled`, the default): Amazon S3 notifications
read by the compiled core (``seqgate._core``: core/src/envelopes.rs, s3.rs, eventbridge.rs),
and events written by it.

The core reads a received body only when it can prove the Python parsers would make an
event of every notification in it, and then makes the same events, in the same order:
``Records`` documents of ``aws:s3`` records (each with a supported name, its bucket, a
form-encoded key, a hex sequencer and fields within their limits) and S3 events from
EventBridge (a supported ``detail-type``, a sequencer), plain or in their envelopes — the
``Message`` of an SNS ``Notification``, the bodies of an SQS ``ReceiveMessage`` response,
Lambda's SQS and SNS records — nested as deep as ``normalize.MAX_ENVELOPE_DEPTH``.
Everything else — every rejection and its reason, an ``s3:TestEvent``, SNS handshakes,
MinIO's records, an event without a sequencer, a ``Records`` document mixing S3 records
and envelopes, the other providers — goes to
:func:`seqgate.connectors.parsers.normalize.normalize`'s Python parsers, which stay the
specification (docs/design.md §5.2.1). ``tests/unit/test_compiled_bridge.py`` holds both to
the same result over every fixture and generated documents.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Final

from seqgate.connectors.parsers.json_fields import MAX_JSON_DEPTH
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.parsers.s3.event_names import S3_EVENT_NAMES
from seqgate.connectors.parsers.s3.eventbridge import EVENTBRIDGE_KINDS
from seqgate.runtime.engines import load_core
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.framing import Framing
from seqgate.schemas.identity import SCHEMES_OF_SOURCES
from seqgate.schemas.kinds import REMOVED, VERSION_REMOVED
from seqgate.schemas.limits import TEXT_LIMITS
from seqgate.schemas.records import ObjectEvent

__all__ = [
    "CleanRecords",
    "compiled_clean_records",
    "compiled_event_record",
    "compiled_event_writer",
    "compiled_s3_events",
]

_FLOOR_TWO_ZERO: Final = "2.0"


@functools.cache
def _reader(schema_floor: str) -> Any:
    core = load_core()
    return core.S3Reader(
        names=[(n.name, n.kind, n.versioned_kind) for n in S3_EVENT_NAMES.values()],
        eventbridge_kinds=list(EVENTBRIDGE_KINDS.items()),
        removed=REMOVED,
        version_removed=VERSION_REMOVED,
        schema_floor_two_zero=schema_floor == _FLOOR_TWO_ZERO,
        text_limits=list(TEXT_LIMITS.values()),
        max_depth=MAX_JSON_DEPTH,
        event_type=ObjectEvent,
    )


def compiled_s3_events(raw: bytes, origin: str, schema_floor: str) -> ParseResult | None:
    """What the Python parsers make of ``raw`` when the core reads every notification in
    it (see above), else None: those parsers must read it."""
    if type(raw) is not bytes or type(origin) is not str:
        return None
    events: tuple[ObjectEvent, ...] | None = _reader(schema_floor).events(raw, origin)
    return None if events is None else ParseResult(events)


CleanRecords = Callable[[bytes, str, str], "list[tuple[bytes, bytes]] | None"]


def compiled_clean_records(framing: Framing, topic: str) -> CleanRecords:
    """``records(raw, origin, schema_floor)``: the Kafka records (identity, ``framing``'s
    encoding for ``topic``) of the events :func:`compiled_s3_events` reads from ``raw``,
    written by the core straight from what it read, without making the ``ObjectEvent``s;
    None unless the core reads ``raw`` and writes every one of its events (else the events
    are made and written the usual way). The same bytes as :func:`compiled_event_record`
    of each event, held to it by ``tests/unit/test_compiled_bridge.py``."""
    writer = _writer(framing, topic)

    def records(raw: bytes, origin: str, schema_floor: str) -> list[tuple[bytes, bytes]] | None:
        if type(raw) is not bytes or type(origin) is not str:
            return None
        written: list[tuple[bytes, bytes]] | None = _reader(schema_floor).records(
            raw, origin, writer
        )
        return written

    return records


def _writer(framing: Framing, topic: str) -> Any:
    return load_core().EventWriter(
        header=framing.header(OBJECT_EVENT, topic),
        event_type=ObjectEvent,
        schemes=sorted(SCHEMES_OF_SOURCES.items()),
    )


def compiled_event_writer(framing: Framing, topic: str) -> Callable[[ObjectEvent], bytes]:
    """``framing.writer(OBJECT_EVENT, topic)`` with the event written by the core; what it
    hands back (not exactly an ObjectEvent, a string that is not text, a size outside a
    long) is written, or refused with its CodecError, by the Python codec."""
    python = framing.writer(OBJECT_EVENT, topic)
    compiled = _writer(framing, topic)

    def write(event: ObjectEvent) -> bytes:
        data: bytes | None = compiled(event)
        return python(event) if data is None else data

    return write


def compiled_event_record(
    framing: Framing, topic: str, python: Callable[[ObjectEvent], tuple[bytes, bytes]]
) -> Callable[[ObjectEvent], tuple[bytes, bytes]]:
    """An event's Kafka record (its identity, UTF-8; ``framing``'s encoding for ``topic``)
    from the core; ``python`` makes (or refuses) what the core hands back, as above or an
    identity the core cannot prove valid."""
    record = _writer(framing, topic).record

    def event_record(event: ObjectEvent) -> tuple[bytes, bytes]:
        written: tuple[bytes, bytes] | None = record(event)
        return python(event) if written is None else written

    return event_record
