"""Polling an SQS queue: delete a message only after Kafka has what it became.

Each cycle long-polls the queue (``WaitTimeSeconds`` up to 20,
``MaxNumberOfMessages`` up to 10), normalizes every body as received (any
envelope the normalizer knows: a native S3 notification, SNS with or without
raw delivery, EventBridge), drops what the filter does not admit, queues the
events and rejected records on the idempotent producer, and flushes:

* the flush succeeded (every record acknowledged by Kafka): the batch is
  deleted with ``DeleteMessageBatch``. A message whose records were all
  rejected is deleted too — its rejected records are in Kafka.
* the flush raised PublishError (Kafka unreachable, a record refused):
  nothing is deleted. The poller logs, waits (exponential backoff) and polls
  again; SQS makes the messages visible again after their visibility
  timeout and they are redelivered, so nothing is lost. Records of the
  failed batch that Kafka did take are published again on redelivery
  (at least once; the worker recognizes the duplicate by its position/id).

A failed delete also means a redelivery (at least once); it is logged and
counted. Stopping (``stop`` set, e.g. by SIGTERM) finishes the batch in
hand — publish, flush, delete — and returns; a long poll in progress ends
within ``WaitTimeSeconds``.
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
    BotoCoreError,
    ClientError,
)

from seqgate.connectors.errors import PublishError, SqsSourceError
from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.s3.native import DEFAULT_S3_PARSE_OPTIONS, S3ParseOptions
from seqgate.connectors.publish.filters import BridgeTally, EventFilter
from seqgate.connectors.publish.publisher import EventPublisher
from seqgate.runtime.failure_spell import FailureSpell

log = logging.getLogger(__name__)

MAX_WAIT_TIME_SECONDS = 20  # SQS's limit for long polling
MAX_RECEIVE_BATCH = 10  # SQS's limit per ReceiveMessage

# Client errors that a retry may cure; any other 4xx (no such queue, access
# denied, bad credentials) stops the poller with the service's message.
_RETRIABLE_CODES = frozenset(
    {
        "ThrottlingException",
        "Throttling",
        "RequestThrottled",
        "KmsThrottled",
        "ServiceUnavailable",
        "InternalError",
        "InternalFailure",
        "RequestTimeout",
    }
)
_REGION_IN_HOST = re.compile(
    r"^(?:sqs\.(?P<a>[a-z0-9-]+)\.amazonaws\.com|(?P<b>[a-z0-9-]+)\.queue\.amazonaws\.com)"
)


def queue_name(queue_url: str) -> str:
    """The queue's name: the last segment of its URL's path."""
    parsed = urlparse(queue_url)
    segments = [segment for segment in parsed.path.split("/") if segment]
    if parsed.scheme not in ("http", "https") or not parsed.netloc or not segments:
        raise ValueError(
            f"{queue_url!r} is not a queue URL"
            " (expected e.g. https://sqs.eu-west-1.amazonaws.com/111122223333/my-queue)"
        )
    return segments[-1]


def region_of(queue_url: str) -> str | None:
    """The region named by an AWS queue URL's host, if it names one."""
    match = _REGION_IN_HOST.match(urlparse(queue_url).hostname or "")
    if match is None:
        return None
    return match.group("a") or match.group("b")


@dataclass(frozen=True, slots=True)
class SqsSettings:
    queue_url: str
    wait_time_seconds: int = MAX_WAIT_TIME_SECONDS
    batch_size: int = MAX_RECEIVE_BATCH
    visibility_timeout: int | None = None  # None: the queue's own setting
    retry_backoff_s: float = 1.0
    max_retry_backoff_s: float = 30.0
    max_messages: int | None = None  # stop after this many acknowledged messages
    idle_exit_seconds: float | None = None  # stop after this long without a message


@dataclass
class SqsRunStats:
    publish_failures: int = 0  # batches not acknowledged by Kafka (left in the queue)
    receive_failures: int = 0
    delete_failures: int = 0  # messages published but not deleted (they will be redelivered)
    unacknowledged: set[str] = field(default_factory=set)  # ids whose last attempt failed

    def as_dict(self) -> dict[str, int]:
        return {
            "publish_failures": self.publish_failures,
            "receive_failures": self.receive_failures,
            "delete_failures": self.delete_failures,
        }


