"""Field limits (seqgate/schemas/limits.py) and JSON nesting depth: what cannot be encoded,
or would make records too large, is rejected at validation with a reason."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import hypothesis
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from seqgate_devtools.samples import (
    lambda_sns_event,
    lambda_sqs_event,
    s3_notification,
    s3_record,
    sns_notification,
    sqs_receive_response,
    to_bytes,
    to_text,
)

from seqgate.connectors.parsers.appwrite import parse_appwrite
from seqgate.connectors.parsers.b2 import parse_b2
from seqgate.connectors.parsers.cloudinary import parse_cloudinary
from seqgate.connectors.parsers.json_fields import MAX_JSON_DEPTH, nesting_exceeds
from seqgate.connectors.parsers.normalize import normalize, normalize_with
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.sources.files import split_messages
from seqgate.schemas import limits
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.errors import FieldLimitError
from seqgate.schemas.limits import MAX_EVENT_BYTES, MAX_SIZE, TEXT_LIMITS, check_event
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from tests.support.gcs_samples import notification as gcs_notification
from tests.support.paths import FIXTURES, REPO
from tests.support.strategies import huge_integers, long_text, nested

SEQGATE = Path(sys.executable).parent / "seqgate"
ORIGIN = "file:limits.json:1"

EVENT = ObjectEvent(
    id="s3-ab94e029db54ecf1e2801ccc5b9814f1",
    source="s3",
    bucket="example-input",
    key="incoming/June report+final.csv",
    kind="created",
    event_name="ObjectCreated:Put",
    position="0055aed6dcd90281e5",
    version_id=None,
    size=1024,
    etag="d41d8cd98f00b204e9800998ecf8427e",
    event_time="2026-11-25T10:00:00.000Z",
    origin=ORIGIN,
)


def with_field(**fields: Any) -> ObjectEvent:
    return ObjectEvent(**{**EVENT.to_dict(), **fields})


def refusal(event: ObjectEvent) -> FieldLimitError:
    with pytest.raises(FieldLimitError) as caught:
        check_event(event)
    return caught.value


def s3_raw(**object_members: Any) -> bytes:
    document = s3_notification(s3_record(sequencer="0055AED6DCD90281E5"))
    document["Records"][0]["s3"]["object"].update(object_members)
    return to_bytes(document)


# --------------------------------------------------------------------------- check_event


def test_the_largest_event_allowed_encodes_to_exactly_max_event_bytes() -> None:
    largest = ObjectEvent(
        **{field: "x" * limit for field, limit in TEXT_LIMITS.items()}, size=MAX_SIZE
    )
    check_event(largest)
    encoded = OBJECT_EVENT.encode(largest)
    assert len(encoded) == MAX_EVENT_BYTES
    assert OBJECT_EVENT.decode(encoded) == largest
    # Four-byte characters reach the same byte limits with a quarter of the characters.
    wide = ObjectEvent(
        **{field: "😀" * (limit // 4) for field, limit in TEXT_LIMITS.items()}, size=MAX_SIZE
    )
    check_event(wide)
    assert len(OBJECT_EVENT.encode(wide)) == MAX_EVENT_BYTES


def test_the_bound_is_stated_and_far_below_a_broker_message_limit() -> None:
    assert f"({MAX_EVENT_BYTES:,}) bytes" in (limits.__doc__ or "")
    assert MAX_EVENT_BYTES < 16 * 1024  # outbox records add a position and two numbers


@pytest.mark.parametrize(("field", "limit"), sorted(TEXT_LIMITS.items()))
def test_each_text_limit_holds_at_its_boundary_in_bytes(field: str, limit: int) -> None:
    check_event(with_field(**{field: "a" * limit}))
    # A multi-byte character that ends past the limit: counted in bytes, not characters.
    over = "a" * (limit - 1) + "é"
    error = refusal(with_field(**{field: over}))
    assert error.field == field
    message = str(error)
    assert message.startswith(f"{field} is {limit + 1} bytes of UTF-8")
    assert f"the limit is {limit} bytes" in message
    assert len(message) < 200  # a preview, never the whole value


@pytest.mark.parametrize("field", sorted(TEXT_LIMITS))
def test_a_lone_surrogate_in_any_field_is_refused(field: str) -> None:
    error = refusal(with_field(**{field: "ok\ud800"}))
    assert error.field == field
    assert "lone surrogate at character 2" in str(error)
    with pytest.raises(Exception, match="surrogates not allowed"):
        OBJECT_EVENT.encode(with_field(**{field: "ok\ud800"}))


def test_nul_and_control_characters_are_text() -> None:
    event = with_field(key="a\x00b\x1fc")
    check_event(event)
    assert OBJECT_EVENT.decode(OBJECT_EVENT.encode(event)) == event


@pytest.mark.parametrize(
    ("size", "shown"),
    [
        (-1, "size -1 is outside 0..9223372036854775807"),
        (2**63, "size 9223372036854775808 is outside"),
        (2**64, "size 18446744073709551616 is outside"),
        (-(10**400), "size a negative number of 1329 bits is outside"),
        (True, "size must be an integer or null, got bool"),
        (1.0, "size must be an integer or null, got float"),
    ],
)
def test_size_must_be_an_avro_long_and_not_negative(size: object, shown: str) -> None:
    error = refusal(with_field(size=size))
    assert error.field == "size"
    assert str(error).startswith(shown)


@pytest.mark.parametrize("size", [None, 0, 2**63 - 1])
def test_sizes_at_the_bounds_pass(size: int | None) -> None:
    check_event(with_field(size=size))


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"key": None}, "key"),
        ({"id": b"bytes"}, "id"),
        ({"position": 5}, "position"),
    ],
)
def test_values_of_another_type_are_refused(fields: dict[str, Any], field: str) -> None:
    assert refusal(with_field(**fields)).field == field


def test_the_first_field_in_schema_order_is_named() -> None:
    error = refusal(with_field(key="k" * 5000, etag="e" * 5000, size=-1))
    assert error.field == "key"


def test_every_event_of_every_fixture_is_within_the_limits() -> None:
    events = 0
    for path in sorted(FIXTURES.rglob("*.json")):
        raw = path.read_bytes()
        results = [normalize(raw, f"file:{path}:1")]
        if path.parent.name == "cloudinary":
            results.append(
                normalize_with(raw, "x", lambda d, o: parse_cloudinary(d, o, cloud_name="c"))
            )
        if path.parent.name == "appwrite":
            results.append(
                normalize_with(
                    raw, "x", lambda d, o: parse_appwrite(d, o, events="buckets.*.files.*.create")
                )
            )
        for result in results:
            for rejection in result.rejections:
                assert "field limits" not in rejection.message, (path, rejection)
                assert rejection.reason is not RejectReason.NESTING_TOO_DEEP, (path, rejection)
            for event in result.events:
                check_event(event)
                events += 1
    assert events > 150


# --------------------------------------------------------------------------- C: the property


def _hostile(field: str) -> st.SearchStrategy[Any]:
    if field == "size":
        return huge_integers
    text = long_text([TEXT_LIMITS[field]])
    return st.none() | text if field in limits._OPTIONAL else text


@st.composite
def object_events(draw: st.DrawFn) -> ObjectEvent:
    """An ordinary event with up to three of its fields drawn from their whole domain."""
    fields: dict[str, Any] = {field: draw(st.text(max_size=20)) for field in TEXT_LIMITS} | {
        "size": draw(st.none() | st.integers(min_value=0, max_value=2**40))
    }
    for field in draw(st.sets(st.sampled_from(ObjectEvent.__slots__), max_size=3)):
        fields[field] = draw(_hostile(field))
    return ObjectEvent(**fields)


def _breaks_a_limit(event: ObjectEvent, field: str) -> bool:
    """Whether ``field`` breaks a limit that Avro itself would not enforce."""
    value = getattr(event, field)
    if field == "size":
        return type(value) is int and value < 0  # a long, but no size
    return len(value.encode("utf-8", "surrogatepass")) > TEXT_LIMITS[field]


@settings(max_examples=400, deadline=None)
@given(object_events())
def test_validation_and_encoding_agree(event: ObjectEvent) -> None:
    try:
        check_event(event)
    except FieldLimitError as error:
        # Refused: beyond a limit of seqgate's, or not encodable at all.
        hypothesis.event(f"refused: {error.field}")
        if not _breaks_a_limit(event, error.field):
            with pytest.raises(Exception):  # noqa: B017 - fastavro's errors vary
                OBJECT_EVENT.encode(event)
        assert limits._within_limits(event) is False
        return
    hypothesis.event("accepted")
    encoded = OBJECT_EVENT.encode(event)
    assert OBJECT_EVENT.decode(encoded) == event
    assert len(encoded) <= MAX_EVENT_BYTES
    assert limits._within_limits(event) is True


# --------------------------------------------------------------------------- the bridge


def only_rejection(result: ParseResult) -> Rejection:
    assert result.events == [] and result.ignored == [], result
    [rejection] = result.rejections
    return rejection


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"size": 2**64}, "Records[0].s3.object.size must be a non-negative integer below 2**63"),
        ({"size": 2**63}, "Records[0].s3.object.size must be a non-negative integer below 2**63"),
        ({"sequencer": "a" * 520_000}, "Records[0].s3.object.sequencer is 520000 bytes of UTF-8"),
        ({"key": "k" * 4097}, "Records[0].s3.object.key is 4097 bytes of UTF-8"),
        ({"key": "%C3%A9" * 2049}, "Records[0].s3.object.key is 4098 bytes of UTF-8"),
        ({"versionId": "v" * 1025}, "Records[0].s3.object.versionId is 1025 bytes of UTF-8"),
        ({"eTag": "e" * 100_000}, "Records[0].s3.object.eTag is 100000 bytes of UTF-8"),
    ],
)
def test_an_s3_record_beyond_a_limit_is_an_invalid_field_rejection(
    members: dict[str, Any], message: str
) -> None:
    rejection = only_rejection(normalize(s3_raw(**members), ORIGIN))
    assert rejection.reason is RejectReason.INVALID_FIELD
    assert rejection.record_index == 0
    assert rejection.message.startswith(message)
    assert len(rejection.message) < 300


def test_one_record_beyond_a_limit_leaves_the_others_of_its_message() -> None:
    good = s3_record(sequencer="01")
    bad = s3_record(sequencer="a" * 200)
    result = normalize(to_bytes(s3_notification(good, bad, good)), ORIGIN)
    kinds = [type(item).__name__ for item in result.items]
    assert kinds == ["ObjectEvent", "Rejection", "ObjectEvent"]
    [rejection] = result.rejections
    assert rejection.record_index == 1
    assert rejection.message.startswith("Records[1].s3.object.sequencer is 200 bytes")


def test_the_limits_apply_through_every_envelope() -> None:
    body = to_text(s3_notification(s3_record(sequencer="01"), s3_record(sequencer="a" * 200)))
    for wrapped in (
        to_text(sqs_receive_response(body)),
        to_text(lambda_sqs_event(body)),
        to_text(sns_notification(body)),
        to_text(lambda_sns_event(body)),
        to_text(sqs_receive_response(to_text(sns_notification(body)))),
    ):
        result = normalize(wrapped.encode(), ORIGIN)
        assert [type(item).__name__ for item in result.items] == ["ObjectEvent", "Rejection"]
        [rejection] = result.rejections
        assert (rejection.reason, rejection.record_index) == (RejectReason.INVALID_FIELD, 1)
        assert "Records[1].s3.object.sequencer is 200 bytes" in rejection.message


def test_an_eventbridge_etag_with_a_lone_surrogate_is_refused() -> None:
    document = json.loads((FIXTURES / "aws" / "eventbridge_object_created.json").read_text())
    document["detail"]["object"]["etag"] = "\ud800"
    rejection = only_rejection(normalize(to_bytes(document), ORIGIN))
    assert rejection.reason is RejectReason.INVALID_FIELD
    assert rejection.record_index is None
    assert rejection.message.startswith('detail.object.etag "\\ud800" holds a lone surrogate')


def test_a_provider_event_beyond_a_limit_names_the_event_field() -> None:
    document = json.loads((FIXTURES / "b2" / "object_created_upload.json").read_text())
    document["events"][0]["objectSize"] = 2**64
    document["events"].append(document["events"][0] | {"objectSize": 5, "eventId": "other"})
    result = normalize(to_bytes(document), ORIGIN)
    [rejection] = result.rejections
    assert (rejection.reason, rejection.record_index) == (RejectReason.INVALID_FIELD, 0)
    assert rejection.message.startswith("the event's size 18446744073709551616 is outside")
    assert len(result.events) == 1
    # The provider's own route (normalize_with) holds it to the same limits.
    assert normalize_with(to_bytes(document), ORIGIN, parse_b2) == result


# --------------------------------------------------------------------------- B: nesting depth


def deep_text(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize(
    ("text", "deeper"),
    [
        (deep_text(MAX_JSON_DEPTH), False),
        (deep_text(MAX_JSON_DEPTH + 1), True),
        ('{"a": "' + "[" * 1000 + '"}', False),  # brackets in strings do not count
        ('{"a": "\\"' + "[" * 1000 + '"}', False),  # nor after an escaped quote
        ('{"a": "\\\\", "b": ' + deep_text(100) + "}", True),  # an escaped backslash ends
        ("[{" * 40 + "}]" * 40, True),  # 80 levels, both kinds
        ("[[]," * 70 + "[]" + "]" * 70, True),  # siblings at every level
        (json.dumps([nested(60)] * 1000), False),  # wide, not deep
    ],
)
def test_nesting_is_measured_outside_strings(text: str, deeper: bool) -> None:
    assert nesting_exceeds(text) is deeper
    assert nesting_exceeds(text.encode()) is deeper


def _depth(value: object) -> int:
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    return 0


tricky_strings = st.text(st.sampled_from(['"', "\\", "[", "]", "{", "}", "a", "é"]), max_size=6)
json_trees = st.recursive(
    st.none() | st.integers() | tricky_strings,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(tricky_strings, children, max_size=3)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(json_trees, st.integers(min_value=0, max_value=12), st.booleans())
def test_the_scan_agrees_with_the_depth_of_the_document(
    document: object, limit: int, ascii_only: bool
) -> None:
    text = json.dumps(document, ensure_ascii=ascii_only)
    assert nesting_exceeds(text, limit) is (_depth(document) > limit)


def test_a_100000_deep_document_is_a_nesting_rejection() -> None:
    rejection = only_rejection(normalize(deep_text(100_000).encode(), ORIGIN))
    assert rejection.reason is RejectReason.NESTING_TOO_DEEP
    assert rejection.message.startswith(
        f"the body nests arrays and objects more than {MAX_JSON_DEPTH} levels deep"
    )


def test_the_depth_limit_is_per_json_text_not_per_envelope() -> None:
    # 60 levels inside a record: fine plain and inside two envelopes (each a string).
    record = s3_record(sequencer="01") | {"x": nested(55)}
    body = to_text(s3_notification(record))
    for raw in (body, to_text(sqs_receive_response(to_text(sns_notification(body))))):
        assert len(normalize(raw.encode(), ORIGIN).events) == 1


@pytest.mark.parametrize(
    ("wrap", "path"),
    [
        (lambda body: sqs_receive_response(body), "Messages[0].Body"),
        (lambda body: sns_notification(body), "Message"),
        (lambda body: sqs_receive_response(to_text(sns_notification(body))), "Messages[0].Body"),
        (lambda body: lambda_sqs_event(body), "Records[0].body"),
    ],
)
def test_a_deep_inner_body_is_a_nesting_rejection_naming_its_path(wrap: Any, path: str) -> None:
    raw = to_text(wrap(deep_text(100_000))).encode()
    rejection = only_rejection(normalize(raw, ORIGIN))
    assert rejection.reason is RejectReason.NESTING_TOO_DEEP
    assert rejection.message.startswith(path)
    assert f"more than {MAX_JSON_DEPTH} levels deep" in rejection.message


def test_a_deep_gcs_object_resource_is_a_nesting_rejection() -> None:
    document = gcs_notification()
    document["data"] = base64.b64encode(deep_text(100_000).encode()).decode()
    rejection = only_rejection(normalize(to_bytes(document), ORIGIN))
    assert rejection.reason is RejectReason.NESTING_TOO_DEEP
    assert rejection.message.startswith("data (decoded) nests arrays and objects")


def test_json_lines_with_one_deep_line_keep_the_others() -> None:
    good = to_text(s3_notification(s3_record(sequencer="01")))
    data = f"{good}\n{deep_text(100_000)}\n{good}\n".encode()
    messages = list(split_messages(data, "x"))
    assert [m.origin for m in messages] == ["file:x:1", "file:x:2", "file:x:3"]
    # A pretty-printed deep document stays one document.
    pretty = json.dumps(nested(200), indent=1).encode()
    assert len(list(split_messages(pretty, "y"))) == 1


@pytest.mark.parametrize("layout", ["one line", "json lines", "pretty"])
def test_seqgate_parse_rejects_a_deep_document_and_exits_0(tmp_path: Path, layout: str) -> None:
    good = to_text(s3_notification(s3_record(sequencer="01")))
    deep = {
        "one line": deep_text(100_000),
        "json lines": f"{good}\n{deep_text(100_000)}",
        "pretty": "[\n" * 100_000 + "]\n" * 100_000,
    }[layout]
    path = tmp_path / "deep.json"
    path.write_text(deep)
    done = subprocess.run(
        [str(SEQGATE), "parse", str(path)], capture_output=True, text=True, timeout=60, cwd=REPO
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[-1]["status"] == "rejected"
    assert lines[-1]["reason"] == "nesting_too_deep"
    assert lines[-1]["record_index"] is None
    if layout == "json lines":
        assert lines[0]["status"] == "event"
