"""SQS and SNS envelopes around S3 notifications (and around each other).

An envelope carries one inner document, or several, as a JSON *string*. This
module checks the envelope's own members, then hands each inner string to the
``inner`` callback (:func:`seqgate.connectors.parsers.normalize.normalize_text`), which
decodes it strictly and dispatches it again: the inner document may be a
native S3 notification, an EventBridge event, an S3 test event or another
envelope. Keeping the callback a parameter keeps this module free of the
dispatcher (no import cycle) and pure.

Supported shapes:

* SQS ``ReceiveMessage`` response, as the AWS CLI and boto3 print it:
  ``{"Messages": [{"MessageId", "ReceiptHandle", "MD5OfBody", "Body", ...}]}``;
  the inner document is each message's ``Body``;
* a Lambda SQS batch record (``eventSource`` ``aws:sqs``): the inner
  document is its ``body``;
* an SNS message, HTTP form (``Type``, ``MessageId``, ``TopicArn``,
  ``Message``, ``Timestamp``, ``SigningCertURL``, ...), which is also the SQS
  body of an SNS -> SQS subscription without raw message delivery;
* a Lambda SNS record (``EventSource`` ``aws:sns``, note the capital E): the
  SNS message is its ``Sns`` member, with Lambda's spellings
  (``SigningCertUrl``, ``UnsubscribeUrl``).

SNS -> SQS *with* raw message delivery needs no code: the SQS body is the S3
document itself. Nor does the plain SQS message body: it is the inner
document, and the dispatcher reads it directly.

Every message of an SQS batch is parsed on its own, so one bad message never
hides the results of the others; the parts are joined with
:func:`~seqgate.connectors.parsers.results.concat`, which numbers records across the whole
input. An SNS ``SubscriptionConfirmation`` or ``UnsubscribeConfirmation`` is a
handshake, not data: it is *ignored* with a note telling the operator what to
do. Signatures (``Signature``, ``SigningCertURL``) are not checked here: that
is the job of the receiver that accepts the HTTP request (authentication is
refused at the door, docs/design.md §1); a file or an SQS queue is trusted as read.

Rejections name the JSON path of the offending member inside the received
message (``Messages[1].Body``, ``Records[0].Sns.Message``, ...). Nothing here
raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from seqgate.connectors.parsers.json_fields import (
    index_path,
    member_path,
    notification_object,
    required_member,
    show,
)
from seqgate.connectors.parsers.results import Ignored, ParseResult, concat, result_or_rejection
from seqgate.schemas.reasons import RejectReason

__all__ = [
    "LAMBDA_SNS_EVENT_SOURCE",
    "LAMBDA_SQS_EVENT_SOURCE",
    "SNS_NOTIFICATION",
    "SNS_SUBSCRIPTION_CONFIRMATION",
    "SNS_UNSUBSCRIBE_CONFIRMATION",
    "InnerParser",
    "parse_lambda_sns_record",
    "parse_lambda_sqs_record",
    "parse_sns_message",
    "parse_sqs_receive_response",
]

LAMBDA_SQS_EVENT_SOURCE: Final = "aws:sqs"
"""``eventSource`` of a Lambda SQS batch record."""

LAMBDA_SNS_EVENT_SOURCE: Final = "aws:sns"
"""``EventSource`` of a Lambda SNS record."""

SNS_NOTIFICATION: Final = "Notification"
SNS_SUBSCRIPTION_CONFIRMATION: Final = "SubscriptionConfirmation"
SNS_UNSUBSCRIBE_CONFIRMATION: Final = "UnsubscribeConfirmation"

InnerParser = Callable[[str, str, str, int], ParseResult]
"""``inner(text, origin, path, depth)``: decode and dispatch an inner document."""


def _inner_body(
    container: dict[object, object],
    name: str,
    path: str,
    what: str,
    origin: str,
    depth: int,
    inner: InnerParser,
) -> ParseResult:
    """Hand the JSON string ``container[name]`` to ``inner`` one level deeper."""

    def parse() -> ParseResult:
        body = required_member(
            container,
            name,
            path,
            str,
            missing=f"expected {what} (a JSON string)",
            invalid=f"a string holding {what} as JSON text",
        )
        return inner(body, origin, member_path(path, name), depth + 1)

    return result_or_rejection(parse)


# --------------------------------------------------------------------------- SQS


def parse_sqs_receive_response(
    document: object, origin: str, path: str, depth: int, inner: InnerParser
) -> ParseResult:
    """An SQS ``ReceiveMessage`` response: every message's ``Body``, independently.

    ``depth`` is the number of envelopes around ``document``; each body is
    parsed one level deeper.
    """
    return result_or_rejection(lambda: _sqs_messages(document, origin, path, depth, inner))


def _sqs_messages(
    document: object, origin: str, path: str, depth: int, inner: InnerParser
) -> ParseResult:
    field = member_path(path, "Messages")
    messages = required_member(
        document if isinstance(document, dict) else {},  # no object, no "Messages"
        "Messages",
        path,
        list,
        missing="expected the array of an SQS ReceiveMessage response",
        invalid="an array of SQS messages",
    )
    if not messages:
        return ParseResult.rejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"{field} is empty: expected at least one SQS message (an empty receive "
            "carries no notification)",
        )
    parts: list[ParseResult] = []
    for index, message in enumerate(messages):
        message_path = index_path(field, index)
        if not isinstance(message, dict):
            parts.append(
                ParseResult.rejected(
                    RejectReason.NOT_A_NOTIFICATION,
                    f"{message_path} must be a JSON object (one SQS message with a 'Body'), "
                    f"got {show(message)}",
                )
            )
            continue
        parts.append(
            _inner_body(message, "Body", message_path, "the message body", origin, depth, inner)
        )
    return concat(parts)


def parse_lambda_sqs_record(
    record: object, origin: str, path: str, depth: int, inner: InnerParser
) -> ParseResult:
    """One record of a Lambda SQS batch (``eventSource`` ``aws:sqs``): its ``body``.

    ``path`` names the record (``Records[2]``); the caller has already routed
    the record by its ``eventSource``.
    """
    if not isinstance(record, dict):
        return ParseResult.rejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"{path} must be a JSON object (one Lambda SQS record), got {show(record)}",
        )
    return _inner_body(record, "body", path, "the message body", origin, depth, inner)


# --------------------------------------------------------------------------- SNS


def _topic(document: dict[object, object]) -> str:
    topic = document.get("TopicArn")
    return f"topic {show(topic)}" if isinstance(topic, str) and topic else "its topic"


def parse_sns_message(
    document: object, origin: str, path: str, depth: int, inner: InnerParser
) -> ParseResult:
    """An SNS message (HTTP form, or the ``Sns`` member of a Lambda SNS record).

    ``Notification`` -> its ``Message`` is the inner document;
    ``SubscriptionConfirmation`` / ``UnsubscribeConfirmation`` -> ignored
    handshakes; any other ``Type`` -> ``not_a_notification``.
    """
    return result_or_rejection(lambda: _sns_message(document, origin, path, depth, inner))


def _sns_message(
    document: object, origin: str, path: str, depth: int, inner: InnerParser
) -> ParseResult:
    subject = path if path else "the SNS message"
    if not isinstance(document, dict):
        return ParseResult.rejected(
            RejectReason.INVALID_FIELD,
            f"{subject} must be a JSON object (an SNS message), got {show(document)}",
        )
    kind = required_member(
        document,
        "Type",
        path,
        str,
        missing=f"expected the SNS message type, e.g. {SNS_NOTIFICATION!r}",
        invalid=f"a string such as {SNS_NOTIFICATION!r}",
    )
    if kind == SNS_SUBSCRIPTION_CONFIRMATION:
        return ParseResult.of(
            Ignored(
                "sns_subscription_confirmation",
                f"SNS asks to confirm a subscription to {_topic(document)}: this is a "
                "handshake, not a notification. Confirm it if the subscription is wanted "
                "(open the message's SubscribeURL, or run `aws sns confirm-subscription` "
                "with its TopicArn and Token); otherwise ignore it.",
            )
        )
    if kind == SNS_UNSUBSCRIBE_CONFIRMATION:
        return ParseResult.of(
            Ignored(
                "sns_unsubscribe_confirmation",
                f"SNS reports that the subscription to {_topic(document)} was removed: no "
                "more notifications will arrive from it. If that was not intended, "
                "subscribe again (the message's SubscribeURL re-subscribes).",
            )
        )
    if kind != SNS_NOTIFICATION:
        return ParseResult.rejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"{member_path(path, 'Type')} is {show(kind)}: expected {SNS_NOTIFICATION!r} (or a "
            f"{SNS_SUBSCRIPTION_CONFIRMATION!r} / {SNS_UNSUBSCRIBE_CONFIRMATION!r} handshake)",
        )
    return _inner_body(document, "Message", path, "the notification", origin, depth, inner)


def parse_lambda_sns_record(
    record: object, origin: str, path: str, depth: int, inner: InnerParser
) -> ParseResult:
    """One record of a Lambda SNS event (``EventSource`` ``aws:sns``): its ``Sns``.

    ``path`` names the record (``Records[0]``); the SNS message inside uses
    Lambda's spellings, which change nothing that is read here.
    """
    return result_or_rejection(lambda: _lambda_sns_record(record, origin, path, depth, inner))


def _lambda_sns_record(
    record: object, origin: str, path: str, depth: int, inner: InnerParser
) -> ParseResult:
    record = notification_object(record, path, "one Lambda SNS record")
    sns = required_member(
        record,
        "Sns",
        path,
        dict,
        missing="expected the SNS message of a Lambda SNS record",
        invalid="a JSON object (the SNS message)",
    )
    return parse_sns_message(sns, origin, member_path(path, "Sns"), depth, inner)
