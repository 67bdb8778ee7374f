"""What normalizing one received message produced, record by record, in input order.

Every record of the input yields exactly one item: an `ObjectEvent`, a
`Rejection` (rejected with a reason) or an `Ignored` (a provider's test
or handshake message: no work, no rejected record). Envelopes that carry several
messages (an SQS batch, a Lambda event) concatenate the results of their
parts with `concat`, which numbers the records of the whole input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent


@dataclass(frozen=True, slots=True)
class Ignored:
    """A message that asks for no work: a test event or a subscription handshake."""

    reason: str  # stable code, e.g. "s3_test_event", "sns_subscription_confirmation"
    message: str
    record_index: int | None = None


ParsedItem = ObjectEvent | Rejection | Ignored


@dataclass(frozen=True, slots=True)
class ParseResult:
    items: tuple[ParsedItem, ...]

    @classmethod
    def of(cls, *items: ParsedItem) -> ParseResult:
        return cls(tuple(items))

    @classmethod
    def rejected(
        cls, reason: RejectReason, message: str, record_index: int | None = None
    ) -> ParseResult:
        return cls((Rejection(reason, message, record_index),))

    @property
    def events(self) -> list[ObjectEvent]:
        return [item for item in self.items if isinstance(item, ObjectEvent)]

    @property
    def rejections(self) -> list[Rejection]:
        return [item for item in self.items if isinstance(item, Rejection)]

    @property
    def ignored(self) -> list[Ignored]:
        return [item for item in self.items if isinstance(item, Ignored)]

    def __len__(self) -> int:
        return len(self.items)


def concat(parts: Iterable[ParseResult]) -> ParseResult:
    """Join the results of the parts of one input, in order.

    With a single part its numbering stands (`record_index` None means the
    whole message). With several, every rejection and ignored item is
    renumbered to its position among all the records of the input.
    """
    parts = list(parts)
    if len(parts) == 1:
        return parts[0]
    items: list[ParsedItem] = []
    for part in parts:
        for item in part.items:
            if isinstance(item, (Rejection, Ignored)):
                item = dataclasses.replace(item, record_index=len(items))
            items.append(item)
    return ParseResult(tuple(items))


def in_document(path: str, result: ParseResult) -> ParseResult:
    """``result`` with its rejections prefixed by ``path``: for a parser that does not
    know where its document sits in the received message (the native S3 parser)."""
    if not path:
        return result
    items: list[ParsedItem] = [
        dataclasses.replace(item, message=f"{path}: {item.message}")
        if isinstance(item, Rejection)
        else item
        for item in result.items
    ]
    return ParseResult(tuple(items))


def whole_message_rejection(message: str) -> ParseResult:
    """The result for a body that is not a notification at all (``record_index`` None)."""
    return ParseResult.rejected(RejectReason.NOT_A_NOTIFICATION, message)


def parse_each(
    records: list[object],
    parse_one: Callable[[object, int], ObjectEvent | Ignored | Sequence[ObjectEvent]],
) -> ParseResult:
    """Run ``parse_one(record, index)`` over ``records``; a rejection names its index.

    ``parse_one`` returns an event, an ignored item, or several events for one
    record (a rename reported as removal and creation), and raises
    :class:`RecordRejected` for an invalid record.
    """
    items: list[ParsedItem] = []
    for index, record in enumerate(records):
        try:
            parsed = parse_one(record, index)
        except RecordRejected as rejected:
            items.append(Rejection(rejected.reason, rejected.message, index))
            continue
        if isinstance(parsed, ObjectEvent | Ignored):
            items.append(parsed)
        else:
            items.extend(parsed)
    return ParseResult(tuple(items))


def result_or_rejection(parse: Callable[[], ParseResult]) -> ParseResult:
    """What ``parse`` returns; when it raises :class:`RecordRejected`, that rejection
    as the result of the whole message (``record_index`` None)."""
    try:
        return parse()
    except RecordRejected as rejected:
        return ParseResult.rejected(rejected.reason, rejected.message)


def describe(item: ParsedItem, origin: str) -> dict[str, Any]:
    """The JSON form of one item, as `seqgate parse` prints it."""
    if isinstance(item, ObjectEvent):
        return {"status": "event", **item.to_dict()}
    status = "rejected" if isinstance(item, Rejection) else "ignored"
    return {
        "status": status,
        "reason": str(item.reason),
        "message": item.message,
        "record_index": item.record_index,
        "origin": origin,
    }
