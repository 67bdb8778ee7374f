"""Parser for native S3-style event notifications (the ``Records`` structure).

This is the document Amazon S3 itself writes (the body of an SQS message fed
directly by S3, the ``Message`` inside an SNS notification, a line of a replay
file), and the S3-shaped document MinIO writes (plain, or inside its
webhook/Kafka-target envelope ``{"EventName", "Key", "Records"}``, whose
top-level members are informational; see :mod:`seqgate.connectors.parsers.s3.minio`). Other
envelopes (SQS, SNS, EventBridge) are unwrapped elsewhere before this parser
sees the document.

Outcomes for one document:

* an ``s3:TestEvent`` (sent when a notification configuration is saved) is
  *ignored*: it describes no object, so it is neither work nor an error;
* a document that is not a JSON object, or has no non-empty ``Records`` list,
  is rejected as a whole (``not_a_notification``, ``record_index`` None);
* otherwise every record is parsed on its own: a valid record becomes an
  :class:`~seqgate.schemas.records.ObjectEvent`, an invalid one becomes a
  :class:`~seqgate.schemas.reasons.Rejection` carrying its index, and one bad record
  never hides the good records of the same message.

The parser is total: no input, however malformed, makes it raise.

Each record is routed by its ``eventSource``: ``aws:s3`` follows Amazon S3's
rules, ``minio:s3`` MinIO's (:mod:`seqgate.connectors.parsers.s3.minio`: schema ``2.0`` accepted,
``s3:``-prefixed names, scheme and source ``minio``), anything else is
``wrong_event_source``. Rules for each record, in the order they are checked
(the first failure is the rejection):

=========================  ===================================================
field                      rule (reason when broken)
=========================  ===================================================
record                     a JSON object (``not_a_notification``)
``eventSource``            ``aws:s3`` or ``minio:s3`` (``wrong_event_source``)
``eventVersion``           S3: a string ``2.<minor>``, minor >= 1 (a
                           compatibility floor: later 2.x minors are
                           accepted; ``2.0`` too with
                           :attr:`S3ParseOptions.schema_floor` ``"2.0"``);
                           MinIO: ``2.<minor>``, any minor
                           (``unsupported_schema_version``)
``eventName``              a name of the source's table, exact spelling
                           (``unsupported_event_type``), see below
``s3``, ``s3.bucket``,     JSON objects (absent or null: ``missing_field``,
``s3.object``              another type: ``invalid_field``)
``s3.bucket.name``         a non-empty string without ``/`` (absent, null or
                           empty: ``missing_field``; another type or a ``/``:
                           ``invalid_field``)
``s3.object.key``          a string (absent or null: ``missing_field``, another
                           type: ``invalid_field``), form-decoded exactly once
                           (``invalid_key_encoding``); an empty key names no
                           object (``missing_field``)
``s3.object.versionId``,   optional strings: absent, null or empty mean None;
``s3.object.eTag``,        another type is ``invalid_field``
``eventTime``
``s3.object.size``         optional non-negative integer below 2**63 (an Avro
                           long): absent or null mean None; anything else is
                           ``invalid_field``
``s3.object.sequencer``    a non-empty string of hex digits, any length
                           (``invalid_sequencer``); required (absent is
                           ``invalid_sequencer``) for the names whose kinds
                           change content, optional for the others; with
                           :attr:`S3ParseOptions.allow_missing_sequencer`,
                           absent (or null) is accepted for every name
=========================  ===================================================

The event then passes the field limits of :mod:`seqgate.schemas.limits` in
:mod:`seqgate.connectors.parsers.normalize` (a sequencer of at most 128 bytes, a key of at
most 4,096, ...): beyond one, the record is ``invalid_field`` there.

Event names and kinds: :mod:`seqgate.connectors.parsers.s3.event_names` holds Amazon S3's
documented names (without the ``s3:`` prefix) and :mod:`seqgate.connectors.parsers.s3.minio`
MinIO's (with it); ``docs/kinds.md`` lists both. A name outside the record's
table (an unknown name, a wildcard, an ``s3:``-prefixed name from Amazon S3,
an unprefixed one from MinIO) is ``unsupported_event_type``. The permanent
deletes (``ObjectRemoved:Delete``, ``LifecycleExpiration:Delete``) are
``version_removed`` when the record names a ``versionId`` (one version went
away; the key may still exist) and ``removed`` otherwise.

``position`` is the sequencer lowercased, or None when an optional sequencer
is absent.

Event id (docs/design.md §4.1): S3 and MinIO have no per-event id, so the id is derived
from the kind, the object identity and the sequencer in canonical form (S3:
the ``aws`` order's, lowercased with trailing zeros removed; MinIO: the
``numeric`` order's): a redelivery gets the same id, and so do two spellings
of one sequencer that the source's order calls equal. A record without a
sequencer (possible only for kinds that do not change content) falls back to
its version id, event time and ETag, and failing all three to a hash of the
whole record (:func:`~seqgate.connectors.parsers.s3.event_ids.fallback_event_id`).

Positionless producers: some S3-compatible systems and emulators (moto among
them) send created events without a sequencer. By default such a record stays
``invalid_sequencer``: Amazon S3 always sends one, so its absence means the
input is not what it claims to be. A bridge run with
``--allow-missing-sequencer`` (:class:`S3ParseOptions`) accepts it with
position None and the fallback id; the processor then treats the event as
dedupe-only, which keeps redeliveries out of the outbox but cannot tell an
older write delivered late from a newer one (docs/aws-setup.md).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

from seqgate.connectors.parsers.identity_check import checked_identity
from seqgate.connectors.parsers.json_fields import (
    check_text,
    notification_object,
    object_member,
    optional_size,
    optional_string,
    required_string,
    sequencer_member,
    show,
    supported_name,
)
from seqgate.connectors.parsers.results import (
    Ignored,
    ParseResult,
    parse_each,
    whole_message_rejection,
)
from seqgate.connectors.parsers.s3 import minio
from seqgate.connectors.parsers.s3.event_ids import fallback_event_id, s3_event_id
from seqgate.connectors.parsers.s3.event_names import S3_EVENT_NAMES, S3EventName, summarize_names
from seqgate.connectors.parsers.s3.object_keys import object_key
from seqgate.runtime.engines import ENGINES
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.identity import S3_SCHEME
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import MINIO_SOURCE, S3_SOURCE

__all__ = [
    "DEFAULT_S3_PARSE_OPTIONS",
    "S3_EVENT_SOURCE",
    "S3_TEST_EVENT",
    "SCHEMA_FLOORS",
    "ParseResult",
    "S3ParseOptions",
    "parse_s3_records",
]


S3_EVENT_SOURCE: Final = "aws:s3"
"""The ``eventSource`` of Amazon S3 records (MinIO's is ``minio:s3``)."""

S3_TEST_EVENT: Final = "s3:TestEvent"
"""The ``Event`` of the message S3 sends when a configuration is saved."""

_SCHEMA_VERSION: Final = re.compile(r"2\.([0-9]+)")
_SCHEMA_EXPECTATION: Final = "seqgate accepts S3 event schema 2.x with x >= 1"
_BELOW_FLOOR_HINT: Final = (
    " (the guide's floor); the sample events of the AWS SDKs, SAM and Lambda test tools"
    " carry 2.0: to accept them, run with --s3-schema-floor 2.0"
)
_LOWERED_EXPECTATION: Final = "seqgate accepts S3 event schema 2.x (--s3-schema-floor 2.0)"

SCHEMA_FLOORS: Final = ("2.1", "2.0")
"""The values of :attr:`S3ParseOptions.schema_floor`; the first is the default."""


@dataclass(frozen=True, slots=True)
class S3ParseOptions:
    """How strictly native S3-style records are read (set per bridge).

    ``allow_missing_sequencer``: accept a record without ``sequencer`` even for
    a name that changes content; its event has position None (dedupe-only
    downstream) and a fallback id. For S3-compatible producers that never send
    one; Amazon S3 always does, so the default refuses such records.

    ``schema_floor``: the lowest Amazon S3 ``eventVersion`` accepted. ``"2.1"`` is the
    guide's rule (its compatibility floor); ``"2.0"`` is the operator's choice, for the
    sample events the AWS SDKs, SAM (``sam local generate-event s3 put``) and Lambda test
    tools generate. It does not change MinIO's rule (every 2.x).

    ``engine``: ``"compiled"`` lets the compiled core read first the clean native S3
    documents it can prove it reads as these parsers do
    (:mod:`seqgate.connectors.parsers.compiled`: the same results, faster); ``"python"``
    (the default here; the command line's is compiled) uses these parsers alone, the
    reference.
    """

    allow_missing_sequencer: bool = False
    schema_floor: str = SCHEMA_FLOORS[0]
    engine: str = "python"

    def __post_init__(self) -> None:
        if self.schema_floor not in SCHEMA_FLOORS:
            raise ValueError(f"schema_floor {self.schema_floor!r}: expected one of {SCHEMA_FLOORS}")
        if self.engine not in ENGINES:
            raise ValueError(f"engine {self.engine!r}: expected one of {ENGINES}")


DEFAULT_S3_PARSE_OPTIONS: Final = S3ParseOptions()


# --------------------------------------------------------------------------- sources


@dataclass(frozen=True, slots=True)
class _Rules:
    """What depends on the record's ``eventSource``: Amazon S3's rules or MinIO's."""

    provider: str  # for messages: "Amazon S3", "MinIO"
    event_source: str
    source: str
    scheme: str
    names: Mapping[str, S3EventName]
    names_summary: str
    accepts_version: Callable[[str], bool]
    version_expectation: str
    event_id: Callable[[str, str, str], str]
    id_prefix: str
    name_hint: Callable[[str], str]  # extra detail for an unsupported name, or ""


def _accepts_s3_version(version: str) -> bool:
    match = _SCHEMA_VERSION.fullmatch(version)
    # minor >= 1 means a non-zero digit; no int() so any length is safe.
    return match is not None and bool(match[1].strip("0"))


def _s3_name_hint(name: str) -> str:
    if name.startswith("s3:"):
        return ": native S3 notifications name events without the 's3:' prefix"
    return ""


def _minio_name_hint(name: str) -> str:
    why = minio.MINIO_UNMAPPED_NAMES.get(name)
    if why is not None:
        return f" (a documented MinIO event that seqgate does not map: {why})"
    if not name.startswith("s3:") and (
        f"s3:{name}" in minio.MINIO_EVENT_NAMES or f"s3:{name}" in minio.MINIO_UNMAPPED_NAMES
    ):
        return ": MinIO names events with the 's3:' prefix"
    return ""


_S3_RULES: Final = _Rules(
    provider="Amazon S3",
    event_source=S3_EVENT_SOURCE,
    source=S3_SOURCE,
    scheme=S3_SCHEME,
    names=S3_EVENT_NAMES,
    names_summary="these Amazon S3 event names: " + summarize_names(S3_EVENT_NAMES),
    accepts_version=_accepts_s3_version,
    version_expectation=_SCHEMA_EXPECTATION,
    event_id=s3_event_id,
    id_prefix="s3-",
    name_hint=_s3_name_hint,
)

_MINIO_RULES: Final = _Rules(
    provider="MinIO",
    event_source=minio.MINIO_EVENT_SOURCE,
    source=MINIO_SOURCE,
    scheme=minio.MINIO_SCHEME,
    names=minio.MINIO_EVENT_NAMES,
    names_summary="these MinIO event names: " + minio.MINIO_NAMES_SUMMARY,
    accepts_version=minio.accepts_schema_version,
    version_expectation=minio.MINIO_SCHEMA_EXPECTATION,
    event_id=minio.minio_event_id,
    id_prefix="minio-",
    name_hint=_minio_name_hint,
)

_RULES_BY_SOURCE: Final[Mapping[str, _Rules]] = {
    rules.event_source: rules for rules in (_S3_RULES, _MINIO_RULES)
}


# --------------------------------------------------------------------------- records


def _rules_for(record: dict[object, object], path: str) -> _Rules:
    source = record.get("eventSource")
    if isinstance(source, str):
        rules = _RULES_BY_SOURCE.get(source)
        if rules is not None:
            return rules
    detail = "is missing" if source is None else f"is {show(source)}"
    raise RecordRejected(
        RejectReason.WRONG_EVENT_SOURCE,
        f"{path}.eventSource {detail}: expected {S3_EVENT_SOURCE!r} (Amazon S3) or "
        f"{minio.MINIO_EVENT_SOURCE!r} (MinIO): this parser reads their native notifications",
    )


def _check_version(
    record: dict[object, object], path: str, rules: _Rules, options: S3ParseOptions
) -> None:
    version = record.get("eventVersion")
    expectation = rules.version_expectation
    lowered = rules is _S3_RULES and options.schema_floor == "2.0"
    if lowered:
        expectation = _LOWERED_EXPECTATION
    if isinstance(version, str):
        if rules.accepts_version(version):
            return
        two = _SCHEMA_VERSION.fullmatch(version) is not None
        if lowered and two:
            return
        if two and rules is _S3_RULES:
            expectation += _BELOW_FLOOR_HINT
        detail = f"{show(version)} is not supported"
    elif version is None:
        detail = "is missing"
    else:
        detail = f'must be a string such as "2.1", got {show(version)}'
    raise RecordRejected(
        RejectReason.UNSUPPORTED_SCHEMA_VERSION,
        f"{path}.eventVersion {detail}: {expectation}",
    )


def _event_name(record: dict[object, object], path: str, rules: _Rules) -> S3EventName:
    name = supported_name(
        record,
        "eventName",
        path,
        rules.names,
        f"seqgate maps {rules.names_summary} (docs/kinds.md)",
        hint=rules.name_hint,
    )
    return rules.names[name]


def _bucket_name(s3: dict[object, object], s3_path: str) -> str:
    bucket_path = f"{s3_path}.bucket"
    name = required_string(
        object_member(s3, "bucket", s3_path), "name", bucket_path, "the bucket's name"
    )
    field = f"{bucket_path}.name"
    if "/" in name:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{field} {show(name)} contains '/': S3 and MinIO bucket names never do",
        )
    check_text(name, field)
    return name


