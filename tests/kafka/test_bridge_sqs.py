"""`seqgate bridge sqs` against moto's SQS server on loopback and the real broker.

Each test runs the real command in its own process, then checks from outside:

* the events in the events topic (keyed by identity, in Java's murmur2 partition,
  origin ``sqs:<queue>:<message id>``) and the rejected records with the exact bodies;
* the queue afterwards: a message is gone only once its records are in Kafka
  (``ApproximateNumberOfMessages`` + ``…NotVisible`` count what was not deleted);
* a Kafka outage (an unreachable bootstrap address: the shared broker must keep
  serving other tests) deletes nothing, and the next run publishes everything once;
* SIGTERM finishes the batch in hand: no message is left received-but-not-deleted.
"""

from __future__ import annotations

import json
import signal
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from seqgate_devtools.samples import (
    eventbridge_event,
    s3_notification,
    s3_record,
    s3_test_event,
    sns_notification,
    to_text,
)

from seqgate.runtime.topics import create_topics, pipeline_topics
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.records import ObjectEvent, RejectedRecord
from seqgate.streams.tools.verify import verify
from tests.support.environment import clean_env
from tests.support.kafka_helpers import (
    caught_up,
    read_all,
    verify_target,
    wait_for,
    worker_config,
    worker_thread,
)
from tests.support.moto_helpers import AWS_ENV, moto_server
from tests.support.partitioning import java_partition
from tests.support.paths import REPO
from tests.support.sqs_bridge import Setup, command, sqs_client

pytestmark = pytest.mark.kafka

PARTITIONS = 3
MALFORMED = '{"Records": ['


@pytest.fixture(scope="module")
def sqs_endpoint() -> Iterator[str]:
    with moto_server() as endpoint:
        yield endpoint


@pytest.fixture
def setup(kafka_bootstrap: str, sqs_endpoint: str, unique_name: str) -> Setup:
    specs = pipeline_topics(
        input_topic=f"{unique_name}.object-events",
        outbox_topic=f"{unique_name}.object-events.outbox",
        rejected_topic=f"{unique_name}.object-events.rejected",
        application_id=f"{unique_name}-app",
        partitions=PARTITIONS,
    )
    create_topics(AdminClient({"bootstrap.servers": kafka_bootstrap}), specs)
    name = unique_name.replace(".", "-")[-80:]
    queue_url = sqs_client(sqs_endpoint).create_queue(
        QueueName=name, Attributes={"VisibilityTimeout": "30"}
    )["QueueUrl"]
    return Setup(kafka_bootstrap, sqs_endpoint, queue_url, name, specs[0].name, specs[2].name)


def run_bridge(
    setup: Setup, *options: str, bootstrap: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        command(setup, *options, bootstrap=bootstrap),
        capture_output=True,
        env=clean_env(AWS_ENV),
        cwd=REPO,
        timeout=timeout,
        check=False,
    )


def summary_of(done: subprocess.CompletedProcess[bytes], returncode: int = 0) -> dict[str, int]:
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == returncode, stderr
    assert "Traceback" not in stderr, stderr
    summary: dict[str, int] = json.loads(done.stdout)
    return summary


def published(setup: Setup) -> list[tuple[int, bytes, ObjectEvent]]:
    found = []
    for record in read_all(setup.bootstrap, setup.events):
        assert record.key is not None
        found.append((record.partition, record.key, OBJECT_EVENT.decode(record.value)))
    return found


def rejected_records(setup: Setup) -> list[RejectedRecord]:
    return [
        REJECTED_RECORD.decode(record.value) for record in read_all(setup.bootstrap, setup.rejected)
    ]


def put(key: str, sequencer: str = "1", bucket: str = "example-input") -> str:
    return to_text(s3_notification(s3_record(bucket=bucket, key=key, sequencer=sequencer)))


# ---- every form of body --------------------------------------------------------------------------


def test_every_body_form_is_published_and_the_queue_emptied(setup: Setup) -> None:
    bodies = {
        "native": put("native%2Fa+b.txt", "a1"),
        "sns": to_text(sns_notification(put("via-sns.txt", "b2"))),
        "eventbridge": to_text(eventbridge_event(key="from eventbridge.txt", sequencer="c3")),
        "malformed": MALFORMED,
        "test-event": to_text(s3_test_event()),
        "multi": to_text(
            s3_notification(
                s3_record(key="multi-ok.txt", sequencer="d4"),
                s3_record(key="multi-bad.txt", sequencer="d5", event_version="3.0"),
            )
        ),
        "generated": put("generated%2Fout.csv", "e5"),
        "other-bucket": put("elsewhere.txt", "f6", bucket="not-ours"),
    }
    names = list(bodies)
    ids = dict(zip(names, setup.send(*bodies.values()), strict=True))

    done = run_bridge(
        setup,
        "--max-messages",
        str(len(bodies)),
        "--exclude-prefix",
        "generated/",
        "--bucket",
        "example-input",
    )

    summary = summary_of(done)
    assert summary == {
        "messages": 8,
        "published": 4,
        "filtered": 2,
        "ignored": 1,
        "rejected": 2,
        "publish_failures": 0,
        "receive_failures": 0,
        "delete_failures": 0,
    }
    assert setup.queue_counts() == (0, 0)

    def origin(name: str) -> str:
        return f"sqs:{setup.queue_name}:{ids[name]}"

    events = published(setup)
    assert sorted((event.key, event.origin) for _, _, event in events) == sorted(
        [
            ("native/a b.txt", origin("native")),
            ("via-sns.txt", origin("sns")),
            ("from eventbridge.txt", origin("eventbridge")),
            ("multi-ok.txt", origin("multi")),
        ]
    )
    for partition, key, event in events:
        assert key == f"s3://{event.bucket}/{event.key}".encode()
        assert partition == java_partition(key, PARTITIONS)

    letters = {(letter.origin, letter.record_index): letter for letter in rejected_records(setup)}
    assert set(letters) == {(origin("malformed"), None), (origin("multi"), 1)}
    assert letters[(origin("malformed"), None)].raw == MALFORMED.encode()
    assert letters[(origin("malformed"), None)].reason == "malformed_json"
    assert letters[(origin("multi"), 1)].raw == bodies["multi"].encode()
    assert letters[(origin("multi"), 1)].reason == "unsupported_schema_version"


