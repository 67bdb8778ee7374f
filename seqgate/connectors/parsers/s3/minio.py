"""MinIO bucket notifications: the rules that differ from Amazon S3's.

MinIO writes S3-shaped records, so :func:`seqgate.connectors.parsers.s3.native.parse_s3_records`
reads them with the same field checks and routes every record by its
``eventSource``: ``aws:s3`` gets Amazon S3's rules, ``minio:s3`` the rules
defined here. This module holds only data and pure functions, no parsing loop.

How a MinIO record differs from a native S3 record:

``eventSource``
    ``minio:s3``. Events are given ``source`` ``minio`` and identities in the
    ``minio`` scheme (``minio://<bucket>/<key>``), so a MinIO object never
    shares an identity, a partition key or an event id with an S3 object of
    the same bucket and key.
``eventVersion``
    MinIO sends ``2.0``, which Amazon S3's rule (2.x with x >= 1) refuses.
    For MinIO records any ``2.<minor>`` is accepted, ``2.0`` included; another
    major version is ``unsupported_schema_version``.
``eventName``
    With the ``s3:`` prefix (``s3:ObjectCreated:Put``), and MinIO's own
    vocabulary; see :data:`MINIO_EVENT_NAMES` for the mapping and
    :data:`MINIO_UNMAPPED_NAMES` for the documented names deliberately left
    unsupported. MinIO files ``PutRetention``, ``PutLegalHold``, ``PutTagging``
    and ``DeleteTagging`` under ``ObjectCreated``, but those requests change
    metadata of an existing version and write no content: mapping them to
    ``created`` would make a consumer re-fetch an unchanged object and, under
    the ``created``-only default policy, would let a tag change advance the
    watermark as if it were a new write. They get ``retention_changed`` and
    ``tags_changed`` instead.
``s3.object.key``
    Escaped with Go's ``url.QueryEscape``: unreserved ``A-Za-z0-9-_.~`` kept,
    a space written ``+``, every other byte ``%XX`` (so ``/`` is ``%2F`` and a
    literal ``+`` is ``%2B``). That is form encoding, so the key is decoded
    exactly once by the same strict decoder as S3's
    (:func:`seqgate.connectors.parsers.s3.object_keys.decode_form_key`).
``s3.object.sequencer``
    MinIO's node clock: the event time in nanoseconds, in uppercase hex
    (``17A6B2C3D4E5F607``). It is required, and must be hex, for the kinds
    that change content (``created``, ``removed``, ``version_removed``);
    optional but validated for the others. ``position`` is the sequencer
    lowercased. Clocks of different nodes are not ordered, so docs/design.md §3 makes
    MinIO dedupe-only by default (ordered by option for a single node); that
    trust is the processor's decision, not the parser's.
event id
    MinIO has no per-event id. As for S3 (docs/design.md §4.1) the id is derived from
    the kind, the identity (scheme ``minio``) and the sequencer in canonical
    form, here the ``numeric`` order's (lowercase, leading zeros removed)
    because MinIO positions compare numerically: see :func:`minio_event_id`.

The webhook and Kafka targets wrap each record as
``{"EventName": ..., "Key": ..., "Records": [record]}``. ``EventName`` copies
the record's name and ``Key`` is MinIO's ``<bucket>/<key>`` built from the
record (with the key unescaped). Both are informational: the record is what
MinIO itself derived them from, so it is the one source of truth and the
envelope members are neither required nor compared (a disagreement could only
make seqgate reject a valid record). A plain ``{"Records": [...]}`` document
and the envelope therefore give identical events.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from seqgate.connectors.parsers.s3.event_names import S3EventName, name_table, summarize_names
from seqgate.schemas.identity import sequencer_event_id
from seqgate.schemas.kinds import (
    ACCESSED,
    CREATED,
    REMOVED,
    RESTORE_STARTED,
    RESTORED,
    RETENTION_CHANGED,
    STORAGE_CLASS_CHANGED,
    TAGS_CHANGED,
    TRANSITION_FAILED,
    VERSION_REMOVED,
)
from seqgate.schemas.ordering import NUMERIC_SEQUENCER_ORDER

__all__ = [
    "MINIO_EVENT_NAMES",
    "MINIO_EVENT_SOURCE",
    "MINIO_NAMES_SUMMARY",
    "MINIO_SCHEMA_EXPECTATION",
    "MINIO_SCHEME",
    "MINIO_UNMAPPED_NAMES",
    "accepts_schema_version",
    "minio_event_id",
    "minio_event_name_info",
    "minio_kind_for",
]

MINIO_EVENT_SOURCE: Final = "minio:s3"
"""The ``eventSource`` of MinIO records."""


MINIO_SCHEME: Final = "minio"
"""The identity scheme of MinIO objects: ``minio://<bucket>/<key>``."""

MINIO_SCHEMA_EXPECTATION: Final = (
    "seqgate accepts MinIO event schema 2.x (MinIO sends 2.0) for eventSource 'minio:s3'"
)

_SCHEMA_VERSION: Final = re.compile(r"2\.[0-9]+")


def _created(name: str, how: str) -> S3EventName:
    return S3EventName(f"s3:ObjectCreated:{name}", CREATED, how)


def _accessed(name: str, how: str) -> S3EventName:
    return S3EventName(f"s3:ObjectAccessed:{name}", ACCESSED, how)


