"""Entry point of the bridge's validation: raw bytes -> events, rejections, ignores.

:func:`normalize` decodes one received message body as JSON, then hands the
document to the first format in :data:`_PARSERS` that recognizes its shape.
The caller never says which envelope it received: envelopes (SQS, SNS) carry
their inner document as a JSON *string*, which is decoded with the same strict
decoder and dispatched again by :func:`normalize_document`, so any envelope
may carry any other (SNS -> SQS -> Lambda, EventBridge -> SQS, ...).

Recognizers, tried in this order (the first match handles the document):

====  ==========================================  ================================
step  format                                      recognized by (a JSON object ...)
====  ==========================================  ================================
1     ``Records`` document: native S3 / MinIO     a ``Records`` or ``Event`` member
      notification, Lambda SQS batch, Lambda SNS
      event (split per record, see below)
2     SNS message (HTTP form; also an SQS body    a ``Type`` member and a
      without raw message delivery)               ``TopicArn`` or ``Message``
3     SQS ``ReceiveMessage`` response             a ``Messages`` member
4     EventBridge event                           a ``detail-type`` member, or both
                                                  ``detail`` and ``source``
====  ==========================================  ================================

Why this order: ``Records`` is what S3 itself writes and what Lambda hands
over, the hot path, and no SNS, SQS or EventBridge document has a top-level
``Records``; SNS and SQS documents are recognized by members that S3 and
EventBridge never write at the top level; EventBridge comes last because its
``source``/``detail`` pair is the least specific test. A document that would
match two steps goes to the earlier one.

A ``Records`` document is routed record by record on each record's source:
``eventSource`` ``aws:sqs`` is a Lambda SQS message (its ``body`` is an inner
document), ``EventSource`` ``aws:sns`` (Lambda's spelling) is a Lambda SNS
record (its ``Sns.Message`` is an inner document), and every other record
(``aws:s3``, ``minio:s3``, anything wrong) goes to the native S3 parser, which
rejects a foreign source as ``wrong_event_source``. When no record is an SQS
or SNS message the whole document goes to the S3 parser unchanged; a mixed
batch is parsed record by record, each by its own source, and the results are
concatenated in record order.

Envelopes may be nested at most :data:`MAX_ENVELOPE_DEPTH` deep (an SNS
notification delivered to SQS and read as a ``ReceiveMessage`` response is
2); a deeper inner document is rejected as ``not_a_notification`` naming its
path, so a hostile message cannot make the bridge recurse without bound.

``s3_options`` (:class:`~seqgate.connectors.parsers.s3.native.S3ParseOptions`) reaches the
native S3 parser through every envelope, so a bridge's
``--allow-missing-sequencer`` applies whether S3 records arrive plain, through
SNS or through SQS.

JSON decoding is strict, because the exact bytes may be dead-lettered and
reread by other tools:

* the body must be UTF-8 (one leading byte-order mark is tolerated);
* it must be one JSON value per RFC 8259: ``NaN``/``Infinity`` are refused;
* an object may not repeat a member name (parsers could otherwise disagree
  on which value counts);
* pathological input (numbers too long to convert) is refused instead of
  raising;
* arrays and objects may nest at most
  :data:`~seqgate.connectors.parsers.json_fields.MAX_JSON_DEPTH` (64) deep in one JSON text: a
  scan of the text before it is decoded
  (:func:`~seqgate.connectors.parsers.json_fields.nesting_exceeds`)
  refuses deeper text as ``nesting_too_deep``, so the decoder never recurses
  deeper. An envelope's inner body is a text of its own, scanned on its own.

Every other decoding failure is a ``malformed_json`` rejection: of the whole
message for the received bytes, of that part for an inner body (the message
names the body's JSON path, e.g. ``Messages[1].Body``). A document of a shape
no parser recognizes is rejected as ``not_a_notification``.

Every event a parser builds must then fit the field limits of
:mod:`seqgate.schemas.limits` (what Avro can encode, within bounded lengths): one that
does not becomes an ``invalid_field`` rejection naming the field (its JSON path
for S3 records and EventBridge events) in its place. It is numbered as the
parsers number theirs: by its index in a ``Records`` array; in other messages
by its position when the message yields several items, else None (the whole
message). Nothing here raises.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from seqgate.connectors.parsers.azure import looks_like_azure, parse_azure
from seqgate.connectors.parsers.b2 import looks_like_b2, parse_b2
from seqgate.connectors.parsers.box import looks_like_box, parse_box
from seqgate.connectors.parsers.gcs import looks_like_gcs, parse_gcs
from seqgate.connectors.parsers.json_fields import (
    index_path,
    member_path,
    nesting_exceeds,
    too_deep_message,
)
from seqgate.connectors.parsers.results import ParsedItem, ParseResult, concat
from seqgate.connectors.parsers.s3.envelopes import (
    LAMBDA_SNS_EVENT_SOURCE,
    LAMBDA_SQS_EVENT_SOURCE,
    InnerParser,
    parse_lambda_sns_record,
    parse_lambda_sqs_record,
    parse_sns_message,
    parse_sqs_receive_response,
)
from seqgate.connectors.parsers.s3.eventbridge import parse_eventbridge_event
from seqgate.connectors.parsers.s3.native import (
    DEFAULT_S3_PARSE_OPTIONS,
    S3ParseOptions,
    parse_s3_records,
)
from seqgate.connectors.parsers.supabase import looks_like_supabase, parse_supabase
from seqgate.schemas.limits import FieldLimitError, check_event
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent

__all__ = ["MAX_ENVELOPE_DEPTH", "ParseResult", "normalize", "normalize_document", "normalize_with"]

MAX_ENVELOPE_DEPTH: Final = 4
"""How many envelopes may be unwrapped around one notification."""

_BOM: Final = b"\xef\xbb\xbf"
_TEXT_BOM: Final = "\ufeff"
_THE_BODY: Final = "the body"


@dataclass(frozen=True, slots=True)
class _Parser:
    """A notification format: how to recognize a document, and how to parse it.

    ``parse(document, origin, path, depth, s3_options)``: ``path`` is the JSON
    path of the document inside the received message ("" for the message
    itself) and ``depth`` the number of envelopes already unwrapped around it.
    """

    name: str
    shape: str
    recognizes: Callable[[object], bool]
    parse: Callable[[object, str, str, int, S3ParseOptions], ParseResult]


# --------------------------------------------------------------------------- JSON decoding


def _quote(name: str, limit: int = 40) -> str:
    """A member name as a bounded JSON string, for messages."""
    shown = json.dumps(name[:limit]) + ("..." if len(name) > limit else "")
    return shown


class _JsonError(ValueError):
    """Why a body is not acceptable JSON; its message and reason are the rejection's."""

    def __init__(self, message: str, reason: RejectReason = RejectReason.MALFORMED_JSON) -> None:
        super().__init__(message)
        self.reason = reason


