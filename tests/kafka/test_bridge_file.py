"""`seqgate bridge file` against a real broker (docs/design.md §2 contracts, §7).

What is checked, per run of the command in its own process:

* the printed JSON summary, and conservation: every record (or whole message) of the
  input is published, ignored or rejected, exactly once;
* events are Avro single-object encoded ObjectEvents keyed by the UTF-8 object identity
  ``s3://<bucket>/<decoded key>``, in the partition that **Java's** default partitioner
  picks (murmur2, implemented here from ``org.apache.kafka.common.utils.Utils.murmur2``);
* rejected records carry the exact input bytes, the reason, a message, the origin
  ``file:<path>:<line>`` and the record index (None for a whole-message failure);
* Kafka failures end in exit 2 with one ``error:`` line and no traceback.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from seqgate_devtools.samples import s3_notification, s3_record, s3_test_event, to_bytes

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.publish.publisher import _PRUNE_MIN, EventPublisher, Topics
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import create_topics, pipeline_topics
from seqgate.schemas.codec import OBJECT_EVENT, REJECTED_RECORD
from seqgate.schemas.reasons import Rejection
from seqgate.schemas.records import ObjectEvent, RejectedRecord
from seqgate.schemas.wire import SINGLE_OBJECT_MAGIC
from tests.support.environment import clean_env
from tests.support.kafka_helpers import read_all
from tests.support.partitioning import java_partition
from tests.support.paths import REPO

pytestmark = pytest.mark.kafka

PARTITIONS = 6
BUCKET = "example-input"
MALFORMED_LINE = b'{"Records": ['

# ---- fixtures and helpers ------------------------------------------------------------------------


@dataclass(frozen=True)
class Pipeline:
    bootstrap: str
    events: str
    rejected: str


def new_pipeline(bootstrap: str, prefix: str) -> Pipeline:
    specs = pipeline_topics(
        input_topic=f"{prefix}.object-events",
        outbox_topic=f"{prefix}.object-events.outbox",
        rejected_topic=f"{prefix}.object-events.rejected",
        application_id=f"{prefix}-app",
        partitions=PARTITIONS,
    )
    created = create_topics(AdminClient({"bootstrap.servers": bootstrap}), specs)
    assert set(created.values()) == {"created"}
    return Pipeline(bootstrap, specs[0].name, specs[2].name)


@pytest.fixture
def pipeline(kafka_bootstrap: str, unique_name: str) -> Pipeline:
    return new_pipeline(kafka_bootstrap, unique_name)


def bridge(
    pipeline: Pipeline,
    *paths: str,
    stdin: bytes | None = None,
    runner: str | None = None,
    timeout: float = 120.0,
    engine: str | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """`python -m seqgate.cli bridge file PATHS...` (or `python -c RUNNER ...`),
    with `--engine ENGINE` when one is given."""
    entry = ["-m", "seqgate.cli"] if runner is None else ["-c", runner]
    if engine is not None:
        paths = (*paths, "--engine", engine)
    return subprocess.run(
        [
            sys.executable,
            *entry,
            "bridge",
            "file",
            *paths,
            "--bootstrap-servers",
            pipeline.bootstrap,
            "--events-topic",
            pipeline.events,
            "--rejected-topic",
            pipeline.rejected,
        ],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env=clean_env(),
        cwd=REPO,
        timeout=timeout,
        check=False,
    )


def summary_of(done: subprocess.CompletedProcess[bytes]) -> dict[str, int]:
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 0, stderr
    assert "Traceback" not in stderr, stderr
    summary: dict[str, int] = json.loads(done.stdout)
    return summary


@dataclass(frozen=True)
class Published:
    partition: int
    key: bytes
    event: ObjectEvent


def published_events(pipeline: Pipeline) -> list[Published]:
    found = []
    for record in read_all(pipeline.bootstrap, pipeline.events):
        assert record.key is not None
        assert record.value.startswith(SINGLE_OBJECT_MAGIC), record.value[:10]
        found.append(Published(record.partition, record.key, OBJECT_EVENT.decode(record.value)))
    return found


def rejected_records(pipeline: Pipeline) -> dict[tuple[str, int | None], RejectedRecord]:
    letters: dict[tuple[str, int | None], RejectedRecord] = {}
    for record in read_all(pipeline.bootstrap, pipeline.rejected):
        letter = REJECTED_RECORD.decode(record.value)
        key = (letter.origin, letter.record_index)
        assert key not in letters, f"two rejected records for {key}"
        letters[key] = letter
    return letters


def check_keys_and_partitions(events: list[Published]) -> None:
    for published in events:
        event = published.event
        identity = f"s3://{event.bucket}/{event.key}".encode()
        assert published.key == identity
        assert published.partition == java_partition(published.key, PARTITIONS), (
            f"{identity!r} is in partition {published.partition}, Java's partitioner says "
            f"{java_partition(published.key, PARTITIONS)}"
        )


# ---- the inputs ----------------------------------------------------------------------------------

# (form-encoded key as S3 sends it, the decoded key that the identity must carry)
PUT_KEYS = [
    ("a.txt", "a.txt"),
    ("incoming%2FJune+report%2Bfinal.csv", "incoming/June report+final.csv"),
    ("caf%C3%A9%2Fmenu.pdf", "café/menu.pdf"),
    ("100%25+pure", "100% pure"),
    ("deep/path/file-1", "deep/path/file-1"),
    ("deep/path/file-2", "deep/path/file-2"),
    ("deep/path/file-3", "deep/path/file-3"),
    ("logs/2026/06/01/app.log", "logs/2026/06/01/app.log"),
]


def jsonl_input() -> tuple[bytes, list[bytes]]:
    """The JSON Lines file and its lines (numbered from 1; line 10 is blank)."""
    lines = [
        to_bytes(s3_notification(s3_record(key=key, sequencer=f"{n + 1:x}")))
        for n, (key, _) in enumerate(PUT_KEYS)
    ]  # lines 1-8
    lines.append(to_bytes(s3_test_event()))  # line 9
    lines.append(b"")  # line 10: blank, skipped
    lines.append(  # line 11: one good record, one bad record (index 1)
        to_bytes(
            s3_notification(
                s3_record(key="multi-ok.txt", sequencer="a0"),
                s3_record(key="multi-bad.txt", sequencer="a1", event_version="3.0"),
            )
        )
    )
    lines.append(MALFORMED_LINE)  # line 12
    return b"\n".join(lines) + b"\n", lines


# ---- tests ---------------------------------------------------------------------------------------


def test_bridge_publishes_a_json_lines_file(pipeline: Pipeline, tmp_path: Path) -> None:
    # The partition check below means something only if some key lands elsewhere under
    # librdkafka's default (consistent_random = CRC32) partitioner, and the keys spread.
    keys = [f"s3://{BUCKET}/{decoded}".encode() for _, decoded in PUT_KEYS]
    murmur = [java_partition(key, PARTITIONS) for key in keys]
    assert murmur != [zlib.crc32(key) % PARTITIONS for key in keys]
    assert len(set(murmur)) >= 3
    source = tmp_path / "notifications.jsonl"
    data, lines = jsonl_input()
    source.write_bytes(data)

    summary = summary_of(bridge(pipeline, str(source)))

    puts = len(PUT_KEYS)
    assert summary == {"messages": puts + 3, "published": puts + 1, "ignored": 1, "rejected": 2}
    # Conservation: 8 single-record puts + 1 test event + 2 records + 1 malformed message.
    units = puts + 1 + 2 + 1
    assert summary["published"] + summary["ignored"] + summary["rejected"] == units

    events = published_events(pipeline)
    assert len(events) == summary["published"]
    check_keys_and_partitions(events)
    origin = f"file:{source}"
    expected = {
        (decoded, f"{origin}:{n + 1}", f"{n + 1:x}") for n, (_, decoded) in enumerate(PUT_KEYS)
    }
    expected.add(("multi-ok.txt", f"{origin}:11", "a0"))
    assert {(p.event.key, p.event.origin, p.event.position) for p in events} == expected
    assert all(p.event.bucket == BUCKET and p.event.source == "s3" for p in events)
    assert all(p.event.kind == "created" for p in events)
    assert len({p.partition for p in events}) >= 3

    letters = rejected_records(pipeline)
    assert set(letters) == {(f"{origin}:11", 1), (f"{origin}:12", None)}
    bad_record = letters[(f"{origin}:11", 1)]
    assert bad_record.raw == lines[10]
    assert bad_record.reason == "unsupported_schema_version"
    assert "eventVersion" in bad_record.message
    malformed = letters[(f"{origin}:12", None)]
    assert malformed.raw == MALFORMED_LINE
    assert malformed.reason == "malformed_json"
    assert malformed.message


def _topic_bytes(bootstrap: str, topic: str) -> list[tuple[int, bytes | None, bytes]]:
    return sorted((r.partition, r.key, r.value) for r in read_all(bootstrap, topic))


def test_both_engines_publish_the_same_bytes(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """Every fixture through `bridge file`, once per engine: the same events and dead
    letters, byte for byte, in the same partitions (docs/sources.md#engines)."""
    source = tmp_path / "fixtures.jsonl"
    fixtures = sorted((REPO / "tests" / "fixtures").rglob("*.json"))
    lines = [b" ".join(path.read_bytes().split()) for path in fixtures]
    data, _ = jsonl_input()
    source.write_bytes(data + b"\n".join(lines) + b"\n")
    summaries = []
    pipelines = []
    for engine in ("python", "compiled"):
        pipeline = new_pipeline(kafka_bootstrap, f"{unique_name}.{engine}")
        summaries.append(summary_of(bridge(pipeline, str(source), engine=engine)))
        pipelines.append(pipeline)
    python, compiled = pipelines
    assert summaries[0] == summaries[1]
    assert summaries[0]["published"] >= 100 and summaries[0]["rejected"] >= 15, summaries[0]
    assert _topic_bytes(kafka_bootstrap, python.events) == _topic_bytes(
        kafka_bootstrap, compiled.events
    )
    assert _topic_bytes(kafka_bootstrap, python.rejected) == _topic_bytes(
        kafka_bootstrap, compiled.rejected
    )


def test_bridge_publishes_a_pretty_printed_document_and_stdin(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    document = s3_notification(
        s3_record(key="pretty%2Fone.txt", sequencer="0a1b"),
        {**s3_record(key="pretty/two.txt"), "eventSource": "aws:dynamodb"},
    )
    pretty = tmp_path / "pretty.json"
    pretty.write_text("\n\n" + json.dumps(document, indent=2) + "\n\n")
    stdin_lines = [
        to_bytes(s3_notification(s3_record(key="from%20stdin.txt", sequencer="5"))),
        b'  {"Records": []}  ',
    ]

    summary = summary_of(bridge(pipeline, str(pretty), "-", stdin=b"\r\n".join(stdin_lines)))

    assert summary == {"messages": 3, "published": 2, "ignored": 0, "rejected": 2}
    events = published_events(pipeline)
    check_keys_and_partitions(events)
    assert {(p.event.key, p.event.origin) for p in events} == {
        ("pretty/one.txt", f"file:{pretty}:3"),  # the document starts on line 3
        ("from stdin.txt", "file:stdin:1"),
    }

    letters = rejected_records(pipeline)
    assert set(letters) == {(f"file:{pretty}:3", 1), ("file:stdin:2", None)}
    wrong_source = letters[(f"file:{pretty}:3", 1)]
    assert wrong_source.raw == pretty.read_bytes().strip()  # the whole document, verbatim
    assert wrong_source.reason == "wrong_event_source"
    empty = letters[("file:stdin:2", None)]
    assert empty.raw == stdin_lines[1]  # the line without its line ending, spaces kept
    assert empty.reason == "not_a_notification"


# ---- failures ------------------------------------------------------------------------------------

# With an unreachable broker, `bridge file` fails once --delivery-timeout-ms has passed (the
# real flag is tested below). The runners start the real CLI in a process whose publisher has
# other librdkafka settings and/or a shorter flush timeout, to reach the failure paths that the
# flags cannot: records still queued when the flush times out, and a tiny local queue.
_RUNNER_PREFIX = """\
import seqgate.connectors.publish.publisher as publisher
import seqgate.cli as cli


class Patched(publisher.EventPublisher):
    def __init__(self, bootstrap_servers, topics, extra_config=None, **options):
        super().__init__(bootstrap_servers, topics, {EXTRA!r}, **options)

    def flush(self, timeout=None):
        super().flush({FLUSH!r})


cli.bridge.EventPublisher = Patched
cli.main()
"""


def runner(extra: dict[str, str], flush_timeout: float | None = None) -> str:
    return _RUNNER_PREFIX.replace("{EXTRA!r}", repr(extra)).replace(
        "{FLUSH!r}", repr(flush_timeout)
    )


@pytest.fixture
def refusing(kafka_bootstrap: str, unique_name: str) -> Pipeline:
    """Kafka answers, but has no such topics (auto-creation is off): every delivery fails,
    as it does while the brokers are down (a real outage: tests/kafka/test_bridge_outage.py)."""
    return Pipeline(kafka_bootstrap, f"{unique_name}.absent", f"{unique_name}.absent-rejected")


FAILURE_RUNNERS = {
    "delivery-timeout": (runner({"message.timeout.ms": "1500"}), "Kafka refused 2 record(s)"),
    "flush-timeout": (
        runner({"message.timeout.ms": "3000"}, flush_timeout=1.0),
        "2 record(s) not acknowledged",
    ),
}


def bridge_to(
    pipeline: Pipeline, tmp_path: Path, runner_source: str, timeout: float = 120.0
) -> subprocess.CompletedProcess[bytes]:
    source = tmp_path / "one.jsonl"
    source.write_bytes(
        to_bytes(s3_notification(s3_record(key="x"), s3_record(key="y", event_version="3.0")))
    )
    return bridge(pipeline, str(source), runner=runner_source, timeout=timeout)


@pytest.mark.kafka
@pytest.mark.parametrize("case", sorted(FAILURE_RUNNERS))
def test_records_kafka_refuses_exit_1_with_an_error_line(
    refusing: Pipeline, tmp_path: Path, case: str
) -> None:
    runner_source, expected = FAILURE_RUNNERS[case]
    done = bridge_to(refusing, tmp_path, runner_source)
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 1, stderr
    assert done.stdout == b""  # no summary: nothing may be acknowledged upstream
    assert "Traceback" not in stderr, stderr
    assert len(stderr.splitlines()) == 1, stderr
    assert stderr.startswith("error: "), stderr
    assert expected in stderr, stderr


@pytest.mark.kafka
def test_a_failed_flush_fails_promptly(refusing: Pipeline, tmp_path: Path) -> None:
    # Flush for 1 s; librdkafka would keep the records for 60 s more.
    slow_to_give_up = runner({"message.timeout.ms": "60000"}, flush_timeout=1.0)
    done = bridge_to(refusing, tmp_path, slow_to_give_up, timeout=20.0)
    assert done.returncode == 1, done.stderr


def test_bridge_survives_a_full_producer_queue(pipeline: Pipeline, tmp_path: Path) -> None:
    # The same situation as a 100001-record replay to a slow broker, made small: a queue of 10.
    source = tmp_path / "many.jsonl"
    source.write_bytes(
        b"\n".join(
            to_bytes(s3_notification(s3_record(key=f"k{n}", sequencer="1"))) for n in range(50)
        )
    )
    done = bridge(pipeline, str(source), runner=runner({"queue.buffering.max.messages": "10"}))
    assert summary_of(done) == {"messages": 50, "published": 50, "ignored": 0, "rejected": 0}


@pytest.mark.kafka
def test_the_delivery_timeout_flag_bounds_the_wait_for_refused_records(
    refusing: Pipeline, tmp_path: Path
) -> None:
    source = tmp_path / "one.jsonl"
    source.write_bytes(to_bytes(s3_notification(s3_record(key="x"))))
    started = time.monotonic()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "seqgate.cli",
            "bridge",
            "file",
            str(source),
            "--bootstrap-servers",
            refusing.bootstrap,
            "--events-topic",
            refusing.events,
            "--rejected-topic",
            refusing.rejected,
            "--delivery-timeout-ms",
            "1500",
        ],
        capture_output=True,
        env=clean_env(),
        timeout=60,
    )
    elapsed = time.monotonic() - started
    stderr = done.stderr.decode("utf-8", "replace").splitlines()
    assert done.returncode == 1
    assert len(stderr) == 1 and stderr[0].startswith("error: Kafka refused 1 record(s)"), stderr
    assert elapsed < 30, f"took {elapsed:.1f}s to fail"


