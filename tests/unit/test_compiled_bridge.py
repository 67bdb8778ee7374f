"""The bridges' compiled path against the Python parsers and codec (docs/design.md §5.2.1).

The Python parsers are the specification. For any received body, `normalize` with the
compiled engine must give exactly the result the Python engine gives — the same events,
rejections with the same reasons and messages, ignore notes — and the compiled writer the
same bytes as the Python codec (or the same CodecError). Checked over every fixture, over
generated native S3 documents (each field drawn from values at and beyond its rules),
over mutated bytes of clean ones, and over odd events for the writer.
`test_clean_documents_are_read_by_the_core` proves the core is the one reading (a silent
hand-back of everything would pass the rest); the soak tier runs a million generated
documents (`test_a_million_documents_read_the_same`).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import replace

import click
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seqgate_devtools.bench.workload import WorkloadSpec, build_workload

from seqgate.cli import cli
from seqgate.cli.reading_options import s3_parse_option
from seqgate.connectors.parsers.compiled import (
    compiled_event_record,
    compiled_event_writer,
    compiled_s3_events,
)
from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.errors import CodecError
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.identity import event_identity
from seqgate.schemas.records import ObjectEvent
from tests.support.bridge_engines import (
    FLOORS,
    PYTHON,
    S3_FIELDS,
    FixedRegistry,
    both,
    clean_records,
    examples_of,
    fixture_bodies,
    s3_record,
)

# --------------------------------------------------------------------------- fixtures


FIXTURE_BODIES = fixture_bodies()


@pytest.mark.parametrize("floor", FLOORS)
@pytest.mark.parametrize(("name", "raw"), FIXTURE_BODIES, ids=[n for n, _ in FIXTURE_BODIES])
def test_every_fixture_reads_the_same(name: str, raw: bytes, floor: str) -> None:
    both(raw, schema_floor=floor)
    both(raw, schema_floor=floor, allow_missing_sequencer=True)


def test_the_fixtures_hold_documents_the_core_reads() -> None:
    """Else the fixture test above would prove nothing about the core's own reading."""
    read = [n for n, raw in FIXTURE_BODIES if compiled_s3_events(raw, "o", "2.1") is not None]
    assert len(read) >= 16, read  # sns_http_notification.json among them


# --------------------------------------------------------------------------- generated


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    """Mostly clean records with a field or two changed: near its rule's edges (both
    sides) or to a value of another type; sometimes a top-level member, a repeated name."""
    records = []
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        changed = draw(st.lists(st.sampled_from(sorted(S3_FIELDS)), max_size=2, unique=True))
        records.append(s3_record(**{name: draw(S3_FIELDS[name]) for name in changed}))
    document: dict[str, object] = {"Records": records}
    if draw(st.integers(min_value=0, max_value=3)) == 0:
        document[draw(st.sampled_from(["Event", "EventName", "Key", "extra"]))] = draw(
            st.sampled_from(["s3:TestEvent", "x", 1])
        )
    text = json.dumps(document, ensure_ascii=draw(st.booleans()))
    if draw(st.integers(min_value=0, max_value=5)) == 0:
        text = text.replace('"key"', '"key": 1, "key"', 1)  # a repeated member name
    if draw(st.integers(min_value=0, max_value=2)) == 0:
        text = json.dumps(draw(_sns_envelopes(draw(st.sampled_from(["", "\ufeff"])) + text)))
    raw = text.encode("utf-8", "surrogatepass")
    return draw(st.sampled_from([b"", b"\xef\xbb\xbf", b" \n"])) + raw


def _sns_envelopes(message: str) -> st.SearchStrategy[dict[str, object]]:
    """An SNS message around `message`: a notification mostly, else a near miss."""
    clean = {"Type": "Notification", "MessageId": "m-1", "TopicArn": "arn:t", "Message": message}
    return st.sampled_from(
        [
            clean,
            clean,
            {k: v for k, v in clean.items() if k != "TopicArn"},
            {k: v for k, v in clean.items() if k != "Message"},
            {**clean, "Type": "SubscriptionConfirmation"},
            {**clean, "Type": "notification"},
            {**clean, "Message": {"Records": []}},
            {**clean, "Records": None},
            {"Message": message},
        ]
    )


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=documents(), floor=st.sampled_from(FLOORS), allow=st.booleans())
def test_generated_documents_read_the_same(raw: bytes, floor: str, allow: bool) -> None:
    both(raw, schema_floor=floor, allow_missing_sequencer=allow)


@settings(max_examples=1500, deadline=None)
@given(data=st.data())
def test_mutated_bytes_read_the_same(data: st.DataObject) -> None:
    raw = bytearray(json.dumps({"Records": [s3_record(), s3_record(key="x")]}).encode())
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        at = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
        raw[at] = data.draw(st.sampled_from(b'{}[]",:\\ \x00\x7f\xc3\xa9\xffe0-+.9%'))
    both(bytes(raw))


def test_long_origins_and_numbers_read_the_same() -> None:
    clean = json.dumps({"Records": [s3_record()]}).encode()
    for origin in ("o" * 4352, "o" * 4353, "é" * 2176, "é" * 2177):
        both(clean, origin)
    for size in ("-0", "0", "9223372036854775807", "9223372036854775808", "1e2", "1.0", "01"):
        both(clean.replace(b'"size": 1025', b'"size": ' + size.encode()))
    deep = b'{"Records": [' + json.dumps(s3_record(awsRegion=[[[[[[]]]]]])).encode() + b"]}"
    both(deep)
    # awsRegion is at level 4: 61 arrays reach the 64 levels allowed, 62 go past them.
    for depth in (60, 61, 62, 63):
        nested = "[" * depth + "]" * depth
        result = both(clean.replace(b'"eu-west-1"', nested.encode()))
        assert bool(result.events) == (depth <= 61), depth


