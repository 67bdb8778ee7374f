"""`seqgate reconcile` end to end (issue 21): moto's S3 sends notifications to SQS,
`seqgate bridge sqs` publishes them, a worker decides them; some notifications are lost on
purpose (deleted from the queue before the bridge reads them). Reconcile must report
exactly those objects, `--publish` must make the outbox complete, a second run must find
nothing, and an upload racing a repair must end with the newest version either way.

moto's notifications carry no sequencer (see tests/kafka/test_aws_end_to_end.py), so the
bridge runs with --allow-missing-sequencer and the worker decides them by the dedupe rule:
their latest accepted event is what reconcile reads, as it would be for Supabase or GCS.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote_plus

import pytest
from click.testing import CliRunner, Result

from seqgate.cli import cli
from seqgate.cli.reconcile import publish_repairs
from seqgate.connectors.listing.s3 import list_s3
from seqgate.schemas.listing import plain_etag
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.rules.policy import Policy
from seqgate.streams.tools.drift import DRIFTS, Drift, compare
from seqgate.streams.tools.reconcile import ReconcileTarget, committed_objects
from seqgate.streams.tools.verify import verify
from seqgate.streams.worker.config import WorkerConfig
from tests.support.environment import clean_env
from tests.support.kafka_helpers import (
    last_outbox_events,
    make_config,
    run_until_caught_up,
    verify_target,
)
from tests.support.moto_helpers import AWS_ENV, aws_client, moto_server
from tests.support.paths import REPO

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

DELIVERED = ["a.txt", "June report+final.csv", "café/ß.bin", "deleted", "overwritten"]
LOST = ["lost-1", "dir/lost 2+.csv"]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


@dataclass
class Setup:
    bootstrap: str
    endpoint: str
    bucket: str
    queue_url: str
    config: WorkerConfig
    rejected: str

    @property
    def s3(self) -> Any:
        return aws_client("s3", self.endpoint)

    @property
    def sqs(self) -> Any:
        return aws_client("sqs", self.endpoint)

    def put(self, key: str, body: bytes) -> str:
        return plain_etag(self.s3.put_object(Bucket=self.bucket, Key=key, Body=body)["ETag"]) or ""

    def deliver_except(self, lost: set[str]) -> int:
        """Take every notification off the queue; send back those not about a `lost` key
        (as if the others had never been delivered). Returns how many were lost."""
        bodies: list[str] = []
        while True:
            answer = self.sqs.receive_message(
                QueueUrl=self.queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
            )
            messages = answer.get("Messages", [])
            if not messages:
                break
            for message in messages:
                bodies.append(message["Body"])
                self.sqs.delete_message(
                    QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
                )
        dropped = 0
        for body in bodies:
            records = json.loads(body).get("Records", [])
            keys = {unquote_plus(r["s3"]["object"]["key"]) for r in records}
            if keys and keys <= lost:
                dropped += 1
            else:
                self.sqs.send_message(QueueUrl=self.queue_url, MessageBody=body)
        return dropped

    def bridge_and_process(self) -> None:
        """Drain the queue through `seqgate bridge sqs`, then let the worker catch up."""
        bridge = subprocess.run(
            [
                sys.executable, "-m", "seqgate.cli", "bridge", "sqs",
                "--queue-url", self.queue_url, "--endpoint-url", self.endpoint,
                "--bootstrap-servers", self.bootstrap,
                "--events-topic", self.config.input_topic,
                "--rejected-topic", self.rejected,
                "--wait-time-seconds", "0", "--idle-exit-seconds", "1",
                "--allow-missing-sequencer",
            ],
            capture_output=True, env=clean_env(AWS_ENV), cwd=REPO, timeout=120, check=False,
        )  # fmt: skip
        assert bridge.returncode == 0, bridge.stderr.decode("utf-8", "replace")
        self.process()

    def process(self) -> None:
        run_until_caught_up(self.config, "the worker to catch up")

    def reconcile(self, *options: str) -> tuple[Result, dict[str, Any]]:
        args = [
            "reconcile", "--bucket", self.bucket, "--endpoint-url", self.endpoint,
            "--bootstrap-servers", self.bootstrap,
            "--input-topic", self.config.input_topic,
            "--rejected-topic", self.rejected,
            "--application-id", self.config.application_id,
            "--grace-seconds", "0", "--json", *options,
        ]  # fmt: skip
        result = CliRunner(env=AWS_ENV).invoke(cli, args)
        assert result.exit_code in (0, 1), result.output
        return result, json.loads(result.stdout)

    def outbox_last(self) -> dict[str, ObjectEvent]:
        return last_outbox_events(self.bootstrap, self.config.outbox_topic)

    def target(self) -> ReconcileTarget:
        config = self.config
        return ReconcileTarget(
            config.kafka, config.application_id, config.input_topic, config.changelog_topic
        )


@pytest.fixture
def setup(kafka_bootstrap: str, endpoint: str, unique_name: str, tmp_path: Path) -> Setup:
    config = dataclasses.replace(
        make_config(kafka_bootstrap, unique_name, tmp_path, partitions=2),
        policy=Policy.build("aws", ["created", "removed"]),
    )
    s3, sqs = aws_client("s3", endpoint), aws_client("sqs", endpoint)
    bucket = unique_name.lower().replace("_", "-").replace(".", "-")[-50:].strip("-")
    s3.create_bucket(Bucket=bucket)
    queue_url = sqs.create_queue(QueueName=bucket)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=["QueueArn"])
    s3.put_bucket_notification_configuration(
        Bucket=bucket,
        NotificationConfiguration={
            "QueueConfigurations": [
                {
                    "QueueArn": arn["Attributes"]["QueueArn"],
                    "Events": ["s3:ObjectCreated:*", "s3:ObjectRemoved:*"],
                }
            ]
        },
    )
    return Setup(kafka_bootstrap, endpoint, bucket, queue_url, config, config.rejected_topic)


def test_reconcile_reports_exactly_the_lost_notifications_and_repairs_them(
    setup: Setup, capsys: pytest.CaptureFixture[str]
) -> None:
    etags = {key: setup.put(key, f"v1 of {key}".encode()) for key in DELIVERED + LOST}
    assert setup.deliver_except(set(LOST)) == len(LOST)
    setup.bridge_and_process()

    setup.s3.delete_object(Bucket=setup.bucket, Key="deleted")
    etags["overwritten"] = setup.put("overwritten", b"v2")
    assert setup.deliver_except({"deleted", "overwritten"}) == 2

    result, report = setup.reconcile()
    assert result.exit_code == 1
    found = {(f["key"], f["drift"]) for f in report["findings"]}
    assert found == {
        ("lost-1", "missing"),
        ("dir/lost 2+.csv", "missing"),
        ("deleted", "gone"),
        ("overwritten", "behind"),
    }
    assert report["counts"]["in_sync"] == 3 and report["published"] is None

    result, report = setup.reconcile("--publish")
    assert result.exit_code == 1 and report["published"] == 4
    setup.process()
    assert verify(verify_target(setup.config)).ok()
    last = setup.outbox_last()
    assert "deleted" in last and last["deleted"].kind == "removed"
    listed = {key: etag for key, etag in etags.items() if key != "deleted"}
    assert {key: plain_etag(last[key].etag) for key in listed} == listed

    result, report = setup.reconcile("--publish")
    assert result.exit_code == 0, report
    assert report["findings"] == [] and report["published"] == 0
    assert report["counts"]["in_sync"] == len(DELIVERED + LOST)
    with capsys.disabled():
        print(f"\nreconcile: listing {report['listing_per_second']} objects/s against moto")


def test_an_upload_racing_a_repair_ends_with_the_newest_version(setup: Setup) -> None:
    """`first` is repaired before its new version's notification is decided, `second`
    after: both end at v2, whichever came first."""
    for key in ("first", "second"):
        setup.put(key, b"v1")
    setup.deliver_except({"first", "second"})
    source, bucket = "s3", setup.bucket
    committed = committed_objects(setup.target(), source, bucket, "")
    findings = {
        f.key: f
        for f in compare(source, bucket, list_s3(bucket, client=setup.s3), committed,
                         now_ms=2**62, grace_ms=0)
    }  # fmt: skip
    assert {key: f.drift for key, f in findings.items()} == {
        "first": Drift.MISSING,
        "second": Drift.MISSING,
    }
    repairs = {key: f.repair for key, f in findings.items() if f.drift in DRIFTS}

    v2 = {key: setup.put(key, b"v2") for key in ("first", "second")}
    assert publish_repairs(setup.config.kafka, setup.config.input_topic, setup.rejected,
                           [r for k, r in repairs.items() if k == "first" and r]) == 1  # fmt: skip
    setup.bridge_and_process()  # first: repair decided, then v2's notification
    assert publish_repairs(setup.config.kafka, setup.config.input_topic, setup.rejected,
                           [r for k, r in repairs.items() if k == "second" and r]) == 1  # fmt: skip
    setup.process()  # second: v2's notification decided, then the repair (stale)

    last = setup.outbox_last()
    assert {key: plain_etag(last[key].etag) for key in v2} == v2
    assert last["first"].origin.startswith("sqs:") and last["second"].origin.startswith("sqs:")
    assert verify(verify_target(setup.config)).ok()


def test_a_bucket_that_cannot_be_listed_is_one_line_and_exit_2(setup: Setup) -> None:
    args = [
        "reconcile", "--bucket", f"{setup.bucket}-missing", "--endpoint-url", setup.endpoint,
        "--bootstrap-servers", setup.bootstrap, "--input-topic", setup.config.input_topic,
        "--application-id", setup.config.application_id,
    ]  # fmt: skip
    result = CliRunner(env=AWS_ENV).invoke(cli, args)
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: ") and f"{setup.bucket}-missing" in lines[-1], lines
    assert "Traceback" not in result.output
