"""Group commit for the HTTP bridge: concurrent requests share one flush.

One :class:`~seqgate.connectors.publish.publisher.EventPublisher` is driven
from a single worker thread, so the event loop never blocks. Requests that
arrive while a flush is running are queued and submitted together, then one
flush serves them all. Each request is answered from the delivery reports of
its own records (:class:`~seqgate.connectors.publish.publisher.Delivery`).
"""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor

from seqgate.connectors.errors import PublishError
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.publish.publisher import Delivery, EventPublisher

__all__ = ["GroupPublisher"]

log = logging.getLogger(__name__)


class _Pending:
    __slots__ = ("future", "origin", "raw", "result")

    def __init__(
        self,
        result: ParseResult,
        raw: bytes,
        origin: str,
        future: asyncio.Future[ParseResult],
    ) -> None:
        self.result = result
        self.raw = raw
        self.origin = origin
        self.future = future


class GroupPublisher:
    """Submit and flush from one thread; concurrent requests share a flush, and each
    is answered from the delivery reports of its own records."""

    def __init__(self, publisher: EventPublisher) -> None:
        self.publisher = publisher
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="seqgate-publish")
        self._pending: list[_Pending] = []
        self._drainer: asyncio.Task[None] | None = None

    async def publish(self, result: ParseResult, raw: bytes, origin: str) -> ParseResult:
        """What was written (an event that could not be encoded is a rejected record there),
        once Kafka acknowledged every record of it; raise PublishError otherwise."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[ParseResult] = loop.create_future()
        self._pending.append(_Pending(result, raw, origin, future))
        if self._drainer is None or self._drainer.done():
            self._drainer = asyncio.create_task(self._drain())
        # Shielded: a client that hangs up does not cancel the group's flush.
        return await asyncio.shield(future)

    async def _drain(self) -> None:
        loop = asyncio.get_running_loop()
        while self._pending:
            group, self._pending = self._pending, []
            try:
                deliveries = await loop.run_in_executor(
                    self._executor, self._submit_and_settle, group
                )
            except Exception as error:  # never leave a request waiting
                log.exception("publishing failed unexpectedly")
                deliveries = [_failed(pending, str(error)) for pending in group]
            for pending, delivery in zip(group, deliveries, strict=True):
                _answer(pending.future, delivery)

    def _submit_and_settle(self, group: list[_Pending]) -> list[Delivery]:
        deliveries = [self._submit(pending) for pending in group]
        self.publisher.settle()  # one flush serves the whole group
        return deliveries

    def _submit(self, pending: _Pending) -> Delivery:
        try:
            return self.publisher.submit(pending.result, pending.raw, pending.origin)
        except Exception as error:  # a bug in one request's records fails it alone
            log.exception("submitting a request's records failed unexpectedly")
            return _failed(pending, str(error))

    async def close(self) -> None:
        """Wait for the requests in hand, then flush and close the producer."""
        if self._drainer is not None:
            await self._drainer
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self.publisher.close)
        finally:
            self._executor.shutdown(wait=True)


def _failed(pending: _Pending, why: str) -> Delivery:
    return Delivery(pending.result, local_error=why)


def _answer(future: asyncio.Future[ParseResult], delivery: Delivery) -> None:
    if future.done():
        return
    if delivery.complete:
        future.set_result(delivery.result)
    else:
        future.set_exception(PublishError(delivery.problem()))
