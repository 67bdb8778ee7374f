"""Property-based tests (hypothesis) of the normalizer and the orderings."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st
from seqgate_devtools.samples import (
    form_encode_key,
    lambda_sns_event,
    lambda_sqs_event,
    s3_notification,
    s3_record,
    sns_notification,
    sqs_receive_response,
    to_bytes,
    to_text,
)

from seqgate.connectors.parsers.json_fields import MAX_JSON_DEPTH, is_text
from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.results import Ignored
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.limits import MAX_EVENT_BYTES, check_event
from seqgate.schemas.ordering import AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.builders import put
from tests.support.strategies import json_scalars_hostile, long_text, nested

ORIGIN = "test:properties"

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "Records",
                    "Event",
                    "Messages",
                    "Body",
                    "body",
                    "Type",
                    "Message",
                    "Sns",
                    "s3",
                    "eventSource",
                    "eventName",
                    "eventVersion",
                    "detail",
                    "detail-type",
                    "source",
                    "bucket",
                    "object",
                    "key",
                    "name",
                    "sequencer",
                    "EventSource",
                    "x",
                ]
            )
            | st.text(max_size=8),
            children,
            max_size=5,
        )
    ),
    max_leaves=25,
)

# Keys as users name objects: any Unicode text but lone surrogates, within S3's 1024 bytes.
object_keys = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=300
).filter(lambda key: len(key.encode("utf-8")) <= 1024)

hex_positions = st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=40)


def assert_typed(result_items: tuple[object, ...]) -> None:
    assert result_items, "every input yields at least one item"
    for item in result_items:
        assert isinstance(item, ObjectEvent | Rejection | Ignored)


@settings(max_examples=400, deadline=None)
@given(json_values)
def test_arbitrary_json_yields_only_typed_results(document: Any) -> None:
    assert_typed(normalize(json.dumps(document).encode("utf-8"), ORIGIN).items)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_yield_only_typed_results(raw: bytes) -> None:
    assert_typed(normalize(raw, ORIGIN).items)


@settings(max_examples=300, deadline=None)
@given(object_keys)
def test_every_key_survives_an_encode_parse_round_trip(key: str) -> None:
    raw = to_bytes(s3_notification(s3_record(key=form_encode_key(key))))
    [event] = normalize(raw, ORIGIN).events
    assert event.key == key


def sign(number: int) -> int:
    return (number > 0) - (number < 0)


@settings(max_examples=500, deadline=None)
@given(hex_positions, hex_positions, hex_positions)
def test_aws_order_is_a_total_order_matching_its_definition(a: str, b: str, c: str) -> None:
    order = AWS_SEQUENCER_ORDER
    width = max(len(a), len(b))
    padded_a, padded_b = a.lower().ljust(width, "0"), b.lower().ljust(width, "0")
    assert sign(order.compare(a, b)) == sign((padded_a > padded_b) - (padded_a < padded_b))
    assert_total_order(order.compare, order.canonical, a, b, c)


@settings(max_examples=500, deadline=None)
@given(hex_positions, hex_positions, hex_positions)
def test_numeric_order_is_a_total_order_matching_its_definition(a: str, b: str, c: str) -> None:
    order = NUMERIC_SEQUENCER_ORDER
    x, y = int(a, 16), int(b, 16)
    assert sign(order.compare(a, b)) == sign((x > y) - (x < y))
    assert_total_order(order.compare, order.canonical, a, b, c)


def assert_total_order(compare: Any, canonical: Any, a: str, b: str, c: str) -> None:
    assert compare(a, a) == 0
    assert sign(compare(a, b)) == -sign(compare(b, a))
    assert (compare(a, b) == 0) == (canonical(a) == canonical(b))
    if compare(a, b) <= 0 and compare(b, c) <= 0:
        assert compare(a, c) <= 0


s3_records = st.builds(
    lambda key, sequencer, name, version: s3_record(
        key=form_encode_key(key), sequencer=sequencer, event_name=name, version_id=version
    ),
    object_keys,
    hex_positions,
    st.sampled_from(
        [
            "ObjectCreated:Put",
            "ObjectCreated:Post",
            "ObjectCreated:Copy",
            "ObjectCreated:CompleteMultipartUpload",
            "ObjectRemoved:Delete",
            "ObjectRemoved:DeleteMarkerCreated",
        ]
    ),
    st.none() | st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789._", min_size=1, max_size=32),
)

ENVELOPES = {
    "SQS body": lambda body: body,
    "SQS ReceiveMessage": lambda body: to_text(sqs_receive_response(body)),
    "Lambda SQS batch": lambda body: to_text(lambda_sqs_event(body)),
    "SNS HTTP notification": lambda body: to_text(sns_notification(body)),
    "Lambda SNS event": lambda body: to_text(lambda_sns_event(body)),
    "SNS to SQS (not raw)": lambda body: to_text(
        sqs_receive_response(to_text(sns_notification(body)))
    ),
    "SNS to Lambda SQS (not raw)": lambda body: to_text(
        lambda_sqs_event(to_text(sns_notification(body)))
    ),
}


@settings(max_examples=150, deadline=None)
@given(st.lists(s3_records, min_size=1, max_size=3), st.sampled_from(sorted(ENVELOPES)))
def test_wrapping_an_s3_notification_never_changes_its_result(
    records: list[dict[str, Any]], envelope: str
) -> None:
    body = to_text(s3_notification(*records))
    direct = normalize(body.encode("utf-8"), ORIGIN)
    wrapped = normalize(ENVELOPES[envelope](body).encode("utf-8"), ORIGIN)
    assert wrapped.items == direct.items


# --------------------------------------------------------------------------- hostile input

_HOSTILE_MEMBERS: dict[str, tuple[str, ...]] = {
    "bucket": ("s3", "bucket", "name"),
    "key": ("s3", "object", "key"),
    "sequencer": ("s3", "object", "sequencer"),
    "versionId": ("s3", "object", "versionId"),
    "size": ("s3", "object", "size"),
    "eTag": ("s3", "object", "eTag"),
    "eventTime": ("eventTime",),
    "userMetadata": ("s3", "object", "userMetadata"),
}

# Long enough to cross every limit; the 520 KB case is the hex sequencer's, cheap to write.
_LONGEST = 10_000

hostile_hex = st.builds(
    lambda digit, count: digit * count,
    st.sampled_from("0aF"),
    st.sampled_from([1, 20, 128, 129, 520_000]),
)


def _form_encoded(key: str) -> str:
    return form_encode_key(key) if is_text(key) else key


@st.composite
def hostile_s3_records(draw: st.DrawFn) -> dict[str, Any]:
    """A valid native S3 record with some members replaced by hostile values."""
    record = s3_record(sequencer="0055AED6DCD90281E5")
    values = {
        "bucket": long_text([63, 256], _LONGEST),
        "key": long_text([1024, 4096], _LONGEST).map(_form_encoded) | long_text([4096], _LONGEST),
        "sequencer": hostile_hex | json_scalars_hostile,
        "versionId": long_text([1024], _LONGEST),
        "size": json_scalars_hostile,
        "eTag": long_text([256], _LONGEST),
        "eventTime": long_text([64], _LONGEST),
        "userMetadata": st.integers(min_value=0, max_value=200).map(nested),
    }
    for name in draw(st.sets(st.sampled_from(sorted(values)), min_size=1, max_size=3)):
        record = put(record, _HOSTILE_MEMBERS[name], draw(values[name]))
    return record


def _wrapped(body: str, envelope: str) -> str:
    return body if envelope == "none" else ENVELOPES[envelope](body)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(hostile_s3_records(), min_size=1, max_size=3),
    st.sampled_from(["none", *sorted(ENVELOPES)]),
)
def test_hostile_s3_records_become_encodable_events_or_rejections(
    records: list[dict[str, Any]], envelope: str
) -> None:
    body = to_text(s3_notification(*records))
    result = normalize(_wrapped(body, envelope).encode("utf-8"), ORIGIN)
    # The document is an object holding Records holding the records.
    if 2 + max(map(_depth, records)) > MAX_JSON_DEPTH:
        event("too deep")
        [rejection] = result.items
        assert isinstance(rejection, Rejection)
        assert rejection.reason is RejectReason.NESTING_TOO_DEEP
        return
    assert len(result) == len(records)
    for index, item in enumerate(result.items):
        event(type(item).__name__ if isinstance(item, ObjectEvent) else str(item.reason))
        if isinstance(item, ObjectEvent):
            check_event(item)
            encoded = OBJECT_EVENT.encode(item)
            assert len(encoded) <= MAX_EVENT_BYTES
            assert OBJECT_EVENT.decode(encoded) == item
        else:
            assert isinstance(item, Rejection), item
            assert item.reason in set(RejectReason)
            assert item.record_index == index
            assert len(item.message) < 1_000


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


@settings(max_examples=200, deadline=None)
@given(json_scalars_hostile, st.integers(min_value=0, max_value=120))
def test_any_size_at_any_depth_never_raises(size: Any, depth: int) -> None:
    record = put(s3_record(sequencer="01"), ("s3", "object", "size"), size)
    raw = to_text(nested(depth, s3_notification(record))).encode("utf-8")
    for item in normalize(raw, ORIGIN).items:
        if isinstance(item, ObjectEvent):
            assert len(OBJECT_EVENT.encode(item)) <= MAX_EVENT_BYTES
        else:
            assert item.reason in set(RejectReason)
