"""Both bridge engines on one body: the compiled core held to the Python parsers and codec
(tests/unit/test_compiled_bridge.py, tests/unit/test_compiled_envelopes.py)."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.connectors.parsers.compiled import (
    CleanRecords,
    compiled_clean_records,
    compiled_s3_events,
)
from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.identity import event_identity
from seqgate.schemas.records import ObjectEvent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PYTHON = S3ParseOptions()
COMPILED = S3ParseOptions(engine="compiled")
FLOORS = ("2.1", "2.0")


def both(raw: bytes, origin: str = "test:0", **options: Any) -> ParseResult:
    """normalize() with each engine; fails unless they agree. The Python result. And the
    records the core writes straight from its reading, when it does, are the Python
    writer's records of that result's events, in both framings."""
    python = normalize(raw, origin, replace(PYTHON, **options))
    compiled = normalize(raw, origin, replace(COMPILED, **options))
    assert compiled == python, raw[:400]
    floor = replace(PYTHON, **options).schema_floor
    for name in ("single", "registry"):
        records = clean_records(name)(raw, origin, floor)
        if records is not None:
            assert compiled_s3_events(raw, origin, floor) is not None, raw[:400]
            assert all(isinstance(item, ObjectEvent) for item in python.items)
            write = framing_named(name).writer(OBJECT_EVENT, "object-events")
            expected = [_python_record(write, event) for event in python.events]
            assert records == expected, raw[:400]
    return python


@functools.cache
def framing_named(name: str) -> Framing:
    return SINGLE_OBJECT if name == "single" else Framing(FixedRegistry())


@functools.cache
def clean_records(name: str) -> CleanRecords:
    return compiled_clean_records(framing_named(name), "object-events")


def _python_record(
    write: Callable[[ObjectEvent], bytes], event: ObjectEvent
) -> tuple[bytes, bytes]:
    value = write(event)
    return event_identity(event.source, event.bucket, event.key).encode(), value


def fixture_bodies() -> list[tuple[str, bytes]]:
    """Every JSON fixture whole, and each of its lines that is a document of its own."""
    bodies = []
    for path in sorted(FIXTURES.rglob("*.json")):
        raw = path.read_bytes()
        name = str(path.relative_to(FIXTURES))
        bodies.append((name, raw))
        try:
            document = json.loads(raw)
        except ValueError:  # a fixture of malformed input
            continue
        for index, part in enumerate(document if isinstance(document, list) else []):
            bodies.append((f"{name}[{index}]", json.dumps(part).encode()))
    return bodies


class FixedRegistry:
    """The registry's interface, answering fixed ids: the framing's header is what varies."""

    def schema_id(self, topic: str, schema_name: str, schema_json: str) -> int:
        return 70000 + len(topic)

    def schema_json(self, schema_id: int) -> str:
        raise KeyError(schema_id)


# --------------------------------------------------------------------------- generated


def s3_record(**fields: object) -> dict[str, object]:
    """A clean Amazon S3 record; `fields` replace members (a value of DROP removes one)."""
    obj: dict[str, object] = {
        "key": "dir/a+b%2Bc%C3%A9.txt",
        "size": 1025,
        "eTag": "d41d8cd98f00b204e9800998ecf8427e",
        "versionId": "v1",
        "sequencer": "0055AED6DCD90281E5",
    }
    record: dict[str, object] = {
        "eventVersion": "2.1",
        "eventSource": "aws:s3",
        "awsRegion": "eu-west-1",
        "eventTime": "2026-06-01T12:00:00.000Z",
        "eventName": "ObjectCreated:Put",
        "s3": {"s3SchemaVersion": "1.0", "bucket": {"name": "bucket-1"}, "object": obj},
    }
    for name, value in fields.items():
        target: dict[str, object] = obj if name in obj else record
        if name == "bucket":
            s3 = dict(record["s3"])  # type: ignore[call-overload]
            s3.pop("bucket") if value is DROP else s3.update(bucket=value)
            record["s3"] = s3
            continue
        if value is DROP:
            target.pop(name, None)
        else:
            target[name] = value
    return record


DROP = object()
TEXTS = st.sampled_from(
    ["", "a", "A b", "é", "😀", "\u0000", "\ud800", "x" * 65, "x" * 129, "x" * 300, "/"]
)
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=False, allow_infinity=False),
    st.just([]),
    st.just({}),
    st.just(DROP),
    TEXTS,
)


def near_or_odd(*near: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Values near the field's rule (both sides of it) three times out of four, any other
    JSON value else."""
    close = st.one_of(*near)
    return st.one_of(close, close, close, ODD)


S3_FIELDS: dict[str, st.SearchStrategy[Any]] = {
    "eventVersion": near_or_odd(
        st.sampled_from(["2.1", "2.0", "2.00", "2.10", "2.01", "2.", "1.1", "2.1 ", "\uff12.1"])
    ),
    "eventSource": near_or_odd(st.sampled_from(["aws:s3", "minio:s3", "aws:sqs", "AWS:S3"])),
    "eventName": near_or_odd(
        st.sampled_from(
            [
                "ObjectCreated:Put",
                "ObjectCreated:Copy",
                "ObjectRemoved:Delete",
                "ObjectRemoved:DeleteMarkerCreated",
                "ObjectTagging:Put",
                "LifecycleExpiration:Delete",
                "ObjectRestore:Completed",
                "s3:ObjectCreated:Put",
                "ObjectCreated:*",
            ]
        )
    ),
    "eventTime": near_or_odd(st.just("2026-06-01T12:00:00Z"), TEXTS),
    "EventSource": st.sampled_from([DROP, "aws:sns", "aws:s3"]),
    "bucket": near_or_odd(
        st.one_of(ODD, st.sampled_from(["b", "a/b", "é", "x" * 256, "x" * 257])).map(
            lambda name: {} if name is DROP else {"name": name}
        ),
    ),
    "key": near_or_odd(
        st.sampled_from(
            ["k", "a%2", "a%zz", "%C3", "%C3%A9", "%ED%A0%80", "+", "%2B", "%25", "%252F", "é+x"]
        ),
        st.text(alphabet="a%2BF+é/", max_size=12),
        st.sampled_from(["k" * 4096, "k" * 4097, "%41" * 4096, "é" * 2048, "é" * 2049]),
    ),
    "sequencer": near_or_odd(
        st.sampled_from(
            ["1", "0", "00", "000AB0", "abcDEF", "x1", "1 ", "\u0661", "f" * 128, "f" * 129]
        )
    ),
    "versionId": near_or_odd(st.sampled_from(["null", "v" * 1024, "v" * 1025]), TEXTS),
    "size": near_or_odd(st.integers(min_value=-2, max_value=2**63 + 1), st.sampled_from([0])),
    "eTag": near_or_odd(TEXTS, st.just("e" * 257)),
}


def examples_of(strategy: st.SearchStrategy[Any]) -> list[object]:
    """A few hundred values of `strategy`, drawn once (for the soak tier's seeded runs:
    hypothesis would take hours at their size)."""
    values: list[object] = []

    @settings(max_examples=300, database=None, deadline=None)
    @given(strategy)
    def collect(value: object) -> None:
        values.append(value)

    collect()
    return values
