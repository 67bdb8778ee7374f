"""One input record → its outcome, its outbox record and its state changes.

Shared by the worker (state = transaction overlay over RocksDB) and by the
reference replay of `verify` (state = a dict), so both apply exactly the
same rules; what differs, and what the checks compare, is how each keeps
and commits its state.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from seqgate.schemas.codec import SEEN_EVENT, WATERMARK, encode_watermark, watermark_position
from seqgate.schemas.errors import FieldLimitError
from seqgate.schemas.identity import event_identity
from seqgate.schemas.limits import check_event
from seqgate.schemas.outcomes import Outcome
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.reconciled import is_reconciled
from seqgate.schemas.records import ObjectEvent, OutboxRecord, SeenEvent
from seqgate.schemas.sources import KNOWN_SOURCES
from seqgate.streams.errors import UndecidableEvent
from seqgate.streams.rules.policy import (
    Policy,
    Trust,
    decide_dedupe,
    decide_position,
    decide_reconciled,
    expired,
)
from seqgate.streams.state.keys import (
    STREAM_TIME_KEY,
    decode_stream_time,
    encode_stream_time,
    latest_key,
    seen_key,
    watermark_key,
)


class StateView(Protocol):
    """Read access to one partition's state, by changelog key."""

    def get(self, key: bytes) -> bytes | None: ...


@dataclass(frozen=True, slots=True)
class InputPosition:
    partition: int
    offset: int
    record_time: int  # the input record's Kafka timestamp (ms)


@dataclass(slots=True)
class Verdict:
    outcome: Outcome
    outbox: OutboxRecord | None = None
    changes: dict[bytes, bytes | None] = field(default_factory=dict)


def record_identity(key: bytes | None, event: ObjectEvent) -> str:
    """The identity an input record is decided under; raises UndecidableEvent.

    Checked before any state is read, for input that did not come from the
    bridge: an unknown source would silently become dedupe-only; a field past
    its limit could make an outbox record the broker refuses, aborting the
    same transaction forever; and a key other than the event's identity would
    give one object a second watermark (in another partition, or under another
    name): the bridge always keys by identity, so any other key is refused.
    """
    if event.source not in KNOWN_SOURCES:
        raise UndecidableEvent(
            RejectReason.UNKNOWN_SOURCE,
            f"event {event.id[:80]!r}: source {event.source[:80]!r} is not one seqgate knows"
            f" ({', '.join(sorted(KNOWN_SOURCES))}): the record was not written by its bridge",
        )
    try:
        check_event(event)
    except FieldLimitError as error:
        raise UndecidableEvent(RejectReason.INVALID_FIELD, str(error)) from error
    try:
        identity = event_identity(event.source, event.bucket, event.key)
    except ValueError as error:  # an empty bucket or key, a bucket with '/'
        raise UndecidableEvent(RejectReason.INVALID_FIELD, f"event {event.id!r}: {error}") from None
    if key is not None and key != identity.encode("utf-8"):
        try:
            shown = repr(key.decode("utf-8")[:120])
        except UnicodeDecodeError:
            raise UndecidableEvent(
                RejectReason.UNDECODABLE_EVENT,
                f"the record key is not UTF-8 ({key[:40]!r}...): expected the object identity"
                f" {identity[:120]!r}",
            ) from None
        raise UndecidableEvent(
            RejectReason.KEY_MISMATCH,
            f"the record key {shown} is not the event's object identity {identity[:120]!r}:"
            " records must be keyed by identity (as the bridge does), or one object would"
            " have two watermarks",
        )
    return identity


def decide_record(
    state: StateView, event: ObjectEvent, identity: str, at: InputPosition, policy: Policy
) -> Verdict:
    """Decide one event; raises UndecidableEvent (to be rejected).

    An event of an ordered source without a position (S3 sends no sequencer
    for tagging, ACL, restore, ... events) can only be deduplicated by id. A reconciled
    event is a compare-and-set on the object's latest accepted event (docs/reconcile.md).
    """
    if is_reconciled(event):
        return _reconciled(state, event, identity, at, policy)
    if policy.trust_for(event.source) is Trust.ORDERED and event.position is not None:
        return _ordered(state, event, identity, at, policy)
    return _dedupe(state, event, identity, at, policy)


def _ordered(
    state: StateView, event: ObjectEvent, identity: str, at: InputPosition, policy: Policy
) -> Verdict:
    key = watermark_key(identity)
    raw = state.get(key)
    previous = None if raw is None else watermark_position(raw)
    outcome = decide_position(event, previous, policy)
    if outcome is not Outcome.ACCEPTED:
        return Verdict(outcome)
    assert event.position is not None
    return Verdict(
        outcome,
        OutboxRecord(event, previous, at.partition, at.offset),
        {key: encode_watermark(event.position, event.id, at.partition, at.offset)},
    )


def _dedupe(
    state: StateView, event: ObjectEvent, identity: str, at: InputPosition, policy: Policy
) -> Verdict:
    changes: dict[bytes, bytes | None] = {}
    raw_time = state.get(STREAM_TIME_KEY)
    stream_time = at.record_time if raw_time is None else decode_stream_time(raw_time)
    if at.record_time > stream_time or raw_time is None:
        stream_time = at.record_time
        changes[STREAM_TIME_KEY] = encode_stream_time(stream_time)
    key = seen_key(event.id)
    raw = state.get(key)
    seen = None if raw is None else SEEN_EVENT.decode(raw)
    outcome = decide_dedupe(event, seen, stream_time, at.record_time, policy)
    if outcome is not Outcome.ACCEPTED:
        return Verdict(outcome, changes=changes)
    entry = SEEN_EVENT.encode(
        SeenEvent(event.id, identity, at.record_time, at.partition, at.offset)
    )
    changes[key] = entry
    changes[latest_key(identity)] = entry
    return Verdict(outcome, OutboxRecord(event, None, at.partition, at.offset), changes)


def latest_accepted(state: StateView, identity: str) -> str | None:
    """The id of the object's latest accepted event: its watermark's, or its latest
    accepted without a position, whichever came later in the input (one partition
    holds all of an object's records, so their offsets order them)."""
    raw_mark, raw_latest = state.get(watermark_key(identity)), state.get(latest_key(identity))
    mark = None if raw_mark is None else WATERMARK.decode(raw_mark)
    latest = None if raw_latest is None else SEEN_EVENT.decode(raw_latest)
    if mark is None or (latest is not None and latest.input_offset > mark.input_offset):
        return None if latest is None else latest.event_id
    return mark.event_id


def _reconciled(
    state: StateView, event: ObjectEvent, identity: str, at: InputPosition, policy: Policy
) -> Verdict:
    outcome = decide_reconciled(event, latest_accepted(state, identity), policy)
    if outcome is not Outcome.ACCEPTED:
        return Verdict(outcome)
    raw = state.get(watermark_key(identity))
    previous = None if raw is None else watermark_position(raw)
    entry = SeenEvent(event.id, identity, at.record_time, at.partition, at.offset)
    return Verdict(
        outcome,
        OutboxRecord(event, previous, at.partition, at.offset),
        {latest_key(identity): SEEN_EVENT.encode(entry)},
    )


def purgeable(candidates: list[SeenEvent], stream_time: int, policy: Policy) -> list[bytes]:
    """Keys of seen ids that count as absent already: safe to delete (tombstone)."""
    return [seen_key(seen.event_id) for seen in candidates if expired(seen, stream_time, policy)]