def _refuse_constant(name: str) -> object:
    raise _JsonError(f"{name} is not valid JSON (RFC 8259 has no NaN or Infinity)")


def _unique_members(pairs: list[tuple[str, object]]) -> dict[str, object]:
    members: dict[str, object] = {}
    for name, value in pairs:
        if name in members:
            raise _JsonError(
                f"member name {_quote(name)} appears twice in one object: expected unique names"
            )
        members[name] = value
    return members


def _decode_json_text(text: str) -> object:
    """Strict JSON decoding of text; raises _JsonError with a clear message."""
    if nesting_exceeds(text):
        raise _JsonError(too_deep_message(_THE_BODY), RejectReason.NESTING_TOO_DEEP)
    try:
        return json.loads(text, parse_constant=_refuse_constant, object_pairs_hook=_unique_members)
    except json.JSONDecodeError as error:
        # Some of json's messages end with "at" ("Unterminated string starting at").
        what = error.msg.removesuffix(" at")
        raise _JsonError(
            f"the body is not valid JSON: {what} at line {error.lineno} column "
            f"{error.colno} (character {error.pos})"
        ) from None
    except _JsonError:
        raise
    except ValueError as error:  # e.g. an integer literal beyond the conversion limit
        raise _JsonError(f"the body is not acceptable JSON: {error}") from None


