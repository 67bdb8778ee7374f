"""The field limits every parsed event must fit before it is published.

Every event a parser builds must fit the field limits of
:mod:`seqgate.schemas.limits` (what Avro can encode, within bounded lengths): one that
does not becomes an ``invalid_field`` rejection naming the field (its JSON path
for S3 records and EventBridge events) in its place. It is numbered as the
parsers number theirs: by its index in a ``Records`` array; in other messages
by its position when the message yields several items, else None (the whole
message).
"""

from __future__ import annotations

from typing import Final

from seqgate.connectors.parsers.json_fields import index_path, member_path
from seqgate.connectors.parsers.results import ParseResult
from seqgate.schemas.errors import FieldLimitError
from seqgate.schemas.limits import check_event
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent

__all__ = ["EVENTBRIDGE_PATHS", "S3_RECORD_PATHS", "enforce_limits"]

# Where the fields of events of the S3 family come from, for messages. The
# other providers' events name the field (their paths vary within a provider).
S3_RECORD_PATHS: Final = {
    "bucket": "s3.bucket.name",
    "key": "s3.object.key",
    "event_name": "eventName",
    "position": "s3.object.sequencer",
    "version_id": "s3.object.versionId",
    "size": "s3.object.size",
    "etag": "s3.object.eTag",
    "event_time": "eventTime",
}
EVENTBRIDGE_PATHS: Final = {
    "id": "id",
    "bucket": "detail.bucket.name",
    "key": "detail.object.key",
    "event_name": "detail-type",
    "position": "detail.object.sequencer",
    "version_id": "detail.object.version-id",
    "size": "detail.object.size",
    "etag": "detail.object.etag",
    "event_time": "time",
}


def _limit_rejection(
    error: FieldLimitError, record_index: int | None, field_path: str | None
) -> Rejection:
    # The error's message starts with the field's name: name its JSON path instead.
    subject = field_path if field_path is not None else f"the event's {error.field}"
    detail = str(error).removeprefix(error.field)
    return Rejection(
        RejectReason.INVALID_FIELD,
        f"{subject}{detail} (seqgate's field limits: docs/reasons.md)",
        record_index,
    )


def enforce_limits(
    result: ParseResult,
    *,
    indexed: bool = False,
    path: str = "",
    field_paths: dict[str, str] | None = None,
) -> ParseResult:
    """``result`` with every event that breaks a field limit replaced by its rejection.

    The rejection's index is the event's position among the items when the
    parser numbers every record (``indexed``: a ``Records`` array) or the
    result holds several items, else None (the whole message), as the parser
    numbers its own rejections. ``field_paths`` maps field names to JSON paths
    relative to each record (``Records[i]``, when ``indexed``) or to ``path``.
    """
    items = result.items
    refused: dict[int, FieldLimitError] = {}
    for position, item in enumerate(items):
        if isinstance(item, ObjectEvent):
            try:
                check_event(item)
            except FieldLimitError as error:
                refused[position] = error
    if not refused:
        return result
    several = indexed or len(items) > 1
    replaced = list(items)
    for position, limit_error in refused.items():
        field_path = None
        if field_paths is not None and limit_error.field in field_paths:
            record_path = index_path("Records", position) if indexed else path
            field_path = member_path(record_path, field_paths[limit_error.field])
        replaced[position] = _limit_rejection(
            limit_error, position if several else None, field_path
        )
    return ParseResult(tuple(replaced))