def test_clean_documents_are_read_by_the_core() -> None:
    """The bench's notifications (and a clean record of every kind of name) are the core's
    to read, and to write straight from its reading: were it to hand them all back, every
    test above would still pass."""
    workload = build_workload(WorkloadSpec(events=500, identities=50))
    for index in range(500):
        raw = workload.notification(index)
        read = compiled_s3_events(raw, f"bench:{index}", "2.1")
        assert read is not None and read == normalize(raw, f"bench:{index}", PYTHON)
        assert clean_records("single")(raw, f"bench:{index}", "2.1") is not None
        both(raw, f"bench:{index}")


def test_the_fixtures_hold_documents_the_core_writes_straight() -> None:
    written = [
        n for n, raw in FIXTURE_BODIES if clean_records("single")(raw, "o", "2.1") is not None
    ]
    assert len(written) >= 16, written


def _reading_commands() -> dict[str, click.Command]:
    bridge = cli.commands["bridge"]
    assert isinstance(bridge, click.Group)
    commands = {f"bridge {name}": command for name, command in bridge.commands.items()}
    return {**commands, "parse": cli.commands["parse"]}


def test_every_bridge_reads_with_the_compiled_engine_by_default() -> None:
    """The command line's default is the core (S3ParseOptions' own default is Python):
    were a bridge to lose the option, it would silently read with Python alone."""
    commands = _reading_commands()
    assert set(commands) == {"bridge file", "bridge sqs", "bridge http", "bridge kafka", "parse"}
    for name, command in commands.items():
        engine = [p for p in command.params if p.name == "engine"]
        assert len(engine) == 1 and engine[0].default == "compiled", name
    seen: list[S3ParseOptions] = []

    @click.command()
    @s3_parse_option
    def probe(s3_options: S3ParseOptions) -> None:
        seen.append(s3_options)

    for args, expected in (([], "compiled"), (["--engine", "python"], "python")):
        result = CliRunner().invoke(probe, args, env={"SEQGATE_ENGINE": None})
        assert result.exit_code == 0, result.output
        assert seen.pop().engine == expected


# --------------------------------------------------------------------------- the writer


class _Text(str):
    pass


def _events() -> list[ObjectEvent]:
    events: list[ObjectEvent] = []
    for _, raw in FIXTURE_BODIES:
        events += normalize(raw, "fixture", PYTHON).events
    base = events[0]
    events += [
        replace(base, size=None, etag=None, version_id=None, event_time=None, position=None),
        replace(base, size=-1),
        replace(base, size=2**63 - 1),
        replace(base, size=2**63),
        replace(base, size=True),
        replace(base, size=1.5),  # type: ignore[arg-type]
        replace(base, key="\ud800"),
        replace(base, key=_Text("sub")),
        replace(base, origin=None),  # type: ignore[arg-type]
        replace(base, bucket="é" * 300),
        replace(base, source="gcs"),
        replace(base, source="Bad"),
        replace(base, bucket="a/b"),
        replace(base, bucket=""),
        replace(base, key=""),
    ]
    return events


def _outcome(call: Callable[[ObjectEvent], object], event: ObjectEvent) -> object:
    """What `call(event)` returned, or the type and message of what it raised."""
    try:
        return call(event)
    except (CodecError, ValueError) as error:
        return f"{type(error).__name__}: {error}"


@pytest.mark.parametrize(
    "framing", [SINGLE_OBJECT, Framing(FixedRegistry())], ids=["single", "registry"]
)
def test_the_writer_writes_what_the_codec_writes(framing: Framing) -> None:
    python = framing.writer(OBJECT_EVENT, "object-events")
    compiled = compiled_event_writer(framing, "object-events")

    def python_record(event: ObjectEvent) -> tuple[bytes, bytes]:
        value = python(event)
        return event_identity(event.source, event.bucket, event.key).encode(), value

    compiled_record = compiled_event_record(framing, "object-events", python_record)
    written_by_core = 0
    core = compiled_event_record(framing, "object-events", lambda event: (b"", b""))
    for event in _events():
        assert _outcome(compiled, event) == _outcome(python, event), event
        expected = _outcome(python_record, event)
        assert _outcome(compiled_record, event) == expected, event
        written_by_core += core(event) != (b"", b"")
    assert written_by_core >= len(_events()) - 12  # the odd ones go to Python


# --------------------------------------------------------------------------- soak


@pytest.mark.tier("soak")
def test_a_million_documents_read_the_same() -> None:
    """Generated documents, a million, each field drawn from its values above (a seeded
    generator: hypothesis would take hours at this size)."""
    rng = random.Random(20261206)
    examples = {name: examples_of(S3_FIELDS[name]) for name in S3_FIELDS}
    compiled_read = 0
    for index in range(1_000_000):
        records = []
        for _ in range(rng.choice((1, 1, 1, 2))):
            changed = rng.sample(sorted(S3_FIELDS), rng.choice((0, 0, 1, 1, 2)))
            records.append(s3_record(**{name: rng.choice(examples[name]) for name in changed}))
        raw = json.dumps({"Records": records}, ensure_ascii=rng.random() < 0.5)
        body = raw.encode("utf-8", "surrogatepass")
        result = both(body, f"soak:{index}")
        compiled_read += compiled_s3_events(body, f"soak:{index}", "2.1") is not None
        assert result.items
    assert compiled_read > 300_000, compiled_read
