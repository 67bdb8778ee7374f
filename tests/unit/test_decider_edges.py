"""What the decider and the policy refuse, with the reason code and the whole message a
rejected record carries, and the stream-time entry written only when stream time moves."""

from __future__ import annotations

import dataclasses

import pytest

from seqgate.schemas.errors import FieldLimitError
from seqgate.schemas.limits import check_event
from seqgate.schemas.outcomes import Outcome
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import KNOWN_SOURCES
from seqgate.streams.errors import PolicyError, UndecidableEvent
from seqgate.streams.rules.decider import InputPosition, decide_record, record_identity
from seqgate.streams.rules.policy import Policy, decide_position
from seqgate.streams.state.keys import STREAM_TIME_KEY
from tests.support.events import event as sample_event

# The shared sample with the fields these messages are written against.
EVENT = sample_event("k", "0A", id="s3-1", bucket="b", etag=None, event_time=None, origin="file:x")
POLICY = Policy.build()


def _refusal(key: bytes | None, event: ObjectEvent) -> UndecidableEvent:
    with pytest.raises(UndecidableEvent) as raised:
        record_identity(key, event)
    assert str(raised.value) == raised.value.message
    return raised.value


def test_an_unknown_source_is_refused_listing_the_known_ones() -> None:
    refused = _refusal(None, dataclasses.replace(EVENT, source="x" * 90, id="i" * 90))
    assert refused.reason is RejectReason.UNKNOWN_SOURCE
    assert refused.message == (
        f"event {'i' * 80!r}: source {'x' * 80!r} is not one seqgate knows"
        f" ({', '.join(sorted(KNOWN_SOURCES))}): the record was not written by its bridge"
    )


def test_a_field_past_its_limit_is_refused_with_the_limits_message() -> None:
    event = dataclasses.replace(EVENT, key="k" * 5000)
    with pytest.raises(FieldLimitError) as limit:
        check_event(event)
    refused = _refusal(None, event)
    assert (refused.reason, refused.message) == (RejectReason.INVALID_FIELD, str(limit.value))


def test_an_event_without_a_valid_identity_is_refused_naming_it() -> None:
    refused = _refusal(None, dataclasses.replace(EVENT, bucket="a/b"))
    assert refused.reason is RejectReason.INVALID_FIELD
    assert refused.message == (
        "event 's3-1': cannot build an object identity: bucket name 'a/b' contains '/':"
        " bucket names never do, and the identity could not be parsed back"
    )


def test_a_record_key_that_is_not_utf8_is_refused_showing_40_bytes() -> None:
    key = b"\xff" * 50
    long_key = "k" * 130
    refused = _refusal(key, dataclasses.replace(EVENT, key=long_key))
    assert refused.reason is RejectReason.UNDECODABLE_EVENT
    identity = f"s3://b/{long_key}"
    assert refused.message == (
        f"the record key is not UTF-8 ({key[:40]!r}...): expected the object identity"
        f" {identity[:120]!r}"
    )


def test_a_record_key_other_than_the_identity_is_refused_showing_120_characters() -> None:
    long_key = "k" * 130
    key = ("s3://other/" + "o" * 130).encode()
    refused = _refusal(key, dataclasses.replace(EVENT, key=long_key))
    assert refused.reason is RejectReason.KEY_MISMATCH
    assert refused.message == (
        f"the record key {key.decode()[:120]!r} is not the event's object identity"
        f" {f's3://b/{long_key}'[:120]!r}: records must be keyed by identity (as the bridge"
        " does), or one object would have two watermarks"
    )


def test_an_ordered_event_without_a_position_is_refused_naming_the_object() -> None:
    with pytest.raises(UndecidableEvent) as raised:
        decide_position(dataclasses.replace(EVENT, position=None), None, POLICY)
    assert raised.value.reason is RejectReason.MISSING_POSITION
    assert raised.value.message == (
        "event s3-1 for s3://b/k has no position; s3 is configured as an ordered source,"
        " which must carry one"
    )


def test_an_invalid_position_is_refused_with_the_orders_message() -> None:
    with pytest.raises(UndecidableEvent) as raised:
        decide_position(dataclasses.replace(EVENT, position="zz"), "0A", POLICY)
    assert raised.value.reason is RejectReason.INVALID_SEQUENCER
    assert raised.value.message == (
        "event s3-1: aws order: position 'zz' is not valid: expected a non-empty string of"
        " hex digits 0-9, a-f (any case)"
    )


def test_an_unknown_policy_name_is_refused_naming_the_setting_and_the_valid_ones() -> None:
    with pytest.raises(PolicyError) as raised:
        Policy.build(ordered_sources=["nope"])
    assert raised.value.setting == "ordered_sources"
    assert str(raised.value) == (
        f"unknown source(s) ['nope']: valid sources are {', '.join(sorted(KNOWN_SOURCES))}"
    )


class _State(dict[bytes, bytes]):
    pass


def test_stream_time_is_written_only_when_it_moves_forward() -> None:
    dedupe = dataclasses.replace(EVENT, source="minio", position=None)
    state = _State()
    first = decide_record(state, dedupe, "minio://b/k", InputPosition(0, 0, 1000), POLICY)
    assert first.outcome is Outcome.ACCEPTED
    assert first.changes[STREAM_TIME_KEY] == b"1000"
    state.update({k: v for k, v in first.changes.items() if v is not None})
    again = dataclasses.replace(dedupe, id="s3-2")
    same_time = decide_record(state, again, "minio://b/k", InputPosition(0, 1, 1000), POLICY)
    assert STREAM_TIME_KEY not in same_time.changes
    later = decide_record(state, again, "minio://b/k", InputPosition(0, 1, 1001), POLICY)
    assert later.changes[STREAM_TIME_KEY] == b"1001"