class SqsPoller:
    """Moves messages from one SQS queue to Kafka until stopped."""

    def __init__(
        self,
        client: Any,
        publisher: EventPublisher,
        settings: SqsSettings,
        event_filter: EventFilter | None = None,
        *,
        s3_options: S3ParseOptions = DEFAULT_S3_PARSE_OPTIONS,
    ) -> None:
        self._client = client
        self._s3_options = s3_options
        self._publisher = publisher
        self.settings = settings
        self._filter = event_filter or EventFilter()
        self._queue_name = queue_name(settings.queue_url)
        self.tally = BridgeTally()
        self.stats = SqsRunStats()
        # Kafka refusing writes fails every batch alike: one warning for the spell.
        self._unacknowledged = FailureSpell(
            log,
            "Kafka did not acknowledge the batch: nothing deleted, SQS redelivers it"
            " after the visibility timeout",
            "Kafka acknowledges the bridge's records again",
        )

    def run(self, stop: threading.Event) -> None:
        """Poll until `stop` is set, `max_messages` are acknowledged or the queue stays idle.

        Raises SqsSourceError when SQS refuses the poller for good.
        """
        settings = self.settings
        last_message = time.monotonic()
        backoff = settings.retry_backoff_s
        while not stop.is_set():
            wanted = settings.batch_size
            if settings.max_messages is not None:
                wanted = min(wanted, settings.max_messages - self.tally.messages)
                if wanted <= 0:
                    return
            wait = settings.wait_time_seconds
            if settings.idle_exit_seconds is not None:
                idle_left = settings.idle_exit_seconds - (time.monotonic() - last_message)
                wait = max(0, min(wait, math.ceil(idle_left)))
            try:
                messages = self._receive(wanted, wait)
            except (BotoCoreError, ClientError) as error:
                self._check_retriable(error)
                self.stats.receive_failures += 1
                log.warning("SQS receive failed; retrying", extra={"error": str(error)})
                stop.wait(backoff)
                backoff = min(backoff * 2, settings.max_retry_backoff_s)
                messages = []
            if not messages:
                idle = time.monotonic() - last_message
                if settings.idle_exit_seconds is not None and idle >= settings.idle_exit_seconds:
                    return
                continue
            last_message = time.monotonic()
            if self._forward(messages):
                backoff = settings.retry_backoff_s
            else:
                stop.wait(backoff)
                backoff = min(backoff * 2, settings.max_retry_backoff_s)

    def _receive(self, wanted: int, wait: int) -> list[dict[str, Any]]:
        request: dict[str, Any] = {
            "QueueUrl": self.settings.queue_url,
            "MaxNumberOfMessages": wanted,
            "WaitTimeSeconds": wait,
        }
        if self.settings.visibility_timeout is not None:
            request["VisibilityTimeout"] = self.settings.visibility_timeout
        response = self._client.receive_message(**request)
        messages: list[dict[str, Any]] = response.get("Messages", [])
        return messages

    def _check_retriable(self, error: Exception) -> None:
        if not isinstance(error, ClientError):
            return  # connection problems, timeouts: retry
        details = error.response.get("Error", {})
        code = str(details.get("Code", ""))
        status = int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 500))
        if status < 500 and code not in _RETRIABLE_CODES:
            raise SqsSourceError(
                f"SQS refused {self.settings.queue_url}: {code}: {details.get('Message', '')}"
            ) from error

    def _forward(self, messages: list[dict[str, Any]]) -> bool:
        """Publish one received batch; delete it only if Kafka acknowledged all of it."""
        batch = BridgeTally()
        for message in messages:
            raw = str(message.get("Body", "")).encode("utf-8")
            origin = f"sqs:{self._queue_name}:{message['MessageId']}"
            result, filtered = self._filter.apply(normalize(raw, origin, self._s3_options))
            delivery = self._publisher.submit(result, raw, origin)
            batch.add(delivery.result, filtered)  # as written: what the topics hold
        ids = [str(message["MessageId"]) for message in messages]
        try:
            self._publisher.flush()
        except PublishError as error:
            self.stats.publish_failures += 1
            self.stats.unacknowledged.update(ids)
            self._unacknowledged.failed(error=str(error), messages=len(messages))
            return False
        self._unacknowledged.succeeded()
        self.tally.merge(batch)
        self.stats.unacknowledged.difference_update(ids)
        self._delete(messages)
        return True

    def _delete(self, messages: list[dict[str, Any]]) -> None:
        entries = [
            {"Id": str(index), "ReceiptHandle": message["ReceiptHandle"]}
            for index, message in enumerate(messages)
        ]
        try:
            response = self._client.delete_message_batch(
                QueueUrl=self.settings.queue_url, Entries=entries
            )
        except (BotoCoreError, ClientError) as error:
            self.stats.delete_failures += len(entries)
            log.warning(
                "SQS delete failed: the messages will be redelivered and published again",
                extra={"error": str(error), "messages": len(entries)},
            )
            return
        failed = response.get("Failed", [])
        if failed:
            self.stats.delete_failures += len(failed)
            log.warning(
                "SQS did not delete some messages: they will be redelivered and published again",
                extra={"failed": [entry.get("Code") for entry in failed]},
            )
