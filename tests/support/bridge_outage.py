"""The bridges through a Kafka outage: HTTP answers 503, SQS deletes nothing, nothing is lost.

One scenario, two outages: the single broker killed and restarted
(tests/kafka/test_bridge_outage.py), and two of three cluster nodes down, below
``min.insync.replicas`` (tests/torture/test_cluster_faults.py). `seqgate bridge http` and
`seqgate bridge sqs` run as the operator runs them; notifications arrive before, during and
after the outage. While Kafka cannot take writes the HTTP bridge answers 503 (the sender
retries, as S3-family webhooks do) and the SQS bridge deletes nothing; each says so in one
warning line for the whole outage, not one per request or batch. After the outage every
notification is in the events topic exactly as the normalizer defines it: none missing, none
altered. Copies are allowed (at least once: a record Kafka took whose acknowledgement was
lost is published again) and are counted.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka.admin import AdminClient
from seqgate_devtools.samples import s3_notification, s3_record, to_text

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.sources.sqs_queue import queue_name
from seqgate.runtime.topics import create_topics, pipeline_topics
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.records import ObjectEvent
from tests.support.environment import clean_env
from tests.support.http_bridge import command as http_command
from tests.support.http_bridge import post_to
from tests.support.kafka_helpers import read_all, wait_for
from tests.support.moto_helpers import AWS_ENV, aws_client
from tests.support.paths import REPO
from tests.support.sqs_bridge import Setup
from tests.support.sqs_bridge import command as sqs_command
from tests.support.threads import sigterm_and_read_stdout

PER_PHASE = 20  # notifications per source before, during and after the outage
DELIVERY_TIMEOUT_MS = "2000"  # how long the bridges wait for Kafka before giving up
HTTP_REFUSING = "Kafka did not acknowledge the request"
SQS_REFUSING = "Kafka did not acknowledge the batch"
RECOVERED = "Kafka acknowledges the bridge's records again"
# One spell of refusals is one warning; a recovery that wavers (a request refused after
# another was taken) may start a second one. Twenty refused requests must not be twenty.
MOST_WARNINGS = 3


@dataclass(frozen=True)
class Outage:
    """How a test takes Kafka's writes away (``begin``) and gives them back (``end``, which
    returns the bootstrap list to use from then on)."""

    what: str
    bootstrap: str
    begin: Callable[[], None]
    end: Callable[[], str]
    replication_factor: int = 1


def body(key: str) -> bytes:
    record = s3_record(bucket="example-input", key=key, sequencer=f"{zlib.crc32(key.encode()):08X}")
    return to_text(s3_notification(record)).encode()


def expected_event(raw: bytes, origin: str) -> ObjectEvent:
    (event,) = normalize(raw, origin).events
    return event


def bridges_through_outage(outage: Outage, moto_endpoint: str, unique_name: str) -> str:
    """Run the scenario on topics named after ``unique_name``; the report line of what
    happened and how long it took."""
    bootstrap = outage.bootstrap
    specs = pipeline_topics(
        input_topic=f"{unique_name}.events",
        outbox_topic=f"{unique_name}.outbox",
        rejected_topic=f"{unique_name}.rejected",
        application_id=unique_name,
        partitions=3,
    )
    create_topics(AdminClient({"bootstrap.servers": bootstrap}), specs, outage.replication_factor)
    sqs = aws_client("sqs", moto_endpoint)
    queue_url = sqs.create_queue(QueueName=unique_name.replace(".", "-")[-80:])["QueueUrl"]
    setup = Setup(bootstrap, moto_endpoint, queue_url, "q", specs[0].name, specs[2].name)
    queue = Queue(sqs, queue_url)
    name = queue_name(queue_url)

    http_bodies: list[bytes] = []
    sqs_bodies: dict[str, bytes] = {}  # by SQS message id: the origin names it
    refused_while_down: list[bytes] = []

    def post(phase: str) -> list[tuple[bytes, int]]:
        """Post one phase's notifications concurrently, as a provider's senders do."""
        bodies = [body(f"http/{phase}/{n}.txt") for n in range(PER_PHASE)]
        http_bodies.extend(bodies)

        async def post_all() -> list[int]:
            return await asyncio.gather(*(post_to(f"{address}/s3", raw) for raw in bodies))

        return list(zip(bodies, asyncio.run(post_all()), strict=True))

    def send(phase: str) -> None:
        for n in range(PER_PHASE):
            raw = body(f"sqs/{phase}/{n}.txt")
            sent = sqs.send_message(QueueUrl=queue_url, MessageBody=raw.decode())
            sqs_bodies[sent["MessageId"]] = raw

    sqs_process = SqsBridge(
        sqs_command(
            setup,
            "--delivery-timeout-ms",
            DELIVERY_TIMEOUT_MS,
            "--visibility-timeout",
            "5",
            "--retry-backoff-ms",
            "200",
        )
    )
    try:
        with http_command(
            "--events-topic",
            setup.events,
            "--rejected-topic",
            setup.rejected,
            "--delivery-timeout-ms",
            DELIVERY_TIMEOUT_MS,
            bootstrap=bootstrap,
        ) as http_process:
            address = http_process.address()

            # Before: everything is acknowledged and deleted.
            assert {status for _, status in post("before")} == {200}
            send("before")
            wait_for(queue.empty, 60, "the SQS bridge to drain the queue before the outage")

            # During: 503 for every request, nothing deleted from the queue.
            outage.begin()
            began_at = time.monotonic()
            answers = post("during")
            refused_while_down = [raw for raw, status in answers if status == 503]
            assert {status for _, status in answers} == {503}, Counter(
                status for _, status in answers
            )
            send("during")
            wait_for(
                lambda: SQS_REFUSING in sqs_process.stderr(),
                60,
                "the SQS bridge to fail a flush while Kafka cannot take writes",
            )
            assert queue.count() == PER_PHASE, "a message was deleted while Kafka was down"

            # After: Kafka takes writes again; the sender retries what got 503.
            bootstrap = outage.end()
            down_s = time.monotonic() - began_at
            ended_at = time.monotonic()
            retried = retry_until_accepted(address, refused_while_down, 120)
            assert {status for _, status in post("after")} == {200}
            send("after")
            wait_for(queue.empty, 120, "the SQS bridge to drain the queue after the outage")
            recovered_s = time.monotonic() - ended_at
            http_status, http_summary, _ = http_process.stop()
        sqs_status, sqs_summary = sqs_process.stop()
    finally:
        sqs_process.kill()
    http_log, sqs_log = "".join(http_process.stderr), sqs_process.stderr()
    assert http_status == 0, http_log
    assert sqs_status == 0, sqs_log
    http_said = _warnings(http_log, HTTP_REFUSING)
    sqs_said = _warnings(sqs_log, SQS_REFUSING)
    assert 1 <= http_said <= MOST_WARNINGS, f"{http_said} warnings for one outage:\n{http_log}"
    assert 1 <= sqs_said <= MOST_WARNINGS, f"{sqs_said} warnings for one outage:\n{sqs_log}"
    assert RECOVERED in http_log and RECOVERED in sqs_log

    published = Counter(
        OBJECT_EVENT.decode(record.value) for record in read_all(bootstrap, setup.events)
    )
    expected = Counter(
        [expected_event(raw, "http:s3") for raw in http_bodies]
        + [expected_event(raw, f"sqs:{name}:{mid}") for mid, raw in sqs_bodies.items()]
    )
    assert len(expected) == 6 * PER_PHASE
    missing = expected.keys() - published.keys()
    unexpected = published.keys() - expected.keys()
    assert not missing, f"{len(missing)} notifications lost, e.g. {sorted(missing)[:3]}"
    assert not unexpected, f"{len(unexpected)} events nobody sent: {sorted(unexpected)[:3]}"
    copies = sum(published.values()) - len(expected)
    assert read_all(bootstrap, setup.rejected) == []
    assert http_summary["published"] == 3 * PER_PHASE
    assert sqs_summary["published"] == 3 * PER_PHASE
    assert sqs_summary["publish_failures"] >= 1
    return (
        f"{outage.what} for {down_s:.1f}s, all delivered {recovered_s:.1f}s after it ended;"
        f" http: {len(refused_while_down)} answered 503, accepted after {retried} retries,"
        f" {http_said} warning(s); sqs: {sqs_summary['publish_failures']} failed flushes,"
        f" nothing deleted while down, {sqs_said} warning(s); {len(expected)} notifications,"
        f" all in the events topic, {copies} extra copies"
    )


def _warnings(stderr: str, text: str) -> int:
    return sum(1 for line in stderr.splitlines() if text in line and "WARNING" in line.upper())


class Queue:
    def __init__(self, client: Any, url: str) -> None:
        self._client, self._url = client, url

    def count(self) -> int:
        """Messages not deleted, visible or not."""
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        attributes = self._client.get_queue_attributes(QueueUrl=self._url, AttributeNames=names)
        return sum(int(attributes["Attributes"][name]) for name in names)

    def empty(self) -> bool:
        return self.count() == 0


class SqsBridge:
    """`seqgate bridge sqs` as a subprocess; its stderr collected by a thread."""

    def __init__(self, argv: list[str]) -> None:
        self.popen = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=clean_env(AWS_ENV),
            cwd=REPO,
        )
        self._lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stderr is not None
        for line in self.popen.stderr:
            self._lines.append(line.decode("utf-8", "replace"))

    def stderr(self) -> str:
        return "".join(self._lines)

    def stop(self) -> tuple[int, dict[str, int]]:
        """SIGTERM; (exit status, JSON summary). ``stderr()`` is whole after it."""
        stdout = sigterm_and_read_stdout(self.popen, 60)
        self._reader.join(60)
        assert not self._reader.is_alive(), "the SQS bridge's stderr was not closed in 60s"
        return self.popen.returncode, json.loads(stdout) if stdout.strip() else {}

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait(30)


def retry_until_accepted(address: str, bodies: list[bytes], timeout: float) -> int:
    """Post each body until it is answered 200, as a webhook sender retries; the retries."""
    retries = 0
    deadline = time.monotonic() + timeout
    for raw in bodies:
        while asyncio.run(post_to(f"{address}/s3", raw)) != 200:
            retries += 1
            assert time.monotonic() < deadline, "Kafka never accepted the retried requests"
            time.sleep(0.5)  # the sender's retry interval, not a synchronization
    return retries
