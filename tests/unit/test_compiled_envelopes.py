"""The compiled core's EventBridge events and envelopes against the Python parsers.

As in test_compiled_bridge.py, the Python parsers are the specification: for any body,
`normalize` with the compiled engine gives exactly the Python result, and the records the
core writes straight from its reading are the Python writer's. Checked over generated
EventBridge events (each field drawn at and beyond its rule), over notifications wrapped
in generated envelopes (SNS, SQS `ReceiveMessage`, Lambda's SQS and SNS records, nested
up to one past the depth allowed, with near misses), and over mutated bytes.
`test_clean_envelopes_are_read_by_the_core` proves the core is the one reading them.
"""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seqgate.connectors.parsers.compiled import compiled_s3_events
from seqgate.connectors.parsers.normalize import MAX_ENVELOPE_DEPTH
from seqgate.connectors.parsers.s3.eventbridge import SUPPORTED_DETAIL_TYPES
from tests.support.bridge_engines import (
    DROP,
    FLOORS,
    S3_FIELDS,
    TEXTS,
    both,
    clean_records,
    examples_of,
    near_or_odd,
    s3_record,
)


def _event(**fields: object) -> dict[str, object]:
    """A clean S3 event from EventBridge; `fields` replace members (DROP removes one)."""
    obj: dict[str, object] = {
        "key": "dir/a+b%20c é.txt",
        "size": 5,
        "etag": "b1946ac92492d2347c6235b4d2611184",
        "version-id": "IYV3p45BT0ac8hjHg1houSdS1a.Mro8e",
        "sequencer": "00617F08299329D189",
    }
    detail: dict[str, object] = {
        "version": "0",
        "bucket": {"name": "bucket-1"},
        "object": obj,
        "request-id": "N4N7GDK58NMKJ12R",
        "requester": "123456789012",
        "source-ip-address": "1.2.3.4",
        "reason": "PutObject",
    }
    event: dict[str, object] = {
        "version": "0",
        "id": "17793124-05d4-b198-2fde-7ededc63b103",
        "detail-type": "Object Created",
        "source": "aws.s3",
        "account": "123456789012",
        "time": "2021-11-12T00:00:00Z",
        "region": "ca-central-1",
        "resources": ["arn:aws:s3:::bucket-1"],
        "detail": detail,
    }
    for name, value in fields.items():
        target = obj if name in obj else detail if name in _DETAIL else event
        if name == "bucket" and isinstance(value, str):
            value = {"name": value}
        if value is DROP:
            target.pop(name, None)
        else:
            target[name] = value
    return event


_DETAIL = {"bucket", "object", "event-version", "deletion-type"}
_DELETED = ("Delete Marker Created", "Permanently Deleted")

EVENT_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "source": near_or_odd(st.sampled_from(["aws.s3", "aws.s3 ", "AWS.S3", "aws.sqs"])),
    "version": near_or_odd(st.sampled_from(["0", "1", "00", " 0"]), st.just(0)),
    "detail-type": near_or_odd(
        st.sampled_from([*SUPPORTED_DETAIL_TYPES, "Object Renamed", "object created"])
    ),
    "id": near_or_odd(TEXTS, st.sampled_from(["i" * 256, "i" * 257, "é" * 129])),
    "time": near_or_odd(TEXTS, st.just("t" * 65)),
    "detail": st.sampled_from([None, [], "d", DROP, {}]),
    "event-version": near_or_odd(
        st.sampled_from(["1.0", "1.10", "1.", "1", "2.0", "1.0 ", "1.\u0663", "01.0"])
    ),
    "deletion-type": near_or_odd(st.sampled_from([*_DELETED, "Expired", "permanently deleted"])),
    "bucket": S3_FIELDS["bucket"],
    "object": st.sampled_from([None, [], "o", DROP, {}]),
    "key": near_or_odd(
        st.sampled_from(["k", "a+b%20c", "%C3", "\ud800x", "é" * 2048, "é" * 2049]),
        st.sampled_from(["k" * 4096, "k" * 4097]),
    ),
    "sequencer": S3_FIELDS["sequencer"],
    "version-id": S3_FIELDS["versionId"],
    "size": S3_FIELDS["size"],
    "etag": S3_FIELDS["eTag"],
}


