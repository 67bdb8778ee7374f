"""A ``Records`` document: S3-family records, Lambda SQS or SNS records, or a mix.

A ``Records`` document is routed record by record on each record's source:
``eventSource`` ``aws:sqs`` is a Lambda SQS message (its ``body`` is an inner
document), ``EventSource`` ``aws:sns`` (Lambda's spelling) is a Lambda SNS
record (its ``Sns.Message`` is an inner document), and every other record
(``aws:s3``, ``minio:s3``, anything wrong) goes to the native S3 parser, which
rejects a foreign source as ``wrong_event_source``. When no record is an SQS
or SNS message the whole document goes to the S3 parser unchanged; a mixed
batch is parsed record by record, each by its own source, and the results are
concatenated in record order.

``path`` is the document's JSON path inside the received message and
``inner`` decodes and dispatches an envelope's inner document
(:func:`seqgate.connectors.parsers.normalize.normalize_text`).
"""

from __future__ import annotations

from typing import Final

from seqgate.connectors.parsers.field_limits import S3_RECORD_PATHS, enforce_limits
from seqgate.connectors.parsers.json_fields import index_path, member_path
from seqgate.connectors.parsers.results import ParsedItem, ParseResult, concat, in_document
from seqgate.connectors.parsers.s3.envelopes import (
    LAMBDA_SNS_EVENT_SOURCE,
    LAMBDA_SQS_EVENT_SOURCE,
    InnerParser,
    parse_lambda_sns_record,
    parse_lambda_sqs_record,
)
from seqgate.connectors.parsers.s3.native import S3ParseOptions, parse_s3_records

__all__ = ["parse_records_document"]


def _s3_records(document: object, origin: str, s3_options: S3ParseOptions) -> ParseResult:
    """The native S3 parser's result, held to the field limits."""
    result = parse_s3_records(document, origin, s3_options)
    return enforce_limits(result, indexed=True, field_paths=S3_RECORD_PATHS)


_SQS: Final = "sqs"
_SNS: Final = "sns"


def _record_source(record: object) -> str | None:
    """Which envelope a member of ``Records`` is, or None for an S3-family record."""
    if not isinstance(record, dict):
        return None
    if record.get("eventSource") == LAMBDA_SQS_EVENT_SOURCE:
        return _SQS
    if record.get("EventSource") == LAMBDA_SNS_EVENT_SOURCE:
        return _SNS
    return None


def parse_records_document(
    document: object,
    origin: str,
    path: str,
    depth: int,
    s3_options: S3ParseOptions,
    inner: InnerParser,
) -> ParseResult:
    """A ``Records`` document: S3-family records, Lambda SQS or SNS records, or a mix."""
    records = document.get("Records") if isinstance(document, dict) else None
    if not isinstance(document, dict) or not isinstance(records, list):
        return in_document(path, _s3_records(document, origin, s3_options))
    sources = [_record_source(record) for record in records]
    if not any(sources):
        return in_document(path, _s3_records(document, origin, s3_options))
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
            parts.append(parse_lambda_sqs_record(record, origin, record_path, depth, inner))
        elif source == _SNS:
            parts.append(parse_lambda_sns_record(record, origin, record_path, depth, inner))
        elif len(s3_items) == len(records):
            parts.append(in_document(path, ParseResult.of(s3_items[index])))
        else:  # the S3 parser broke its one-item-per-record contract: parse alone
            alone = _s3_records({"Records": [record]}, origin, s3_options)
            parts.append(in_document(record_path, alone))
    return concat(parts)
