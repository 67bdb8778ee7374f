"""`seqgate bridge kafka --from TOPIC` against a real broker.

Each test produces raw notifications to a source topic, runs the real command in
its own process, and checks from outside: the events (read_committed) keyed by
identity in Java's murmur2 partition with origin ``kafka:<topic>:<partition>:<offset>``,
the rejected records with the exact raw bytes, the group's committed offsets at the
end of the source topic, and exactly-once across a crash injected inside the
transaction (SEQGATE_FAULT: the process SIGKILLs itself) followed by a restart.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Message, Producer
from confluent_kafka.admin import AdminClient
from seqgate_devtools.samples import (
    eventbridge_event,
    s3_notification,
    s3_record,
    s3_test_event,
    to_bytes,
)

from seqgate.connectors.publish.rejections import MAX_RAW_BYTES
from seqgate.runtime.topics import TopicSpec, create_topics, pipeline_topics
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.tools.verify import verify
from tests.support import kafka_helpers
from tests.support.environment import clean_env
from tests.support.kafka_helpers import (
    committed_offsets,
    end_offsets,
    read_all,
    verify_target,
    wait_for,
    worker_config,
    worker_thread,
)
from tests.support.partitioning import java_partition
from tests.support.paths import REPO

pytestmark = pytest.mark.kafka

PARTITIONS = 3
MALFORMED = b'{"Records": ['


@dataclass(frozen=True)
class Setup:
    bootstrap: str
    source: str
    events: str
    rejected: str
    group: str
    transactional_id: str


@pytest.fixture
def setup(kafka_bootstrap: str, unique_name: str) -> Setup:
    specs = pipeline_topics(
        input_topic=f"{unique_name}.object-events",
        outbox_topic=f"{unique_name}.object-events.outbox",
        rejected_topic=f"{unique_name}.object-events.rejected",
        application_id=f"{unique_name}-app",
        partitions=PARTITIONS,
    )
    source = TopicSpec(f"{unique_name}.raw", PARTITIONS)
    create_topics(AdminClient({"bootstrap.servers": kafka_bootstrap}), [*specs, source])
    return Setup(
        kafka_bootstrap,
        source.name,
        specs[0].name,
        specs[2].name,
        f"{unique_name}-bridge",
        f"{unique_name}-bridge-1",
    )


def produce_raw(setup: Setup, values: list[bytes]) -> list[str]:
    """Produce the values (spread over the partitions); the origin of each, in order."""
    producer = Producer(
        {
            "bootstrap.servers": setup.bootstrap,
            "enable.idempotence": True,
            "message.max.bytes": 1_048_576,  # as large as the broker's default topic limit
        }
    )
    origins: dict[int, str] = {}

    def delivered(n: int) -> object:
        def report(error: KafkaError | None, message: Message) -> None:
            assert error is None, error
            origins[n] = f"kafka:{setup.source}:{message.partition()}:{message.offset()}"

        return report

    for n, value in enumerate(values):
        producer.produce(
            setup.source, value=value, partition=n % PARTITIONS, on_delivery=delivered(n)
        )
    assert producer.flush(60) == 0
    return [origins[n] for n in range(len(values))]


def command(setup: Setup, *options: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "seqgate.cli",
        "bridge",
        "kafka",
        "--from",
        setup.source,
        "--bootstrap-servers",
        setup.bootstrap,
        "--events-topic",
        setup.events,
        "--rejected-topic",
        setup.rejected,
        "--group-id",
        setup.group,
        "--transactional-id",
        setup.transactional_id,
        *options,
    ]


def start(
    setup: Setup, *options: str, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        command(setup, *options),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(env),
        cwd=REPO,
    )


def finish(process: subprocess.Popen[bytes], timeout: float = 60) -> tuple[int, bytes, bytes]:
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    return process.returncode, stdout, stderr


def caught_up(setup: Setup) -> bool:
    ends = end_offsets(setup.bootstrap, setup.source)
    try:
        done = committed_offsets(setup.bootstrap, setup.group, setup.source)
    except KafkaException as error:
        if error.args[0].retriable() or error.args[0].code() == KafkaError.NOT_COORDINATOR:
            return False
        raise
    return all(done.get(p, -1) == end for p, end in ends.items() if end > 0)


def stop_when_caught_up(setup: Setup, process: subprocess.Popen[bytes]) -> dict[str, int]:
    try:
        wait_for(lambda: caught_up(setup) or process.poll() is not None, 120, "the bridge")
        assert process.poll() is None, process.communicate()[1].decode("utf-8", "replace")
        process.send_signal(signal.SIGTERM)
    finally:
        returncode, stdout, stderr = finish(process)
    text = stderr.decode("utf-8", "replace")
    assert returncode == 0, text
    assert "Traceback" not in text, text
    summary: dict[str, int] = json.loads(stdout)
    return summary


def events_of(setup: Setup, *, committed_only: bool = True) -> list[tuple[int, bytes, ObjectEvent]]:
    found = []
    for record in read_all(setup.bootstrap, setup.events, committed_only=committed_only):
        assert record.key is not None
        found.append((record.partition, record.key, OBJECT_EVENT.decode(record.value)))
    return found


def put(key: str, sequencer: str = "1") -> bytes:
    return to_bytes(s3_notification(s3_record(key=key, sequencer=sequencer)))


# ---- content -------------------------------------------------------------------------------------


def test_raw_notifications_are_normalized_rekeyed_and_rejected(setup: Setup) -> None:
    multi = to_bytes(
        s3_notification(
            s3_record(key="multi-ok.txt", sequencer="d4"),
            s3_record(key="multi-bad.txt", sequencer="d5", event_version="3.0"),
        )
    )
    values = [
        put("native%2Fa+b.txt", "a1"),
        to_bytes(eventbridge_event(key="from eventbridge.txt", sequencer="c3")),
        MALFORMED,
        to_bytes(s3_test_event()),
        multi,
        put("generated%2Fout.csv", "e5"),
        *(put(f"many%2F{n}.txt", f"{n + 1:x}") for n in range(20)),
    ]
    origins = produce_raw(setup, values)

    summary = stop_when_caught_up(
        setup, start(setup, "--exclude-prefix", "generated/", "--batch-size", "7")
    )

    assert summary["messages"] == len(values)
    assert (summary["published"], summary["filtered"]) == (23, 1)
    assert (summary["ignored"], summary["rejected"]) == (1, 2)
    events = events_of(setup)
    expected = [
        ("native/a b.txt", origins[0]),
        ("from eventbridge.txt", origins[1]),
        ("multi-ok.txt", origins[4]),
        *((f"many/{n}.txt", origins[6 + n]) for n in range(20)),
    ]
    assert sorted((event.key, event.origin) for _, _, event in events) == sorted(expected)
    for partition, key, event in events:
        assert key == f"s3://{event.bucket}/{event.key}".encode()
        assert partition == java_partition(key, PARTITIONS)

    letters = {}
    for record in read_all(setup.bootstrap, setup.rejected):
        letter = REJECTED_RECORD.decode(record.value)
        letters[(letter.origin, letter.record_index)] = letter
    assert set(letters) == {(origins[2], None), (origins[4], 1)}
    assert letters[(origins[2], None)].raw == MALFORMED
    assert letters[(origins[2], None)].reason == "malformed_json"
    assert letters[(origins[4], 1)].raw == multi
    assert letters[(origins[4], 1)].reason == "unsupported_schema_version"

    assert committed_offsets(setup.bootstrap, setup.group, setup.source) == end_offsets(
        setup.bootstrap, setup.source
    )


def test_a_source_record_too_large_to_copy_whole_is_rejected_with_its_start(
    setup: Setup,
) -> None:
    """A 1,020,000-byte malformed record (the source topic took it): copied whole, its dead
    letter would be above the producer's message.max.bytes, and the transaction that holds it
    would abort forever. Its rejected record keeps the first MAX_RAW_BYTES and their count."""
    big = b"[" + b" " * 1_020_000
    origins = produce_raw(setup, [big, put("after-big.txt")])
    summary = stop_when_caught_up(setup, start(setup))
    assert (summary["rejected"], summary["published"]) == (1, 1)
    [record] = read_all(setup.bootstrap, setup.rejected)
    letter = REJECTED_RECORD.decode(record.value)
    assert (letter.origin, letter.reason) == (origins[0], "malformed_json")
    assert letter.raw == big[:MAX_RAW_BYTES]
    assert f"of the {len(big)} bytes received; SHA-256" in letter.message
    assert [event.key for _, _, event in events_of(setup)] == ["after-big.txt"]


def test_the_idle_exit_stops_after_the_topic_is_drained(setup: Setup) -> None:
    origins = produce_raw(setup, [put(f"idle/{n}") for n in range(10)])
    returncode, stdout, stderr = finish(start(setup, "--idle-exit-seconds", "2"), timeout=120)
    assert returncode == 0, stderr.decode("utf-8", "replace")
    assert json.loads(stdout)["published"] == 10
    assert sorted(event.origin for _, _, event in events_of(setup)) == sorted(origins)
    assert caught_up(setup)


# ---- exactly once across a crash -----------------------------------------------------------------


@pytest.mark.parametrize("point", ["before_commit", "after_commit"])
def test_a_crash_inside_the_transaction_neither_loses_nor_duplicates(
    setup: Setup, point: str
) -> None:
    values = [put(f"crash/{n}.txt", f"{n + 1:x}") for n in range(90)]
    values[40] = MALFORMED
    origins = produce_raw(setup, values)

    # Killed (SIGKILL, by itself) at `point` of its fourth transaction.
    crashed = start(setup, "--batch-size", "5", env={"SEQGATE_FAULT": f"kill:{point}:3"})
    returncode, _, stderr = finish(crashed, timeout=120)
    assert returncode == -signal.SIGKILL, stderr.decode("utf-8", "replace")
    assert not caught_up(setup)

    # Restarted: it fences the dead incarnation (aborting its open transaction) and resumes
    # from the committed offsets: at most 4 batches of 5 were committed before the kill.
    summary = stop_when_caught_up(setup, start(setup, "--batch-size", "5"))
    assert len(values) - 20 <= summary["messages"] < len(values)

    committed = Counter(event.origin for _, _, event in events_of(setup))
    assert committed == Counter(origin for n, origin in enumerate(origins) if n != 40)
    letters = [REJECTED_RECORD.decode(r.value) for r in read_all(setup.bootstrap, setup.rejected)]
    assert [(letter.origin, letter.raw) for letter in letters] == [(origins[40], MALFORMED)]
    everything = events_of(setup, committed_only=False)
    if point == "before_commit":
        # The killed transaction's records are in the log, aborted: read_committed skips them.
        assert len(everything) > len(committed)
    else:
        assert len(everything) == len(committed) == 89


# ---- through the worker ------------------------------------------------------------------------


def test_raw_topic_notifications_reach_the_outbox_through_the_worker(
    setup: Setup, tmp_path: Path
) -> None:
    # One raw message, so the three deliveries keep their order across the bridge.
    deliveries = [s3_record(key="doc.txt", sequencer=s) for s in ("a1", "a1", "b2")]
    produce_raw(setup, [to_bytes(s3_notification(*deliveries))])
    stop_when_caught_up(setup, start(setup))
    config = worker_config(setup.bootstrap, setup.events, tmp_path)
    with worker_thread(config) as running:
        wait_for(kafka_helpers.caught_up(setup.bootstrap, config), 60, "the worker to catch up")
    assert not running.errors
    records = read_all(setup.bootstrap, config.outbox_topic)
    outbox = [OUTBOX_RECORD.decode(r.value or b"") for r in records]
    assert [(r.event.key, r.event.position) for r in outbox] == [
        ("doc.txt", "a1"),
        ("doc.txt", "b2"),
    ]
    assert verify(verify_target(config)).ok()


def test_topics_create_makes_the_source_topic_idempotently(
    kafka_bootstrap: str, unique_name: str
) -> None:
    argv = [
        sys.executable,
        "-m",
        "seqgate.cli",
        "topics",
        "create",
        "--bootstrap-servers",
        kafka_bootstrap,
        "--input-topic",
        f"{unique_name}.oe",
        "--outbox-topic",
        f"{unique_name}.oe.outbox",
        "--rejected-topic",
        f"{unique_name}.oe.rejected",
        "--application-id",
        f"{unique_name}-app",
        "--partitions",
        "2",
        "--source-topic",
        f"{unique_name}.minio-events",
    ]
    for expected in ("created", "exists"):
        done = subprocess.run(argv, capture_output=True, env=clean_env(), cwd=REPO, check=False)
        assert done.returncode == 0, done.stderr.decode()
        lines = dict(line.split("\t") for line in done.stdout.decode().splitlines())
        assert lines[f"{unique_name}.minio-events"] == expected
    metadata = AdminClient({"bootstrap.servers": kafka_bootstrap}).list_topics(timeout=30)
    assert len(metadata.topics[f"{unique_name}.minio-events"].partitions) == 2