@st.composite
def events(draw: st.DrawFn) -> dict[str, object]:
    """Mostly clean events with a field or two changed; deletions half the time."""
    changed = draw(st.lists(st.sampled_from(sorted(EVENT_FIELDS)), max_size=2, unique=True))
    fields = {name: draw(EVENT_FIELDS[name]) for name in changed}
    if draw(st.booleans()) and "detail-type" not in fields:
        fields["detail-type"] = "Object Deleted"
        fields.setdefault("deletion-type", draw(st.sampled_from(_DELETED)))
    return _event(**fields)


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(event=events(), ascii_only=st.booleans())
def test_generated_eventbridge_events_read_the_same(
    event: dict[str, object], ascii_only: bool
) -> None:
    raw = json.dumps(event, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    both(raw)


# --------------------------------------------------------------------------- envelopes


def _text(document: object) -> str:
    return json.dumps(document)


def _sns(message: str) -> dict[str, object]:
    return {"Type": "Notification", "MessageId": "m", "TopicArn": "arn:t", "Message": message}


def _receive(*bodies: object) -> dict[str, object]:
    return {"Messages": [{"MessageId": f"m{i}", "Body": b} for i, b in enumerate(bodies)]}


def _lambda(*records: dict[str, object]) -> dict[str, object]:
    return {"Records": list(records)}


def _lambda_sqs(body: object) -> dict[str, object]:
    return {"eventSource": "aws:sqs", "messageId": "m", "body": body}


def _lambda_sns(message: object) -> dict[str, object]:
    return {"EventSource": "aws:sns", "Sns": message}


# Near misses of each envelope, for the Python parsers to word (or, where the envelope
# still holds, to read: an SNS notification without TopicArn).
_MISSES: tuple[Any, ...] = (
    lambda text: {"Type": "SubscriptionConfirmation", "TopicArn": "arn:t", "Message": text},
    lambda text: {"Type": "notification", "TopicArn": "arn:t", "Message": text},
    lambda text: {"Type": "Notification", "Message": text},
    lambda text: {"Type": "Notification", "TopicArn": "arn:t", "Message": json.loads(text)},
    lambda text: {"Messages": []},
    lambda text: {"Messages": [{"MessageId": "m"}]},
    lambda text: {"Messages": [text]},
    lambda text: {"Messages": {"Body": text}},
    lambda text: _lambda(_lambda_sqs(json.loads(text))),
    lambda text: _lambda(_lambda_sns(text)),
    lambda text: _lambda(_lambda_sqs(text), s3_record()),
    lambda text: {**_lambda(_lambda_sqs(text)), "Event": "s3:TestEvent"},
    lambda text: "\ufeff" + text,
    lambda text: text[:-1],
)


@st.composite
def notifications(draw: st.DrawFn) -> str:
    """A notification's JSON text: a native document or an EventBridge event."""
    if draw(st.booleans()):
        return _text(draw(events()))
    changed = draw(st.lists(st.sampled_from(sorted(S3_FIELDS)), max_size=1))
    return _text({"Records": [s3_record(**{name: draw(S3_FIELDS[name]) for name in changed})]})


@st.composite
def wrapped(draw: st.DrawFn, depth: int = 0) -> str:
    """A notification in 0 to MAX_ENVELOPE_DEPTH + 1 envelopes, a near miss now and then."""
    if depth > MAX_ENVELOPE_DEPTH or draw(st.integers(min_value=0, max_value=2)) == 0:
        return draw(notifications())
    inner = draw(wrapped(depth + 1))
    if draw(st.integers(min_value=0, max_value=9)) == 0:
        miss = draw(st.sampled_from(_MISSES))
        try:
            made = miss(inner)
        except ValueError:  # not JSON (a cut text): keep the cut text
            made = inner[:-1]
        return made if isinstance(made, str) else _text(made)
    shape = draw(st.sampled_from(["sns", "receive", "lambda-sqs", "lambda-sns"]))
    if shape == "sns":
        return _text(_sns(inner))
    if shape == "receive":
        more = draw(st.lists(notifications(), max_size=2))
        return _text(_receive(inner, *more))
    if shape == "lambda-sqs":
        return _text(_lambda(_lambda_sqs(inner), _lambda_sqs(draw(notifications()))))
    return _text(_lambda(_lambda_sns(_sns(inner))))


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=wrapped(), floor=st.sampled_from(FLOORS))
def test_wrapped_notifications_read_the_same(text: str, floor: str) -> None:
    both(text.encode("utf-8", "surrogatepass"), schema_floor=floor)


