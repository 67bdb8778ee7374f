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
      event (split per record)
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

A ``Records`` document is split record by record on each record's source
(:mod:`seqgate.connectors.parsers.records_document`): Lambda SQS and SNS
records are envelopes, every other record goes to the native S3 parser.

Envelopes may be nested at most :data:`MAX_ENVELOPE_DEPTH` deep (an SNS
notification delivered to SQS and read as a ``ReceiveMessage`` response is
2); a deeper inner document is rejected as ``not_a_notification`` naming its
path, so a hostile message cannot make the bridge recurse without bound.

``s3_options`` (:class:`~seqgate.connectors.parsers.s3.native.S3ParseOptions`) reaches the
native S3 parser through every envelope, so a bridge's
``--allow-missing-sequencer`` applies whether S3 records arrive plain, through
SNS or through SQS.

JSON decoding is strict (:mod:`seqgate.connectors.parsers.strict_json`): the
exact bytes may be rejected and reread by other tools. A decoding failure
is a rejection of the whole message for the received bytes, of that part for
an inner body (the message names the body's JSON path, e.g.
``Messages[1].Body``). A document of a shape no parser recognizes is rejected
as ``not_a_notification``.

Every event a parser builds must then fit the field limits
(:mod:`seqgate.connectors.parsers.field_limits`): one that does not becomes an
``invalid_field`` rejection in its place. Nothing here raises.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from seqgate.connectors.errors import JsonRefused
from seqgate.connectors.parsers.azure import looks_like_azure, parse_azure
from seqgate.connectors.parsers.b2 import looks_like_b2, parse_b2
from seqgate.connectors.parsers.box import looks_like_box, parse_box
from seqgate.connectors.parsers.compiled import compiled_s3_events
from seqgate.connectors.parsers.field_limits import EVENTBRIDGE_PATHS, enforce_limits
from seqgate.connectors.parsers.gcs import looks_like_gcs, parse_gcs
from seqgate.connectors.parsers.records_document import parse_records_document
from seqgate.connectors.parsers.results import ParseResult, in_document
from seqgate.connectors.parsers.s3.envelopes import (
    InnerParser,
    parse_sns_message,
    parse_sqs_receive_response,
)
from seqgate.connectors.parsers.s3.eventbridge import parse_eventbridge_event
from seqgate.connectors.parsers.s3.native import DEFAULT_S3_PARSE_OPTIONS, S3ParseOptions
from seqgate.connectors.parsers.strict_json import (
    THE_BODY,
    decode_json,
    decode_json_text,
    quote_name,
)
from seqgate.connectors.parsers.supabase import looks_like_supabase, parse_supabase
from seqgate.schemas.reasons import RejectReason

__all__ = ["MAX_ENVELOPE_DEPTH", "ParseResult", "normalize", "normalize_document", "normalize_with"]

MAX_ENVELOPE_DEPTH: Final = 4
"""How many envelopes may be unwrapped around one notification."""

_TEXT_BOM: Final = "\ufeff"


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


# --------------------------------------------------------------------------- messages


def _describe(document: object) -> str:
    if isinstance(document, dict):
        names = [quote_name(str(name)) for name in sorted(document, key=str)[:8]]
        more = ", ..." if len(document) > len(names) else ""
        return "a JSON object with members " + (", ".join(names) + more if names else "(none)")
    kinds = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(document), "a number")


def _subject(path: str) -> str:
    """How messages name the document at ``path``."""
    return path if path else THE_BODY


def _too_deep(path: str, depth: int) -> ParseResult | None:
    if depth <= MAX_ENVELOPE_DEPTH:
        return None
    return ParseResult.rejected(
        RejectReason.NOT_A_NOTIFICATION,
        f"{_subject(path)} is nested {depth} envelopes deep: seqgate unwraps at most "
        f"{MAX_ENVELOPE_DEPTH} envelopes around a notification (an SNS notification "
        "read from SQS is 2)",
    )


# --------------------------------------------------------------------------- dispatch


def normalize(
    raw: bytes, origin: str, s3_options: S3ParseOptions = DEFAULT_S3_PARSE_OPTIONS
) -> ParseResult:
    """Turn one received message body into events, rejections and ignore notes.

    ``origin`` says where the bytes came from and is copied into every event.
    Never raises: invalid input yields rejections (``record_index`` None for a
    whole message, the record's index for one bad record of a batch). With
    ``s3_options.engine`` ``"compiled"``, the compiled core reads the clean native S3
    documents first (:mod:`seqgate.connectors.parsers.compiled`).
    """
    if s3_options.engine == "compiled":
        compiled = compiled_s3_events(raw, origin, s3_options.schema_floor)
        if compiled is not None:
            return compiled
    try:
        document = decode_json(raw)
    except JsonRefused as error:
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
        document = decode_json(raw)
    except JsonRefused as error:
        return ParseResult.rejected(error.reason, str(error))
    return enforce_limits(parse(document, origin))


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
        document = decode_json_text(body)
    except JsonRefused as error:
        # Name the inner body by its path where the decoder says "the body".
        message = str(error)
        if message.startswith(THE_BODY):
            message = path + message.removeprefix(THE_BODY)
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


def _parse_records(
    document: object, origin: str, path: str, depth: int, s3_options: S3ParseOptions
) -> ParseResult:
    return parse_records_document(document, origin, path, depth, s3_options, _inner(s3_options))


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
    return enforce_limits(result, path=path, field_paths=EVENTBRIDGE_PATHS)


def _provider(parse: Callable[[object, str], ParseResult]) -> Callable[..., ParseResult]:
    """A provider parser that knows no envelope: it ignores path, depth and the S3 options."""

    def parse_document(
        document: object, origin: str, path: str, depth: int, s3_options: S3ParseOptions
    ) -> ParseResult:
        return in_document(path, enforce_limits(parse(document, origin)))

    return parse_document


# Tried in order; the first parser that recognizes the document handles it.
# The order matters: see the module docstring.
_PARSERS: Final[tuple[_Parser, ...]] = (
    _Parser(
        "native S3 notification or Lambda event",
        "a JSON object with 'Records' or an 'Event'",
        _has_records,
        _parse_records,
    ),
    _Parser("SNS message", "'Type' with 'TopicArn' or 'Message'", _is_sns_message, _parse_sns),
    _Parser("SQS ReceiveMessage response", "'Messages'", _is_sqs_receive_response, _parse_sqs),
    _Parser(
        "EventBridge event",
        "'detail-type', or 'detail' with 'source'",
        _is_eventbridge_event,
        _parse_eventbridge,
    ),
    _Parser(
        "Google Cloud Storage (Pub/Sub)",
        "a push envelope 'message', a pulled message or 'receivedMessages'",
        looks_like_gcs,
        _provider(parse_gcs),
    ),
    _Parser(
        "Azure Blob Storage (Event Grid)",
        "Event Grid events ('eventType') or CloudEvents ('Microsoft.*' 'type')",
        looks_like_azure,
        _provider(parse_azure),
    ),
    _Parser(
        "Supabase Storage database webhook",
        "'type', 'table', 'schema' and 'record' or 'old_record'",
        looks_like_supabase,
        _provider(parse_supabase),
    ),
    _Parser("Backblaze B2 event notification", "'events'", looks_like_b2, _provider(parse_b2)),
    _Parser(
        "Box webhook", "'type' 'webhook_event' with 'trigger'", looks_like_box, _provider(parse_box)
    ),
)