def test_the_publisher_keeps_only_deliveries_in_flight(pipeline: Pipeline) -> None:
    """A source that flushes rarely (a large file) must not keep every message since the
    last flush: the complete ones are dropped as it goes (bounded memory, and a garbage
    collector that does not walk them), and flush() still waits for and reports the rest."""
    publisher = EventPublisher(
        KafkaSettings(pipeline.bootstrap), Topics(pipeline.events, pipeline.rejected)
    )
    try:
        raw = to_bytes(s3_notification(s3_record(key="kept.txt", sequencer="1")))
        result = normalize(raw, "test")
        most = 0
        for index in range(6000):
            publisher.submit(result, raw, f"test:{index}")
            if index % 500 == 499:
                # Every delivery so far reported (the producer's own flush: the
                # publisher's settle() would drop them itself).
                assert publisher._producer.flush(30) == 0
            most = max(most, len(publisher._watched))
        assert most <= 2 * 500 + _PRUNE_MIN, most
        publisher.flush()
        assert publisher.counters.as_dict()["published"] == 6000
    finally:
        publisher.close()
    assert len(published_events(pipeline)) == 6000


@pytest.mark.parametrize("engine", ["python", "compiled"])
def test_an_event_that_cannot_be_written_becomes_its_reject(
    pipeline: Pipeline, engine: str
) -> None:
    """No parser makes such an event; the publisher still never drops one: an event whose
    key is not text (a lone surrogate) is rejected in its place, the others of the
    message are published, and the Delivery says what was written."""
    raw = to_bytes(s3_notification(s3_record(key="a.txt", sequencer="1")))
    good = normalize(raw, "test").events[0]
    bad = replace(good, key="bad-\ud800")
    last = replace(good, key="c.txt")
    publisher = EventPublisher(
        KafkaSettings(pipeline.bootstrap),
        Topics(pipeline.events, pipeline.rejected),
        engine=engine,
    )
    try:
        delivery = publisher.submit(ParseResult((good, bad, last)), raw, "test:1")
        publisher.flush()
    finally:
        publisher.close()
    first, letter, third = delivery.result.items
    assert (first, third) == (good, last)
    assert isinstance(letter, Rejection) and letter.record_index == 1
    assert letter.reason == "invalid_field" and "cannot be written" in letter.message
    assert delivery.complete and delivery.queued == 3
    assert publisher.counters.as_dict() == {"published": 2, "ignored": 0, "rejected": 1}
    assert sorted(p.event.key for p in published_events(pipeline)) == ["a.txt", "c.txt"]
    (dead,) = rejected_records(pipeline).values()
    assert dead.raw == raw and dead.record_index == 1 and dead.reason == "invalid_field"