@settings(max_examples=1000, deadline=None)
@given(data=st.data())
def test_mutated_envelopes_read_the_same(data: st.DataObject) -> None:
    inner = _text(_sns(_text(_event())))
    raw = bytearray(_text(_receive(inner, _text({"Records": [s3_record()]}))).encode())
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        at = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
        raw[at] = data.draw(st.sampled_from(b'{}[]",:\\ \x00\xc3\xa9\xffe0-+.9%'))
    both(bytes(raw))


def test_the_deepest_envelopes_allowed_are_read_and_one_more_is_not() -> None:
    text = _text(_event())
    for depth in range(MAX_ENVELOPE_DEPTH + 2):
        result = both(text.encode())
        read = compiled_s3_events(text.encode(), "test:0", "2.1")
        assert (read is not None) == (depth <= MAX_ENVELOPE_DEPTH), depth
        assert bool(result.events) == (depth <= MAX_ENVELOPE_DEPTH), depth
        text = _text(_sns(text))


def test_clean_envelopes_are_read_by_the_core() -> None:
    """Were the core to hand every envelope back, the tests above would still pass."""
    rng = random.Random(7)
    kinds = [*SUPPORTED_DETAIL_TYPES]
    clean = []
    for detail_type in kinds:
        extra = {"deletion-type": rng.choice(_DELETED)} if detail_type == "Object Deleted" else {}
        clean.append(_text(_event(**{"detail-type": detail_type, **extra})))
    native = _text({"Records": [s3_record(), s3_record(key="x")]})
    bodies = [
        *clean,
        _text(_sns(clean[0])),
        _text(_receive(*clean, native, _text(_sns(native)))),
        _text(_lambda(_lambda_sqs(clean[1]), _lambda_sqs(native))),
        _text(_lambda(_lambda_sns(_sns(clean[2])))),
    ]
    for body in bodies:
        raw = body.encode()
        read = compiled_s3_events(raw, "test:0", "2.1")
        assert read is not None and read.events, body[:300]
        assert clean_records("single")(raw, "test:0", "2.1") is not None
        assert read == both(raw)


# --------------------------------------------------------------------------- soak


@pytest.mark.tier("soak")
def test_a_million_wrapped_notifications_read_the_same() -> None:
    """A million EventBridge events and native documents, half of them in one to five
    envelopes, each field drawn from the values above (seeded: hypothesis would take hours
    at this size)."""
    rng = random.Random(20261207)
    examples = {name: examples_of(EVENT_FIELDS[name]) for name in EVENT_FIELDS}
    native_examples = {name: examples_of(S3_FIELDS[name]) for name in S3_FIELDS}
    compiled_read = 0
    for index in range(1_000_000):
        if rng.random() < 0.5:
            changed = rng.sample(sorted(EVENT_FIELDS), rng.choice((0, 0, 1, 1, 2)))
            fields = {name: rng.choice(examples[name]) for name in changed}
            if rng.random() < 0.5 and "detail-type" not in fields:
                fields["detail-type"] = "Object Deleted"
                fields.setdefault("deletion-type", rng.choice(_DELETED))
            text = _text(_event(**fields))
        else:
            changed = rng.sample(sorted(S3_FIELDS), rng.choice((0, 0, 1)))
            record = s3_record(**{name: rng.choice(native_examples[name]) for name in changed})
            text = _text({"Records": [record]})
        for _ in range(rng.choice((0, 0, 0, 1, 2, 3, 4, 5))):
            text = rng.choice(_WRAPS)(text)
        body = text.encode("utf-8", "surrogatepass")
        result = both(body, f"soak:{index}")
        compiled_read += compiled_s3_events(body, f"soak:{index}", "2.1") is not None
        assert result.items
    assert compiled_read > 300_000, compiled_read


_WRAPS: tuple[Any, ...] = (
    lambda text: _text(_sns(text)),
    lambda text: _text(_receive(text)),
    lambda text: _text(_receive(text, _text(_event()))),
    lambda text: _text(_lambda(_lambda_sqs(text))),
    lambda text: _text(_lambda(_lambda_sns(_sns(text)))),
    lambda text: _text(_MISSES[0](text)),
    lambda text: _text(_MISSES[4](text)),
)
