"""S3 notifications end to end: `seqgate aws configure-notifications` on moto's S3, real
uploads, `seqgate bridge sqs`, a worker on the real broker, and the outbox.

moto (5.2) is not Amazon S3. Every difference these tests meet is asserted where it
shows, with a comment, rather than hidden by a looser assertion:

* native records carry no ``sequencer`` (AWS always sends one for created and removed
  events), so the bridge needs ``--allow-missing-sequencer`` and the events are
  position-less (dedupe-only); nor ``versionId``, even in a versioned bucket;
* completing a multipart upload sends ``ObjectCreated:Put`` and then
  ``ObjectCreated:CompleteMultipartUpload`` (AWS: only the latter);
* deleting a key of a versioned bucket (a delete marker) sends nothing (AWS:
  ``ObjectRemoved:DeleteMarkerCreated``); removing its last version sends
  ``ObjectRemoved:Delete`` without ``versionId``;
* an ``s3:TestEvent`` goes to every queue and topic of the configuration on each write
  of it (the bridge ignores it);
* EventBridge events have a constant ``sequencer`` and a constant ``id``, and a plain
  upload also sends ``Object Tags Added``; but they do carry ``version-id``;
* GetBucketNotificationConfiguration never returns ``EventBridgeConfiguration``, and
  moto accepts overlapping rules and destinations that do not exist (AWS refuses both).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from confluent_kafka.admin import AdminClient

from seqgate.cli import cli
from seqgate.connectors.aws.notification_rules import CREATED_FAMILY
from seqgate.runtime.topics import create_topics, pipeline_topics
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.records import ObjectEvent, OutboxRecord, RejectedRecord
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
from tests.support.moto_helpers import AWS_ENV, aws_client, moto_server
from tests.support.paths import REPO

pytestmark = pytest.mark.kafka

MATCHING = "incoming/June report+final.csv"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


@dataclass(frozen=True)
class Pipeline:
    bootstrap: str
    endpoint: str
    name: str
    events: str
    rejected: str

    def client(self, service: str) -> Any:
        return aws_client(service, self.endpoint)

    def queue(self, suffix: str) -> tuple[str, str]:
        """A new queue: (url, arn)."""
        sqs = self.client("sqs")
        url = sqs.create_queue(QueueName=f"{self.name[-60:]}-{suffix}")["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
        return url, arn["Attributes"]["QueueArn"]

    def bucket(self, versioned: bool = True) -> str:
        name = self.name.lower().replace("_", "-").replace(".", "-")[-50:].strip("-")
        s3 = self.client("s3")
        s3.create_bucket(Bucket=name)
        if versioned:
            s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
        return name

    def configure(self, bucket: str, destination: str, *options: str) -> Any:
        return CliRunner(env=AWS_ENV).invoke(
            cli,
            [
                "aws",
                "configure-notifications",
                "--bucket",
                bucket,
                "--destination",
                destination,
                "--endpoint-url",
                self.endpoint,
                *options,
            ],
        )

    def bridge(self, queue_url: str, *options: str) -> subprocess.Popen[bytes]:
        """`seqgate bridge sqs` draining ``queue_url`` (exits once it is idle)."""
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "seqgate.cli",
                "bridge",
                "sqs",
                "--queue-url",
                queue_url,
                "--endpoint-url",
                self.endpoint,
                "--bootstrap-servers",
                self.bootstrap,
                "--events-topic",
                self.events,
                "--rejected-topic",
                self.rejected,
                "--wait-time-seconds",
                "1",
                "--idle-exit-seconds",
                "1",
                *options,
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=clean_env(AWS_ENV),
            cwd=REPO,
        )

    def published(self) -> list[ObjectEvent]:
        return [OBJECT_EVENT.decode(r.value or b"") for r in read_all(self.bootstrap, self.events)]

    def rejected_records(self) -> list[RejectedRecord]:
        return [
            REJECTED_RECORD.decode(r.value or b"") for r in read_all(self.bootstrap, self.rejected)
        ]

    def outbox(self, tmp_path: Path) -> list[OutboxRecord]:
        config = worker_config(self.bootstrap, self.events, tmp_path)
        with worker_thread(config) as running:
            wait_for(caught_up(self.bootstrap, config), 60, "the worker to catch up")
        assert not running.errors
        assert verify(verify_target(config)).ok()
        return [
            OUTBOX_RECORD.decode(r.value or b"")
            for r in read_all(self.bootstrap, config.outbox_topic)
        ]


@pytest.fixture
def pipeline(kafka_bootstrap: str, endpoint: str, unique_name: str) -> Pipeline:
    specs = pipeline_topics(
        input_topic=f"{unique_name}.object-events",
        outbox_topic=f"{unique_name}.object-events.outbox",
        rejected_topic=f"{unique_name}.object-events.rejected",
        application_id=f"{unique_name}-app",
        partitions=2,
    )
    create_topics(AdminClient({"bootstrap.servers": kafka_bootstrap}), specs)
    return Pipeline(kafka_bootstrap, endpoint, unique_name, specs[0].name, specs[2].name)


def finished(*bridges: subprocess.Popen[bytes]) -> list[dict[str, int]]:
    summaries = []
    for process in bridges:
        stdout, stderr = process.communicate(timeout=90)
        assert process.returncode == 0, stderr.decode("utf-8", "replace")
        summaries.append(json.loads(stdout))
    return summaries


def rules(pipeline: Pipeline, bucket: str) -> list[dict[str, Any]]:
    answer = pipeline.client("s3").get_bucket_notification_configuration(Bucket=bucket)
    return [*answer.get("QueueConfigurations", []), *answer.get("TopicConfigurations", [])]


def visible_messages(pipeline: Pipeline, queue_url: str) -> int:
    attributes = pipeline.client("sqs").get_queue_attributes(
        QueueUrl=queue_url, AttributeNames=["ApproximateNumberOfMessages"]
    )
    return int(attributes["Attributes"]["ApproximateNumberOfMessages"])


# ---- S3 -> SQS -----------------------------------------------------------------------------------


def test_configured_uploads_reach_the_outbox_and_other_rules_survive(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    s3 = pipeline.client("s3")
    bucket = pipeline.bucket()
    queue_url, queue_arn = pipeline.queue("events")
    other_url, other_arn = pipeline.queue("other")
    unrelated = {
        "Id": "someone-elses-rule",
        "QueueArn": other_arn,
        "Events": ["s3:ObjectCreated:*"],
        "Filter": {"Key": {"FilterRules": [{"Name": "prefix", "Value": "other/"}]}},
    }
    s3.put_bucket_notification_configuration(
        Bucket=bucket, NotificationConfiguration={"QueueConfigurations": [unrelated]}
    )

    options = ("--prefix", "incoming/", "--events", CREATED_FAMILY)
    options += ("--events", "s3:ObjectRemoved:*", "--output-prefix", "processed/")
    done = pipeline.configure(bucket, queue_arn, *options)
    assert done.exit_code == 0, done.output
    again = pipeline.configure(bucket, queue_arn, *options)
    assert again.exit_code == 0 and again.stdout.startswith("already configured"), again.output
    # moto would accept an overlapping rule; the command refuses it before writing.
    overlap = pipeline.configure(bucket, queue_arn, "--prefix", "incoming/2026/")
    assert overlap.exit_code == 2 and "overlaps the existing rule" in overlap.output
    assert [rule["Id"] for rule in rules(pipeline, bucket)] == [
        "someone-elses-rule",
        "seqgate-" + done.stdout.split("'seqgate-")[1].split("'")[0],
    ]

    first = s3.put_object(Bucket=bucket, Key=MATCHING, Body=b"v1")
    second = s3.put_object(Bucket=bucket, Key=MATCHING, Body=b"v2 (overwrite)")
    s3.put_object(Bucket=bucket, Key="elsewhere/excluded.csv", Body=b"x")
    s3.put_object(Bucket=bucket, Key="other/theirs.csv", Body=b"x")
    upload = s3.create_multipart_upload(Bucket=bucket, Key="incoming/big.bin")
    part = s3.upload_part(
        Bucket=bucket,
        Key="incoming/big.bin",
        UploadId=upload["UploadId"],
        PartNumber=1,
        Body=b"z" * 1024,
    )
    s3.complete_multipart_upload(
        Bucket=bucket,
        Key="incoming/big.bin",
        UploadId=upload["UploadId"],
        MultipartUpload={"Parts": [{"ETag": part["ETag"], "PartNumber": 1}]},
    )
    gone = s3.put_object(Bucket=bucket, Key="incoming/gone.txt", Body=b"x")
    s3.delete_object(Bucket=bucket, Key="incoming/gone.txt", VersionId=gone["VersionId"])
    marked = s3.put_object(Bucket=bucket, Key="incoming/marked.txt", Body=b"y")
    s3.delete_object(Bucket=bucket, Key="incoming/marked.txt")  # a delete marker

    # S3 delivers at least once: deliver one notification a second time.
    sqs = pipeline.client("sqs")
    wait_for(lambda: visible_messages(pipeline, queue_url) >= 8, 10, "the notifications")
    received = sqs.receive_message(QueueUrl=queue_url, MaxNumberOfMessages=10)["Messages"]
    first_put = next(m["Body"] for m in received if "June+report" in m["Body"])
    for message in received:
        sqs.change_message_visibility(
            QueueUrl=queue_url, ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
        )
    sqs.send_message(QueueUrl=queue_url, MessageBody=first_put)

    (summary,) = finished(pipeline.bridge(queue_url, "--allow-missing-sequencer"))
    # 1 test event + 2 puts + 2 multipart (moto's extra Put) + 2 for gone.txt + 1 for
    # marked.txt's put (its delete marker sends nothing in moto) + the redelivery.
    assert (summary["messages"], summary["ignored"], summary["rejected"]) == (9, 1, 0)
    events = pipeline.published()
    assert all(event.position is None for event in events)  # moto sends no sequencer
    assert all(event.version_id is None for event in events)  # nor versionId
    assert sorted((e.key, e.event_name) for e in events) == sorted(
        [
            (MATCHING, "ObjectCreated:Put"),
            (MATCHING, "ObjectCreated:Put"),
            (MATCHING, "ObjectCreated:Put"),  # the redelivery
            ("incoming/big.bin", "ObjectCreated:Put"),  # moto only
            ("incoming/big.bin", "ObjectCreated:CompleteMultipartUpload"),
            ("incoming/gone.txt", "ObjectCreated:Put"),
            ("incoming/gone.txt", "ObjectRemoved:Delete"),
            ("incoming/marked.txt", "ObjectCreated:Put"),
        ]
    )

    outbox = pipeline.outbox(tmp_path)
    by_key: dict[str, list[str]] = {}
    for record in outbox:
        by_key.setdefault(record.event.key, []).append(record.event.etag or "")
    # Both writes of MATCHING, in order, the redelivery dropped (same id: dedupe-only).
    assert by_key.pop(MATCHING) == [first["ETag"].strip('"'), second["ETag"].strip('"')]
    # moto's two multipart events differ only by event time: one or two records,
    # depending on whether they fell in the same millisecond (AWS sends one event).
    assert 1 <= len(by_key.pop("incoming/big.bin")) <= 2
    # gone.txt's removal is published but not admitted by the default policy (created only).
    assert by_key == {
        "incoming/gone.txt": [gone["ETag"].strip('"')],
        "incoming/marked.txt": [marked["ETag"].strip('"')],
    }
    assert not any(record.event.key.startswith("elsewhere/") for record in outbox)
    assert not any(record.event.key.startswith("other/") for record in outbox)

    # The unrelated rule is still in place, and still delivers to its own queue.
    assert unrelated in rules(pipeline, bucket)
    theirs = sqs.receive_message(QueueUrl=other_url, MaxNumberOfMessages=10)["Messages"]
    assert any("other%2Ftheirs.csv" in message["Body"] for message in theirs)


def test_default_bridge_rejects_moto_records_without_sequencer(pipeline: Pipeline) -> None:
    bucket = pipeline.bucket(versioned=False)
    queue_url, queue_arn = pipeline.queue("strict")
    assert pipeline.configure(bucket, queue_arn, "--prefix", "incoming/").exit_code == 0
    pipeline.client("s3").put_object(Bucket=bucket, Key="incoming/a.csv", Body=b"x")
    wait_for(lambda: visible_messages(pipeline, queue_url) == 2, 10, "the notification")

    (summary,) = finished(pipeline.bridge(queue_url))
    assert (summary["published"], summary["ignored"], summary["rejected"]) == (0, 1, 1)
    (letter,) = pipeline.rejected_records()
    assert letter.reason == "invalid_sequencer"
    assert "--allow-missing-sequencer" in letter.message
    assert b"incoming%2Fa.csv" in letter.raw


# ---- EventBridge ---------------------------------------------------------------------------------


def test_eventbridge_keeps_the_rules_and_carries_the_version_id(
    pipeline: Pipeline, tmp_path: Path
) -> None:
    s3 = pipeline.client("s3")
    bucket = pipeline.bucket()
    _, queue_arn = pipeline.queue("rule")
    target_url, target_arn = pipeline.queue("eventbridge")
    events = pipeline.client("events")
    pattern = {"source": ["aws.s3"], "detail": {"bucket": {"name": [bucket]}}}
    rule_name = pipeline.name[-60:]
    events.put_rule(Name=rule_name, EventPattern=json.dumps(pattern))
    events.put_targets(Rule=rule_name, Targets=[{"Id": "seqgate", "Arn": target_arn}])

    assert pipeline.configure(bucket, queue_arn, "--prefix", "incoming/").exit_code == 0
    done = pipeline.configure(bucket, "eventbridge")
    assert done.exit_code == 0 and "enabled EventBridge" in done.stdout, done.output
    # moto's GetBucketNotificationConfiguration omits EventBridgeConfiguration (AWS
    # returns it), so only the queue rule can be seen here; delivery below shows
    # EventBridge is on.
    assert [rule["QueueArn"] for rule in rules(pipeline, bucket)] == [queue_arn]

    written = s3.put_object(Bucket=bucket, Key="incoming/versioned.csv", Body=b"x")
    # moto also sends "Object Tags Added" for a plain upload.
    wait_for(lambda: visible_messages(pipeline, target_url) == 2, 10, "the EventBridge events")
    (summary,) = finished(pipeline.bridge(target_url))
    assert (summary["published"], summary["rejected"]) == (2, 0)
    created, tagged = sorted(pipeline.published(), key=lambda event: event.kind)
    assert (created.kind, tagged.kind) == ("created", "tags_changed")
    assert created.id == tagged.id  # moto's EventBridge id is constant

    (record,) = pipeline.outbox(tmp_path)
    assert record.event.key == "incoming/versioned.csv"
    assert record.event.version_id == written["VersionId"]
    assert record.event.position == "617f08299329d189"  # moto's constant sequencer


# ---- S3 -> SNS -> SQS ----------------------------------------------------------------------------


def test_sns_with_and_without_raw_delivery(pipeline: Pipeline, tmp_path: Path) -> None:
    sns = pipeline.client("sns")
    bucket = pipeline.bucket(versioned=False)
    topic = sns.create_topic(Name=pipeline.name[-60:])["TopicArn"]
    queues = {}
    for raw in ("true", "false"):
        url, arn = pipeline.queue(f"raw-{raw}")
        sns.subscribe(
            TopicArn=topic, Protocol="sqs", Endpoint=arn, Attributes={"RawMessageDelivery": raw}
        )
        queues[raw] = url

    done = pipeline.configure(bucket, topic, "--prefix", "incoming/", "--suffix", ".csv")
    assert done.exit_code == 0, done.output
    s3 = pipeline.client("s3")
    s3.put_object(Bucket=bucket, Key="incoming/via-sns.csv", Body=b"x")
    s3.put_object(Bucket=bucket, Key="incoming/not-csv.txt", Body=b"x")
    for url in queues.values():
        wait_for(lambda url=url: visible_messages(pipeline, url) == 2, 10, "test event + put")
    sqs = pipeline.client("sqs")
    received = {
        raw: sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
        for raw, url in queues.items()
    }
    for raw, messages in received.items():
        for message in messages:  # visible again for the bridge
            sqs.change_message_visibility(
                QueueUrl=queues[raw], ReceiptHandle=message["ReceiptHandle"], VisibilityTimeout=0
            )
    raw_body = next(m["Body"] for m in received["true"] if "Records" in m["Body"])
    enveloped = next(json.loads(m["Body"]) for m in received["false"] if "Records" in m["Body"])
    # Raw delivery: the S3 document itself; otherwise an SNS envelope around it.
    (record,) = json.loads(raw_body)["Records"]
    assert enveloped["Type"] == "Notification"
    assert json.loads(enveloped["Message"]) == json.loads(raw_body)
    # moto: no Subject ("Amazon S3 Notification" on AWS), and a bare record.
    assert "Subject" not in enveloped
    assert not {"sequencer", "versionId"} & set(record["s3"]["object"])
    assert not {"userIdentity", "requestParameters", "responseElements"} & set(record)

    summaries = finished(
        *(pipeline.bridge(url, "--allow-missing-sequencer") for url in queues.values())
    )
    for summary in summaries:
        assert (summary["published"], summary["ignored"], summary["rejected"]) == (1, 1, 0)
    first, second = pipeline.published()
    assert first.key == second.key == "incoming/via-sns.csv"
    assert first.id == second.id  # the same write, whichever path it took
    assert {first.origin.split(":")[1], second.origin.split(":")[1]} == {
        f"{pipeline.name[-60:]}-raw-true",
        f"{pipeline.name[-60:]}-raw-false",
    }

    (record,) = pipeline.outbox(tmp_path)  # the second delivery is a duplicate
    assert record.event.key == "incoming/via-sns.csv"