def _decode_json(raw: bytes) -> object:
    """Strict UTF-8 JSON decoding; raises _JsonError with a clear message."""
    body = raw[len(_BOM) :] if raw.startswith(_BOM) else raw
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as error:
        raise _JsonError(
            f"the body is not valid UTF-8 (byte 0x{body[error.start]:02X} at byte offset "
            f"{error.start + len(raw) - len(body)}: {error.reason}): expected UTF-8 JSON"
        ) from None
    return _decode_json_text(text)


# --------------------------------------------------------------------------- messages


def _describe(document: object) -> str:
    if isinstance(document, dict):
        names = [_quote(str(name)) for name in sorted(document, key=str)[:8]]
        more = ", ..." if len(document) > len(names) else ""
        return "a JSON object with members " + (", ".join(names) + more if names else "(none)")
    kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(document), "a number")


def _subject(path: str) -> str:
    """How messages name the document at ``path``."""
    return path if path else _THE_BODY


def _within(path: str, result: ParseResult) -> ParseResult:
    """Prefix the rejections of a parser that does not know where its document
    sits (the native S3 parser) with the document's path."""
    if not path:
        return result
    items: list[ParsedItem] = [
        dataclasses.replace(item, message=f"{path}: {item.message}")
        if isinstance(item, Rejection)
        else item
        for item in result.items
    ]
    return ParseResult(tuple(items))


def _too_deep(path: str, depth: int) -> ParseResult | None:
    if depth <= MAX_ENVELOPE_DEPTH:
        return None
    return ParseResult.rejected(
        RejectReason.NOT_A_NOTIFICATION,
        f"{_subject(path)} is nested {depth} envelopes deep: seqgate unwraps at most "
        f"{MAX_ENVELOPE_DEPTH} envelopes around a notification (an SNS notification "
        "read from SQS is 2)",
    )


# --------------------------------------------------------------------------- field limits