MINIO_EVENT_NAMES: Final = name_table(
    [
        _created("Put", "an object was written by a PUT request"),
        _created("Post", "an object was written by a browser POST (POST policy)"),
        _created("Copy", "an object was written by a COPY request"),
        _created("CompleteMultipartUpload", "a multipart upload was completed into an object"),
        S3EventName(
            "s3:ObjectCreated:PutRetention",
            RETENTION_CHANGED,
            "an object lock retention was set on the object (no content written)",
        ),
        S3EventName(
            "s3:ObjectCreated:PutLegalHold",
            RETENTION_CHANGED,
            "a legal hold was set on the object (no content written)",
        ),
        S3EventName(
            "s3:ObjectCreated:PutTagging",
            TAGS_CHANGED,
            "tags were set on the object (no content written)",
        ),
        S3EventName(
            "s3:ObjectCreated:DeleteTagging",
            TAGS_CHANGED,
            "the object's tags were removed (no content written)",
        ),
        S3EventName(
            "s3:ObjectRemoved:Delete",
            REMOVED,
            "a DELETE removed the object (unversioned bucket) or the version named by versionId",
            versioned_kind=VERSION_REMOVED,
        ),
        S3EventName(
            "s3:ObjectRemoved:DeleteMarkerCreated",
            REMOVED,
            "a DELETE on a versioned bucket created a delete marker that hides the key",
        ),
        _accessed("Get", "the object was read (GET)"),
        _accessed("Head", "the object's metadata was read (HEAD)"),
        _accessed("GetRetention", "the object's retention was read"),
        _accessed("GetLegalHold", "the object's legal hold was read"),
        _accessed("Attributes", "the object's attributes were read (GetObjectAttributes)"),
        S3EventName(
            "s3:ObjectRestore:Post",
            RESTORE_STARTED,
            "a restore of a transitioned object from its remote tier was initiated",
        ),
        S3EventName(
            "s3:ObjectRestore:Completed",
            RESTORED,
            "a restore of a transitioned object from its remote tier completed",
        ),
        S3EventName(
            "s3:ObjectTransition:Complete",
            STORAGE_CLASS_CHANGED,
            "a lifecycle rule transitioned the object to a remote tier",
        ),
        S3EventName(
            "s3:ObjectTransition:Failed",
            TRANSITION_FAILED,
            "a lifecycle transition of the object to a remote tier failed",
        ),
    ]
)
"""The MinIO event names seqgate maps to a kind (``eventName``, with ``s3:``)."""

MINIO_UNMAPPED_NAMES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "s3:ObjectRemoved:NoOP": "a DELETE of an object that did not exist: nothing changed",
        "s3:ObjectRemoved:DeleteAllVersions": "a force delete (x-minio-force-delete) whose key "
        "may be a prefix rather than one object, so it names no single identity",
        "s3:ObjectReplication:Failed": "MinIO replication status; not mapped yet",
        "s3:ObjectReplication:Complete": "MinIO replication status; not mapped yet",
        "s3:ObjectReplication:MissedThreshold": "MinIO replication status; not mapped yet",
        "s3:ObjectReplication:ReplicatedAfterThreshold": "MinIO replication status; not mapped yet",
        "s3:ObjectReplication:NotTracked": "MinIO replication status; not mapped yet",
        "s3:Scanner:ManyVersions": "a scanner warning about an object with many versions, "
        "not a change",
        "s3:Scanner:BigPrefix": "a scanner warning about a prefix with many objects, not a change",
        "s3:BucketCreated": "a bucket event: it names no object",
        "s3:BucketRemoved": "a bucket event: it names no object",
    }
)
"""Documented MinIO event names that seqgate deliberately does not map, and why.
Records with these names are rejected as ``unsupported_event_type``."""

MINIO_NAMES_SUMMARY: Final = summarize_names(MINIO_EVENT_NAMES, MINIO_UNMAPPED_NAMES)
"""The handled names, briefly, for rejection messages."""


def minio_event_name_info(event_name: str) -> S3EventName | None:
    """The table entry of a MinIO ``eventName`` (with ``s3:``), or None when unmapped."""
    return MINIO_EVENT_NAMES.get(event_name)


def minio_kind_for(event_name: str, version_id: str | None) -> str | None:
    """The kind of a MinIO record, or None for an unmapped ``event_name``.

    ``version_id`` (None when absent or empty) decides between ``removed`` and
    ``version_removed`` for ``s3:ObjectRemoved:Delete``.
    """
    info = MINIO_EVENT_NAMES.get(event_name)
    return None if info is None else info.kind_for(version_id)


def accepts_schema_version(version: str) -> bool:
    """Whether a MinIO record's ``eventVersion`` is supported: ``2.<minor>``, any minor."""
    return _SCHEMA_VERSION.fullmatch(version) is not None


def minio_event_id(kind: str, identity: str, sequencer: str) -> str:
    """The stable id of a MinIO event (docs/design.md §4.1).

    ``"minio-"`` + the first 32 hex digits of SHA-256 over kind, identity and
    the sequencer's canonical form under the ``numeric`` order, joined by
    U+001F: the same construction as :func:`seqgate.connectors.parsers.s3.event_ids.s3_event_id`,
    with MinIO's comparison. ``identity`` is in the ``minio`` scheme, so the
    id never equals an S3 event's. Raises ValueError when ``sequencer`` is not hex.
    """
    return sequencer_event_id(
        "minio-", kind, identity, NUMERIC_SEQUENCER_ORDER.canonical(sequencer)
    )