def _sequencer(
    obj: dict[object, object],
    object_path: str,
    info: S3EventName,
    rules: _Rules,
    options: S3ParseOptions,
) -> str | None:
    """The record's sequencer; None only when it may be absent and is."""
    required = info.sequencer_required and not options.allow_missing_sequencer
    why = _missing_sequencer(rules.provider, info.name) if required else None
    return sequencer_member(obj, object_path, required_because=why)


@functools.cache  # a provider and a name of its table: a few dozen pairs, one per record
def _missing_sequencer(provider: str, name: str) -> str:
    """Why a record named ``name`` must carry a sequencer, for the refusal's message."""
    return (
        f"{provider} sends one with every {name} event: it is the event's position;"
        " for an S3-compatible producer that never sends one, run the bridge with"
        " --allow-missing-sequencer"
    )


def _parse_record(
    record: object, index: int, origin: str, options: S3ParseOptions = DEFAULT_S3_PARSE_OPTIONS
) -> ObjectEvent:
    """One record -> one event; raises RecordRejected for an invalid record."""
    path = f"Records[{index}]"
    record = notification_object(record, path, "one S3 event record")
    rules = _rules_for(record, path)
    _check_version(record, path, rules, options)
    info = _event_name(record, path, rules)
    s3_path = f"{path}.s3"
    s3 = object_member(record, "s3", path)
    bucket = _bucket_name(s3, s3_path)
    object_path = f"{s3_path}.object"
    obj = object_member(s3, "object", s3_path)
    key = object_key(obj, object_path)
    sequencer = _sequencer(obj, object_path, info, rules, options)
    version_id = optional_string(obj, "versionId", object_path)
    size = optional_size(obj, "size", object_path)
    etag = optional_string(obj, "eTag", object_path)
    event_time = optional_string(record, "eventTime", path)

    kind = info.kind_for(version_id)
    identity = checked_identity(rules.scheme, bucket, key, path)
    if sequencer is None:
        event_id = fallback_event_id(
            rules.id_prefix, kind, identity, version_id, event_time, etag, record
        )
    else:
        event_id = rules.event_id(kind, identity, sequencer)
    return ObjectEvent(
        id=event_id,
        source=rules.source,
        bucket=bucket,
        key=key,
        kind=kind,
        event_name=info.name,
        position=None if sequencer is None else sequencer.lower(),
        version_id=version_id,
        size=size,
        etag=etag,
        event_time=event_time,
        origin=origin,
    )


def parse_s3_records(
    document: object, origin: str, options: S3ParseOptions = DEFAULT_S3_PARSE_OPTIONS
) -> ParseResult:
    """Normalize one native S3 or MinIO notification document (already JSON-decoded).

    ``origin`` is copied into every event (``sqs:<queue>``, ``file:<path>:<line>``,
    ...). Never raises: every problem is reported in the result.
    """
    if not isinstance(document, dict):
        return whole_message_rejection(
            f"expected a native S3 notification (a JSON object with a 'Records' array), "
            f"got {show(document)}"
        )
    if document.get("Event") == S3_TEST_EVENT:
        return ParseResult.of(
            Ignored("s3_test_event", "S3 sends s3:TestEvent when a notification rule is saved")
        )
    records = document.get("Records")
    if not isinstance(records, list):
        detail = "has no 'Records'" if records is None else f"has 'Records' of {show(records)}"
        return whole_message_rejection(
            f"the document {detail}: expected a native S3 notification with a non-empty "
            f"'Records' array, or an {S3_TEST_EVENT}"
        )
    if not records:
        return whole_message_rejection("'Records' is empty: expected at least one S3 event record")

    return parse_each(records, lambda record, index: _parse_record(record, index, origin, options))
