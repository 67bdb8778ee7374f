"""Parser for Amazon S3 events delivered by Amazon EventBridge.

With EventBridge enabled on a bucket, S3 sends every object event to the
default event bus in EventBridge's own envelope::

    {"version": "0", "id": "<uuid>", "detail-type": "Object Created",
     "source": "aws.s3", "account": "...", "time": "...", "region": "...",
     "resources": ["arn:aws:s3:::<bucket>"],
     "detail": {"version": "0", "bucket": {"name": "<bucket>"},
                "object": {"key": "<key>", "size": 5, "etag": "...",
                           "version-id": "...", "sequencer": "..."},
                "request-id": "...", "requester": "...",
                "source-ip-address": "...", "reason": "PutObject"}}

Differences from the native ``Records`` structure that matter here:

* the key is the object's real name, **not** form-encoded: it is used
  verbatim and never decoded (``a+b%20c`` is the object ``a+b%20c``);
* member names are kebab-case (``version-id``, ``detail-type``) and ``etag``
  is lower-case;
* one event per document, so a rejection is of the whole document
  (``record_index`` None); delivered through SQS, the batch numbers it;
* the event id is EventBridge's own ``id`` (docs/design.md §4.1).

The identity and the position are exactly what the native parser gives for
the same change: ``s3://<bucket>/<key>``, and the sequencer lowercased.

Rules, in the order they are checked (the first failure is the rejection):

==============================  ===============================================
field                           rule (reason when broken)
==============================  ===============================================
``source``                      exactly ``aws.s3`` (``wrong_event_source``)
``version``                     the EventBridge envelope version ``"0"``
                                (``unsupported_schema_version``)
``detail-type``                 a string (absent: ``missing_field``, another
                                type: ``invalid_field``) naming a supported
                                event, see below (``unsupported_event_type``)
``id``                          a non-empty string (``missing_field`` /
                                ``invalid_field``)
``detail``, ``detail.bucket``,  JSON objects (absent or null: ``missing_field``,
``detail.object``               another type: ``invalid_field``)
``detail.event-version``        optional; when present a string ``1.<minor>``
                                (``unsupported_schema_version``)
``detail.bucket.name``          a non-empty string without ``/``
``detail.object.key``           a non-empty string (``missing_field`` /
                                ``invalid_field``) that is text: a lone
                                surrogate escape is ``invalid_key_encoding``
``detail.object.sequencer``     non-empty hex: required for ``Object Created``
                                and ``Object Deleted``, optional for the other
                                types (position null when absent)
                                (``invalid_sequencer``)
``detail.deletion-type``        ``Object Deleted`` only: ``Delete Marker
                                Created`` or ``Permanently Deleted`` (absent:
                                ``missing_field``, another type:
                                ``invalid_field``, another value:
                                ``unsupported_event_type``)
``detail.object.version-id``,   optional strings: absent, null or empty mean
``detail.object.etag``,         None; another type is ``invalid_field``
``time``
``detail.object.size``          optional non-negative integer below 2**63
==============================  ===============================================

The event then passes :mod:`seqgate.schemas.limits` in :mod:`seqgate.connectors.parsers.normalize`
(lengths, text without lone surrogates), like every parser's.

``detail-type`` -> kind:

* ``Object Created`` -> ``created``;
* ``Object Deleted``: ``deletion-type`` ``Delete Marker Created`` ->
  ``removed``; ``Permanently Deleted`` -> ``version_removed`` when the event
  names a ``version-id`` (one version is gone, the key may still exist),
  otherwise ``removed`` (an unversioned bucket: the key is gone);
* the other S3 EventBridge types, see :data:`EVENTBRIDGE_KINDS`: restore
  initiated / completed / expired -> ``restore_started`` / ``restored`` /
  ``restore_expired``; tags added or deleted -> ``tags_changed``; ACL updated
  -> ``acl_changed``; storage class changed -> ``storage_class_changed``;
  access tier changed -> ``access_tier_changed``. They use the same kind
  strings as the native S3 event names of the same meaning;
* any other ``detail-type`` -> ``unsupported_event_type``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from seqgate.connectors.parsers.identity_check import checked_identity
from seqgate.connectors.parsers.json_fields import (
    check_constant,
    member_path,
    notification_object,
    object_member,
    optional_size,
    optional_string,
    required_member,
    required_string,
    sequencer_member,
    show,
)
from seqgate.connectors.parsers.results import ParseResult, result_or_rejection
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.identity import S3_SCHEME
from seqgate.schemas.kinds import (
    ACCESS_TIER_CHANGED,
    ACL_CHANGED,
    CREATED,
    REMOVED,
    RESTORE_EXPIRED,
    RESTORE_STARTED,
    RESTORED,
    STORAGE_CLASS_CHANGED,
    TAGS_CHANGED,
    VERSION_REMOVED,
)
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import S3_SOURCE

__all__ = [
    "EVENTBRIDGE_KINDS",
    "EVENTBRIDGE_S3_SOURCE",
    "OBJECT_CREATED",
    "OBJECT_DELETED",
    "SUPPORTED_DETAIL_TYPES",
    "parse_eventbridge_event",
]

EVENTBRIDGE_S3_SOURCE: Final = "aws.s3"
"""The only accepted ``source``."""

OBJECT_CREATED: Final = "Object Created"
OBJECT_DELETED: Final = "Object Deleted"

DELETE_MARKER_CREATED: Final = "Delete Marker Created"
PERMANENTLY_DELETED: Final = "Permanently Deleted"

EVENTBRIDGE_KINDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        OBJECT_CREATED: CREATED,
        "Object Restore Initiated": RESTORE_STARTED,
        "Object Restore Completed": RESTORED,
        "Object Restore Expired": RESTORE_EXPIRED,
        "Object Tags Added": TAGS_CHANGED,
        "Object Tags Deleted": TAGS_CHANGED,
        "Object ACL Updated": ACL_CHANGED,
        "Object Storage Class Changed": STORAGE_CLASS_CHANGED,
        "Object Access Tier Changed": ACCESS_TIER_CHANGED,
    }
)
"""Every supported ``detail-type`` but ``Object Deleted`` (whose kind depends
on ``detail.deletion-type``) and its kind. The kinds are those of
:mod:`seqgate.connectors.parsers.s3.event_names`, the table of the native S3 event names, so
the same change gets the same kind however it arrives (``Object Restore
Completed`` is ``ObjectRestore:Completed``, ``Object Tags Added`` is
``ObjectTagging:Put``, ...)."""

SUPPORTED_DETAIL_TYPES: Final = (OBJECT_CREATED, OBJECT_DELETED, *list(EVENTBRIDGE_KINDS)[1:])
"""Every ``detail-type`` this parser maps to a kind."""

_SEQUENCED: Final = frozenset({OBJECT_CREATED, OBJECT_DELETED})
"""Types for which S3 always sends a sequencer."""

_ENVELOPE_VERSION: Final = "0"
_SEQUENCED_WHY: Final = "S3 sends one with every object created or deleted event"
_AN_OBJECT: Final = "an object"  # how messages describe a missing JSON object
_EVENT_VERSION: Final = re.compile(r"1\.[0-9]+")


# --------------------------------------------------------------------------- checks


def _check_envelope(event: dict[object, object], path: str) -> None:
    check_constant(
        event,
        "source",
        path,
        EVENTBRIDGE_S3_SOURCE,
        reason=RejectReason.WRONG_EVENT_SOURCE,
        expected=f"expected {EVENTBRIDGE_S3_SOURCE!r} "
        "(seqgate reads Amazon S3 events from EventBridge)",
    )
    check_constant(
        event,
        "version",
        path,
        _ENVELOPE_VERSION,
        reason=RejectReason.UNSUPPORTED_SCHEMA_VERSION,
        expected=f'seqgate reads EventBridge envelope version "{_ENVELOPE_VERSION}"',
    )


def _check_event_version(detail: dict[object, object], path: str) -> None:
    version = detail.get("event-version")
    if version is None or (isinstance(version, str) and _EVENT_VERSION.fullmatch(version)):
        return
    raise RecordRejected(
        RejectReason.UNSUPPORTED_SCHEMA_VERSION,
        f"{member_path(path, 'event-version')} {show(version)} is not supported: seqgate "
        'reads S3 EventBridge event schema 1.x (e.g. "1.0")',
    )


def _detail_type(event: dict[object, object], path: str) -> str:
    field = member_path(path, "detail-type")
    value = required_member(
        event,
        "detail-type",
        path,
        str,
        missing=f"expected an S3 event type such as {OBJECT_CREATED!r}",
        invalid=f"a string such as {OBJECT_CREATED!r}",
    )
    if value not in SUPPORTED_DETAIL_TYPES:
        supported = ", ".join(SUPPORTED_DETAIL_TYPES)
        raise RecordRejected(
            RejectReason.UNSUPPORTED_EVENT_TYPE,
            f"{field} {show(value)} is not supported: seqgate handles {supported}",
        )
    return value


def _bucket_name(detail: dict[object, object], path: str) -> str:
    bucket_path = member_path(path, "bucket")
    bucket = object_member(detail, "bucket", path, expected=_AN_OBJECT)
    name = required_string(bucket, "name", bucket_path, "the bucket's name")
    if "/" in name:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{member_path(bucket_path, 'name')} {show(name)} contains '/': "
            "S3 bucket names never do",
        )
    return name


def _object_key(obj: dict[object, object], path: str) -> str:
    key = required_string(obj, "key", path, "the object's name (verbatim, not encoded)")
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as error:
        raise RecordRejected(
            RejectReason.INVALID_KEY_ENCODING,
            f"{member_path(path, 'key')} {show(key)} is not text: character "
            f"{key[error.start]!a} at offset {error.start} is a lone surrogate",
        ) from None
    return key


def _deleted_kind(detail: dict[object, object], version_id: str | None, path: str) -> str:
    field = member_path(path, "deletion-type")
    expected = f"{DELETE_MARKER_CREATED!r} or {PERMANENTLY_DELETED!r}"
    value = required_member(
        detail,
        "deletion-type",
        path,
        str,
        missing=f"an {OBJECT_DELETED!r} event says {expected}",
        invalid=expected,
    )
    if value == DELETE_MARKER_CREATED:
        return REMOVED
    if value == PERMANENTLY_DELETED:
        return REMOVED if version_id is None else VERSION_REMOVED
    raise RecordRejected(
        RejectReason.UNSUPPORTED_EVENT_TYPE,
        f"{field} {show(value)} is not supported: expected {expected}",
    )


# --------------------------------------------------------------------------- the event


def _parse(event: object, origin: str, path: str) -> ObjectEvent:
    event = notification_object(event, path, "an EventBridge event")
    _check_envelope(event, path)
    detail_type = _detail_type(event, path)
    event_id = required_string(event, "id", path, "the EventBridge event id")
    detail_path = member_path(path, "detail")
    detail = object_member(event, "detail", path, expected=_AN_OBJECT)
    _check_event_version(detail, detail_path)
    bucket = _bucket_name(detail, detail_path)
    object_path = member_path(detail_path, "object")
    obj = object_member(detail, "object", detail_path, expected=_AN_OBJECT)
    key = _object_key(obj, object_path)
    sequencer = sequencer_member(
        obj, object_path, required_because=_SEQUENCED_WHY if detail_type in _SEQUENCED else None
    )
    # Unlike the native parser, this one has never refused lone surrogates in
    # these three optional strings (text_only=False keeps its messages); the
    # field limits refuse them after parsing (seqgate.connectors.parsers.normalize).
    version_id = optional_string(obj, "version-id", object_path, text_only=False)
    if detail_type == OBJECT_DELETED:
        kind = _deleted_kind(detail, version_id, detail_path)
    else:
        kind = EVENTBRIDGE_KINDS[detail_type]
    size = optional_size(obj, "size", object_path)
    etag = optional_string(obj, "etag", object_path, text_only=False)
    event_time = optional_string(event, "time", path, text_only=False)
    checked_identity(S3_SCHEME, bucket, key, detail_path)
    return ObjectEvent(
        id=event_id,
        source=S3_SOURCE,
        bucket=bucket,
        key=key,
        kind=kind,
        event_name=detail_type,
        position=None if sequencer is None else sequencer.lower(),
        version_id=version_id,
        size=size,
        etag=etag,
        event_time=event_time,
        origin=origin,
    )


def parse_eventbridge_event(document: object, origin: str, path: str = "") -> ParseResult:
    """Normalize one S3 event from EventBridge (already JSON-decoded).

    ``path`` is the document's JSON path inside the received message ("" for
    the message itself, ``Messages[0].Body`` through SQS), used in messages;
    ``origin`` is copied into the event. Never raises: an invalid event is one
    whole-document rejection.
    """
    return result_or_rejection(lambda: ParseResult.of(_parse(document, origin, path)))