def test_clean_documents_are_published_whole_and_the_rest_is_submitted(
    pipeline: Pipeline,
) -> None:
    """`publish_clean` (what `bridge file` does first with the compiled engine and no
    filter) queues a clean document's records itself, the same events as `submit` of its
    normalized result, and declines anything else, queuing nothing of it."""
    clean = to_bytes(s3_notification(s3_record(key="a.txt", sequencer="1")))
    test_event = to_bytes(s3_test_event())
    python = EventPublisher(
        KafkaSettings(pipeline.bootstrap), Topics(pipeline.events, pipeline.rejected)
    )
    compiled = EventPublisher(
        KafkaSettings(pipeline.bootstrap),
        Topics(pipeline.events, pipeline.rejected),
        engine="compiled",
    )
    try:
        assert not python.publish_clean(clean, "test:1", "2.1")  # the Python engine: never
        assert not compiled.publish_clean(test_event, "test:2", "2.1")
        assert compiled.publish_clean(clean, "test:3", "2.1")
        python.submit(normalize(clean, "test:3"), clean, "test:3")
        compiled.flush()
        python.flush()
    finally:
        compiled.close()
        python.close()
    assert compiled.counters.as_dict() == {"published": 1, "ignored": 0, "rejected": 0}
    events = published_events(pipeline)
    assert len(events) == 2 and events[0].event == events[1].event
    assert events[0].event.origin == "test:3"
