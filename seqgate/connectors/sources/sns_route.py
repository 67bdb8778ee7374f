"""``POST /sns``: SNS HTTP(S) subscriptions, authenticated by the message signature.

The signature (:mod:`seqgate.connectors.auth.sns_signature`) is checked on the
decoded message, topic pinned and timestamp window included; a body that is
not an SNS message is refused (403) like a forged one. A
``SubscriptionConfirmation`` is confirmed (GET its ``SubscribeURL``, already
host-checked by the verifier) and never written to Kafka; an
``UnsubscribeConfirmation`` is noted; a ``Notification`` is normalized and
delivered through the bridge's :class:`~seqgate.connectors.sources.webhook_routes.Gate`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import urllib.request
from collections.abc import Callable

from aiohttp import web

from seqgate.connectors.auth.sns_signature import (
    SUBSCRIPTION_CONFIRMATION,
    UNSUBSCRIBE_CONFIRMATION,
    SnsVerificationError,
    SnsVerifier,
)
from seqgate.connectors.parsers.json_fields import nesting_exceeds
from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.connectors.sources.webhook_routes import Gate, route_origin

__all__ = ["SnsRoute", "confirm_by_get"]

log = logging.getLogger(__name__)


def confirm_by_get(url: str, timeout_s: float = 10.0) -> None:
    """Confirm an SNS subscription: GET its SubscribeURL (already host-checked)."""
    with urllib.request.urlopen(url, timeout=timeout_s) as response:
        response.read(64 * 1024)


class SnsRoute:
    """The ``/sns`` handler, on top of the bridge's :class:`Gate`."""

    def __init__(
        self,
        verifier: SnsVerifier,
        confirm: Callable[[str], None],
        gate: Gate,
        s3_options: S3ParseOptions,
    ) -> None:
        self.verifier = verifier
        self.confirm = confirm  # GET SubscribeURL
        self.gate = gate
        self.s3_options = s3_options

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """``POST /sns``: verify, then confirm, note or deliver the message."""
        raw = await self.gate.read_body(request)
        if isinstance(raw, web.Response):
            return raw
        if nesting_exceeds(raw):  # bounded before it is decoded, as every JSON text is
            return self.gate.refuse(
                "sns", 403, "the body is not an SNS message (nested too deeply)"
            )
        try:
            document = json.loads(raw)
        except ValueError:
            return self.gate.refuse("sns", 403, "the body is not an SNS message (not JSON)")
        if not isinstance(document, dict):
            return self.gate.refuse("sns", 403, "the body is not an SNS message (not an object)")
        loop = asyncio.get_running_loop()
        try:
            # The certificate may be fetched over the network: not on the loop.
            kind = await loop.run_in_executor(None, self.verifier.verify, document)
        except SnsVerificationError as error:
            return self.gate.refuse("sns", 403, str(error))
        if kind == SUBSCRIPTION_CONFIRMATION:
            return await self._confirm(document)
        if kind == UNSUBSCRIBE_CONFIRMATION:
            log.warning(
                "SNS unsubscribed this endpoint", extra={"topic_arn": document.get("TopicArn")}
            )
            return web.json_response(status=200, data={"status": "unsubscribe_noted"})
        return await self.gate.deliver(
            raw, "sns", normalize(raw, route_origin("sns"), self.s3_options)
        )

    async def _confirm(self, document: dict[str, object]) -> web.Response:
        url = str(document["SubscribeURL"])
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(None, self.confirm, url)
        except Exception as error:
            self.gate.count("confirm_failures")
            log.warning(
                "SNS subscription confirmation failed; SNS will retry",
                extra={"topic_arn": document.get("TopicArn"), "error": str(error)},
            )
            return web.json_response(status=503, data={"status": "confirmation_failed"})
        self.gate.count("subscriptions_confirmed")
        log.warning("SNS subscription confirmed", extra={"topic_arn": document.get("TopicArn")})
        return web.json_response(status=200, data={"status": "subscription_confirmed"})