def test_a_missing_queue_is_one_error_line(setup: Setup) -> None:
    missing = Setup(
        setup.bootstrap,
        setup.endpoint,
        setup.queue_url + "-missing",
        setup.queue_name + "-missing",
        setup.events,
        setup.rejected,
    )
    done = run_bridge(missing, timeout=60)
    stderr = done.stderr.decode("utf-8", "replace").splitlines()
    assert done.returncode == 2, stderr
    assert len(stderr) == 1 and stderr[0].startswith("error: SQS refused"), stderr
    assert "NonExistentQueue" in stderr[0]


# ---- Kafka outage --------------------------------------------------------------------------------


def test_a_kafka_outage_deletes_nothing_and_loses_nothing(setup: Setup) -> None:
    bodies = [put(f"outage/{n}.txt", f"{n + 1:x}") for n in range(9)] + [MALFORMED]
    ids = setup.send_many(bodies)

    # Kafka refuses every record (topics it does not have; a broker outage is the same to
    # the bridge, see tests/kafka/test_bridge_outage.py): the poller receives the batch, the flush
    # fails, nothing is deleted. The long visibility timeout makes the queue look empty
    # afterwards, so it idles out.
    down = run_bridge(
        setup,
        "--events-topic",
        f"{setup.events}.absent",
        "--rejected-topic",
        f"{setup.events}.absent-rejected",
        "--delivery-timeout-ms",
        "1000",
        "--retry-backoff-ms",
        "100",
        "--visibility-timeout",
        "8",
        "--idle-exit-seconds",
        "2",
        timeout=90,
    )
    summary = summary_of(down, returncode=1)
    assert summary["messages"] == 0 and summary["published"] == 0
    assert summary["publish_failures"] >= 1
    assert "left in the queue" in down.stderr.decode()
    visible, hidden = setup.queue_counts()
    assert visible + hidden == len(bodies)  # not one deleted

    # Kafka back: the redelivered messages (after the visibility timeout) all go through.
    up = run_bridge(setup, "--max-messages", str(len(bodies)), timeout=120)
    summary = summary_of(up)
    assert summary["messages"] == len(bodies)
    assert (summary["published"], summary["rejected"]) == (9, 1)
    assert setup.queue_counts() == (0, 0)
    origins = Counter(event.origin for _, _, event in published(setup))
    assert origins == Counter(f"sqs:{setup.queue_name}:{i}" for i in ids[:9])
    letters = rejected_records(setup)
    assert [(letter.origin, letter.raw) for letter in letters] == [
        (f"sqs:{setup.queue_name}:{ids[9]}", MALFORMED.encode())
    ]


# ---- shutdown ------------------------------------------------------------------------------------


def test_sigterm_finishes_the_batch_in_hand(setup: Setup) -> None:
    total = 300
    ids = setup.send_many([put(f"drain/{n}.txt") for n in range(total)])
    process = subprocess.Popen(
        command(setup, "--receive-batch-size", "10"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(AWS_ENV),
        cwd=REPO,
    )
    try:
        wait_for(lambda: sum(setup.queue_counts()) < total, 60, "the first deletion")
        process.send_signal(signal.SIGTERM)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert process.returncode == 0, stderr.decode("utf-8", "replace")
    summary = json.loads(stdout)
    deleted = summary["messages"]
    assert 0 < deleted <= total
    # Nothing received and then abandoned: every message is deleted or was never taken.
    assert setup.queue_counts() == (total - deleted, 0)
    origins = Counter(event.origin for _, _, event in published(setup))
    assert len(origins) == deleted and set(origins.values()) == {1}
    assert set(origins) <= {f"sqs:{setup.queue_name}:{i}" for i in ids}


def test_the_idle_exit_stops_an_empty_poll(setup: Setup) -> None:
    done = run_bridge(setup, "--idle-exit-seconds", "1", timeout=60)
    assert summary_of(done)["messages"] == 0


# ---- through the worker ------------------------------------------------------------------------


def test_sqs_notifications_reach_the_outbox_through_the_worker(
    setup: Setup, tmp_path: Path
) -> None:
    setup.send(
        put("doc.txt", "a1"),
        to_text(sns_notification(put("doc.txt", "a1"))),  # the same write, redelivered via SNS
        put("doc.txt", "b2"),
        put("other.txt", "01"),
    )
    summary_of(run_bridge(setup, "--max-messages", "4"))
    config = worker_config(setup.bootstrap, setup.events, tmp_path)
    with worker_thread(config) as running:
        wait_for(caught_up(setup.bootstrap, config), 60, "the worker to catch up")
    assert not running.errors
    outbox = [
        OUTBOX_RECORD.decode(r.value or b"") for r in read_all(setup.bootstrap, config.outbox_topic)
    ]
    assert sorted((r.event.key, r.event.position) for r in outbox) == [
        ("doc.txt", "a1"),
        ("doc.txt", "b2"),
        ("other.txt", "01"),
    ]
    assert verify(verify_target(config)).ok()
