"""``POST /sns``: SNS HTTP(S) subscriptions, authenticated by the message signature.

Its entry in :data:`seqgate.connectors.sources.route_table.ROUTE_TABLE` is a body check,
:func:`verify_sns`: the body is decoded and its signature
(:mod:`seqgate.connectors.auth.sns_signature`) checked, topic pinned and timestamp
window included; a body that is not an SNS message is refused (403) like a forged one
(both :class:`~seqgate.connectors.errors.SnsVerificationError`). Then
:func:`answer_sns`: a ``SubscriptionConfirmation`` is confirmed (GET its
``SubscribeURL``, already host-checked by the verifier) and never written to Kafka; an
``UnsubscribeConfirmation`` is noted; a ``Notification`` is normalized and delivered
through the bridge's :class:`~seqgate.connectors.sources.webhook_routes.Gate`.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.request
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from aiohttp import web

from seqgate.connectors.auth.sns_signature import (
    SUBSCRIPTION_CONFIRMATION,
    UNSUBSCRIBE_CONFIRMATION,
    SnsVerifier,
    decode_sns_message,
)
from seqgate.connectors.sources.webhook_routes import Gate

__all__ = ["SnsMessage", "answer_sns", "confirm_by_get", "verify_sns"]

log = logging.getLogger(__name__)


def confirm_by_get(url: str, timeout_s: float = 10.0) -> None:
    """Confirm an SNS subscription: GET its SubscribeURL (already host-checked)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        response.read(64 * 1024)


@dataclass(frozen=True)
class SnsMessage:
    """A verified SNS message and its ``Type``."""

    document: dict[str, object]
    kind: str


def verify_sns(verifier: SnsVerifier, raw: bytes) -> SnsMessage:
    """The verified message of a body; raises SnsVerificationError (403) otherwise.
    May fetch the signing certificate: call it off the event loop."""
    document = decode_sns_message(raw)
    return SnsMessage(document, verifier.verify(document))


async def answer_sns(
    gate: Gate,
    confirm: Callable[[str], None],
    message: SnsMessage,
    deliver: Callable[[], Awaitable[web.Response]],
) -> web.Response:
    """Confirm, note or ``deliver`` a verified message."""
    if message.kind == SUBSCRIPTION_CONFIRMATION:
        return await _confirm(gate, confirm, message.document)
    if message.kind == UNSUBSCRIBE_CONFIRMATION:
        log.warning(
            "SNS unsubscribed this endpoint", extra={"topic_arn": message.document.get("TopicArn")}
        )
        return web.json_response(status=200, data={"status": "unsubscribe_noted"})
    return await deliver()


async def _confirm(
    gate: Gate, confirm: Callable[[str], None], document: dict[str, object]
) -> web.Response:
    url = str(document["SubscribeURL"])
    loop = asyncio.get_running_loop()
    try:
        await loop.run_in_executor(None, confirm, url)
    except Exception as error:
        gate.count("confirm_failures")
        log.warning(
            "SNS subscription confirmation failed; SNS will retry",
            extra={"topic_arn": document.get("TopicArn"), "error": str(error)},
        )
        return web.json_response(status=503, data={"status": "confirmation_failed"})
    gate.count("subscriptions_confirmed")
    log.warning("SNS subscription confirmed", extra={"topic_arn": document.get("TopicArn")})
    return web.json_response(status=200, data={"status": "subscription_confirmed"})