# Where the fields of events of the S3 family come from, for messages. The
# other providers' events name the field (their paths vary within a provider).
_S3_RECORD_PATHS: Final = {
    "bucket": "s3.bucket.name",
    "key": "s3.object.key",
    "event_name": "eventName",
    "position": "s3.object.sequencer",
    "version_id": "s3.object.versionId",
    "size": "s3.object.size",
    "etag": "s3.object.eTag",
    "event_time": "eventTime",
}
_EVENTBRIDGE_PATHS: Final = {
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


def _enforce_limits(
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


def _s3_records(document: object, origin: str, s3_options: S3ParseOptions) -> ParseResult:
    """The native S3 parser's result, held to the field limits."""
    result = parse_s3_records(document, origin, s3_options)
    return _enforce_limits(result, indexed=True, field_paths=_S3_RECORD_PATHS)


# --------------------------------------------------------------------------- dispatch


def normalize(
    raw: bytes, origin: str, s3_options: S3ParseOptions = DEFAULT_S3_PARSE_OPTIONS
) -> ParseResult:
    """Turn one received message body into events, rejections and ignore notes.

    ``origin`` says where the bytes came from and is copied into every event.
    Never raises: invalid input yields rejections (``record_index`` None for a
    whole message, the record's index for one bad record of a batch).
    """
    try:
        document = _decode_json(raw)
    except _JsonError as error:
        return ParseResult.rejected(error.reason, str(error))
    return normalize_document(document, origin, s3_options=s3_options)


def normalize_with(
    raw: bytes, origin: str, parse: Callable[[object, str], ParseResult]
) -> ParseResult:
    """Decode ``raw`` as strictly as :func:`normalize`, then parse it with ``parse``.

    For a receiver that knows its provider (an HTTP route with the provider's own
    authentication) and so needs no recognition. Its events are held to the field
    limits as :func:`normalize` holds them. Never raises if ``parse`` does not.
    """
    try:
        document = _decode_json(raw)
    except _JsonError as error:
        return ParseResult.rejected(error.reason, str(error))
    return _enforce_limits(parse(document, origin))


def normalize_document(
    document: object,
    origin: str,
    path: str = "",
    depth: int = 0,
    s3_options: S3ParseOptions = DEFAULT_S3_PARSE_OPTIONS,
) -> ParseResult:
    """Dispatch one decoded document to the first format that recognizes it.

    ``path`` is the document's JSON path inside the received message ("" for
    the message itself), used in messages; ``depth`` counts the envelopes
    already unwrapped around it. Never raises.
    """
    if (refused := _too_deep(path, depth)) is not None:
        return refused
    for parser in _PARSERS:
        if parser.recognizes(document):
            return parser.parse(document, origin, path, depth, s3_options)
    known = ", ".join(parser.name for parser in _PARSERS)
    return ParseResult.rejected(
        RejectReason.NOT_A_NOTIFICATION,
        f"{_subject(path)} is {_describe(document)}: expected one of: {known}"
        " (docs/envelopes.md says how each is recognized)",
    )


def normalize_text(
    text: str,
    origin: str,
    path: str,
    depth: int,
    s3_options: S3ParseOptions = DEFAULT_S3_PARSE_OPTIONS,
) -> ParseResult:
    """Decode an envelope's inner body (a JSON string) strictly, then dispatch it.

    The callback that envelopes use for their inner documents; a body that is
    not acceptable JSON is a ``malformed_json`` rejection naming ``path``.
    """
    if (refused := _too_deep(path, depth)) is not None:
        return refused
    body = text[len(_TEXT_BOM) :] if text.startswith(_TEXT_BOM) else text
    try:
        document = _decode_json_text(body)
    except _JsonError as error:
        # Name the inner body by its path where the decoder says "the body".
        message = str(error)
        if message.startswith(_THE_BODY):
            message = path + message.removeprefix(_THE_BODY)
        else:
            message = f"{path}: {message}"
        return ParseResult.rejected(error.reason, message)
    return normalize_document(document, origin, path, depth, s3_options)


def _inner(s3_options: S3ParseOptions) -> InnerParser:
    """The envelopes' callback for inner documents, carrying the S3 options along."""
    return functools.partial(normalize_text, s3_options=s3_options)


# --------------------------------------------------------------------------- formats


def _has_records(document: object) -> bool:
    return isinstance(document, dict) and ("Records" in document or "Event" in document)


def _is_sns_message(document: object) -> bool:
    return (
        isinstance(document, dict)
        and "Type" in document
        and ("TopicArn" in document or "Message" in document)
    )


def _is_sqs_receive_response(document: object) -> bool:
    return isinstance(document, dict) and "Messages" in document


def _is_eventbridge_event(document: object) -> bool:
    return isinstance(document, dict) and (
        "detail-type" in document or ("detail" in document and "source" in document)
    )


_SQS = "sqs"
_SNS = "sns"


def _record_source(record: object) -> str | None:
    """Which envelope a member of ``Records`` is, or None for an S3-family record."""
    if not isinstance(record, dict):
        return None
    if record.get("eventSource") == LAMBDA_SQS_EVENT_SOURCE:
        return _SQS
    if record.get("EventSource") == LAMBDA_SNS_EVENT_SOURCE:
        return _SNS
    return None


def _parse_records(
    document: object, origin: str, path: str, depth: int, s3_options: S3ParseOptions
) -> ParseResult:
    """A ``Records`` document: S3-family records, Lambda SQS or SNS records, or a mix."""
    records = document.get("Records") if isinstance(document, dict) else None
    if not isinstance(document, dict) or not isinstance(records, list):
        return _within(path, _s3_records(document, origin, s3_options))
    sources = [_record_source(record) for record in records]
    if not any(sources):
        return _within(path, _s3_records(document, origin, s3_options))
    # The S3 parser yields one item per record, in order, and names each by its
    # index: give it the whole list with the envelope records masked out, so
    # its messages keep the real indices, and take its items for S3 records.
    pairs = list(zip(records, sources, strict=True))
    s3_items: tuple[ParsedItem, ...] = ()
    if not all(sources):
        masked = [None if source else record for record, source in pairs]
        s3_items = _s3_records({**document, "Records": masked}, origin, s3_options).items
    records_path = member_path(path, "Records")
    parts: list[ParseResult] = []
    for index, (record, source) in enumerate(pairs):
        record_path = index_path(records_path, index)
        if source == _SQS:
            parts.append(
                parse_lambda_sqs_record(record, origin, record_path, depth, _inner(s3_options))
            )
        elif source == _SNS:
            parts.append(
                parse_lambda_sns_record(record, origin, record_path, depth, _inner(s3_options))
            )
        elif len(s3_items) == len(records):
            parts.append(_within(path, ParseResult.of(s3_items[index])))
        else:  # the S3 parser broke its one-item-per-record contract: parse alone
            alone = _s3_records({"Records": [record]}, origin, s3_options)
            parts.append(_within(record_path, alone))
    return concat(parts)


def _parse_sns(
    document: object, origin: str, path: str, depth: int, s3_options: S3ParseOptions
) -> ParseResult:
    return parse_sns_message(document, origin, path, depth, _inner(s3_options))


def _parse_sqs(
    document: object, origin: str, path: str, depth: int, s3_options: S3ParseOptions
) -> ParseResult:
    return parse_sqs_receive_response(document, origin, path, depth, _inner(s3_options))


def _parse_eventbridge(
    document: object, origin: str, path: str, depth: int, s3_options: S3ParseOptions
) -> ParseResult:
    # S3 always puts a sequencer in EventBridge events; the option is for native records.
    result = parse_eventbridge_event(document, origin, path)
    return _enforce_limits(result, path=path, field_paths=_EVENTBRIDGE_PATHS)


def _provider(parse: Callable[[object, str], ParseResult]) -> Callable[..., ParseResult]:
    """A provider parser that knows no envelope: it ignores path, depth and the S3 options."""

    def parse_document(
        document: object, origin: str, path: str, depth: int, s3_options: S3ParseOptions
    ) -> ParseResult:
        return _within(path, _enforce_limits(parse(document, origin)))

    return parse_document


# Tried in order; the first parser that recognizes the document handles it.
# The order matters: see the module docstring.
_PARSERS: Final[tuple[_Parser, ...]] = (
    _Parser(
        name="native S3 notification or Lambda event",
        shape="a JSON object with 'Records' or an 'Event'",
        recognizes=_has_records,
        parse=_parse_records,
    ),
    _Parser(
        name="SNS message",
        shape="'Type' with 'TopicArn' or 'Message'",
        recognizes=_is_sns_message,
        parse=_parse_sns,
    ),
    _Parser(
        name="SQS ReceiveMessage response",
        shape="'Messages'",
        recognizes=_is_sqs_receive_response,
        parse=_parse_sqs,
    ),
    _Parser(
        name="EventBridge event",
        shape="'detail-type', or 'detail' with 'source'",
        recognizes=_is_eventbridge_event,
        parse=_parse_eventbridge,
    ),
    _Parser(
        name="Google Cloud Storage (Pub/Sub)",
        shape="a push envelope 'message', a pulled message or 'receivedMessages'",
        recognizes=looks_like_gcs,
        parse=_provider(parse_gcs),
    ),
    _Parser(
        name="Azure Blob Storage (Event Grid)",
        shape="Event Grid events ('eventType') or CloudEvents ('Microsoft.*' 'type')",
        recognizes=looks_like_azure,
        parse=_provider(parse_azure),
    ),
    _Parser(
        name="Supabase Storage database webhook",
        shape="'type', 'table', 'schema' and 'record' or 'old_record'",
        recognizes=looks_like_supabase,
        parse=_provider(parse_supabase),
    ),
    _Parser(
        name="Backblaze B2 event notification",
        shape="'events'",
        recognizes=looks_like_b2,
        parse=_provider(parse_b2),
    ),
    _Parser(
        name="Box webhook",
        shape="'type' 'webhook_event' with 'trigger'",
        recognizes=looks_like_box,
        parse=_provider(parse_box),
    ),
)
