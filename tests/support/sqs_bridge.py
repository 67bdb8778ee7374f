"""`seqgate bridge sqs` for tests: a queue in a moto server with its topics, and the command run
as a real process."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

from tests.support.moto_helpers import aws_client


def sqs_client(endpoint: str) -> Any:
    return aws_client("sqs", endpoint)


@dataclass(frozen=True)
class Setup:
    bootstrap: str
    endpoint: str
    queue_url: str
    queue_name: str
    events: str
    rejected: str

    @property
    def client(self) -> Any:
        return sqs_client(self.endpoint)

    def send(self, *bodies: str) -> list[str]:
        """Send the bodies in order; their message ids."""
        return [
            self.client.send_message(QueueUrl=self.queue_url, MessageBody=body)["MessageId"]
            for body in bodies
        ]

    def send_many(self, bodies: list[str]) -> list[str]:
        ids = []
        for start in range(0, len(bodies), 10):
            entries = [
                {"Id": str(n), "MessageBody": body}
                for n, body in enumerate(bodies[start : start + 10])
            ]
            response = self.client.send_message_batch(QueueUrl=self.queue_url, Entries=entries)
            assert not response.get("Failed"), response
            by_entry = {entry["Id"]: entry["MessageId"] for entry in response["Successful"]}
            ids.extend(by_entry[str(n)] for n in range(len(entries)))
        return ids

    def queue_counts(self) -> tuple[int, int]:
        """(visible, not visible) messages: those not deleted."""
        attributes = self.client.get_queue_attributes(
            QueueUrl=self.queue_url,
            AttributeNames=[
                "ApproximateNumberOfMessages",
                "ApproximateNumberOfMessagesNotVisible",
            ],
        )["Attributes"]
        return (
            int(attributes["ApproximateNumberOfMessages"]),
            int(attributes["ApproximateNumberOfMessagesNotVisible"]),
        )


def command(setup: Setup, *options: str, bootstrap: str | None = None) -> list[str]:
    return [
        sys.executable,
        "-m",
        "seqgate.cli",
        "bridge",
        "sqs",
        "--queue-url",
        setup.queue_url,
        "--endpoint-url",
        setup.endpoint,
        "--bootstrap-servers",
        bootstrap or setup.bootstrap,
        "--events-topic",
        setup.events,
        "--rejected-topic",
        setup.rejected,
        "--wait-time-seconds",
        "1",
        *options,
    ]
