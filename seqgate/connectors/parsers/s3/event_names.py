"""Amazon S3's documented event names and the seqgate kind each one maps to.

A native S3 notification names what happened in ``eventName``, without the
``s3:`` prefix that notification *configurations* use (a rule selects
``s3:ObjectCreated:*``; the record then says ``ObjectCreated:Put``). This
module is the single table from those names to a *kind*, the provider-neutral
word that the processor filters and orders on (docs/design.md §2.2). Other parsers reuse
it: the MinIO table (:mod:`seqgate.connectors.parsers.s3.minio`) is built from the same
:class:`S3EventName` entries, and an envelope whose own vocabulary differs
(EventBridge's detail types) can translate into these kinds.

The kinds themselves, with their meanings and which of them are sequenced,
live in :mod:`seqgate.schemas.kinds`; this module only maps S3's names to them.

Deletions depend on the record: ``ObjectRemoved:Delete`` and
``LifecycleExpiration:Delete`` permanently delete what they name. With a
``versionId`` that is one version, and other versions (hence the key) may
remain: ``version_removed``. Without one the bucket is unversioned and the key
is gone: ``removed``. A delete marker (``...:DeleteMarkerCreated``) always
hides the key: ``removed`` (docs/kinds.md, "Versioned deletes").

Everything here is pure data and pure functions.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from seqgate.schemas.kinds import (
    ACCESS_TIER_CHANGED,
    ACL_CHANGED,
    CREATED,
    KIND_DESCRIPTIONS,
    OBJECT_LOST,
    REMOVED,
    REPLICATION_AFTER_THRESHOLD,
    REPLICATION_FAILED,
    REPLICATION_MISSED_THRESHOLD,
    REPLICATION_NOT_TRACKED,
    RESTORE_EXPIRED,
    RESTORE_STARTED,
    RESTORED,
    SEQUENCED_KINDS,
    STORAGE_CLASS_CHANGED,
    TAGS_CHANGED,
    VERSION_REMOVED,
)

__all__ = [
    "S3_EVENT_NAMES",
    "S3EventName",
    "event_name_info",
    "kind_for",
    "name_table",
    "summarize_names",
]


@dataclass(frozen=True, slots=True)
class S3EventName:
    """One documented event name and how its records are classified.

    ``kind`` applies to a record without a ``versionId``; ``versioned_kind``
    (when set) replaces it for a record that names one. ``description`` says
    what the name reports, for documentation.
    """

    name: str
    kind: str
    description: str
    versioned_kind: str | None = None

    def kind_for(self, version_id: str | None) -> str:
        """The kind of a record with this name and ``version_id`` (None: none given)."""
        if version_id is not None and self.versioned_kind is not None:
            return self.versioned_kind
        return self.kind

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds a record with this name can have: one, or two for a delete."""
        if self.versioned_kind is None or self.versioned_kind == self.kind:
            return (self.kind,)
        return (self.kind, self.versioned_kind)

    @property
    def sequencer_required(self) -> bool:
        """Whether every record with this name must carry a valid sequencer.

        True for the names whose kinds change content (:data:`SEQUENCED_KINDS`);
        otherwise the sequencer is optional (validated when present).
        """
        return any(kind in SEQUENCED_KINDS for kind in self.kinds)


def name_table(entries: Iterable[S3EventName]) -> Mapping[str, S3EventName]:
    """A read-only table ``name -> entry``, in the order given.

    Raises ValueError for a repeated name or an undocumented kind (a kind
    missing from :data:`KIND_DESCRIPTIONS`), so every table stays documented.
    """
    table: dict[str, S3EventName] = {}
    for entry in entries:
        if entry.name in table:
            raise ValueError(f"event name {entry.name!r} appears twice in one table")
        undocumented = [kind for kind in entry.kinds if kind not in KIND_DESCRIPTIONS]
        if undocumented:
            raise ValueError(
                f"event name {entry.name!r} maps to undocumented kind(s) {undocumented}: "
                "add them to KIND_DESCRIPTIONS"
            )
        table[entry.name] = entry
    return MappingProxyType(table)


def summarize_names(names: Iterable[str], excluded: Iterable[str] = ()) -> str:
    """A short list of event names for messages: ``ObjectCreated:*, ObjectAcl:Put, ...``.

    Names sharing a family (the text before their last ``:``) are written as
    ``family:*`` when the family has several names and none of ``excluded``
    (documented names that are not handled) belongs to it; otherwise each name
    is written out. Families keep the order of their first name.
    """
    excluded_families = {_family(name) for name in excluded}
    # A name without ':' is its own group: keyed by (name, False), families by (family, True).
    groups: dict[tuple[str, bool], list[str]] = {}
    for name in names:
        family = _family(name)
        key = (family, True) if family else (name, False)
        groups.setdefault(key, []).append(name)
    parts: list[str] = []
    for (family, is_family), members in groups.items():
        if is_family and len(members) > 1 and family not in excluded_families:
            parts.append(f"{family}:*")
        else:
            parts.extend(members)
    return ", ".join(parts)


def _family(name: str) -> str:
    """The text before the last ``:`` ("" for a name without one)."""
    family, _, _ = name.rpartition(":")
    return family


S3_EVENT_NAMES: Final = name_table(
    [
        S3EventName("ObjectCreated:Put", CREATED, "an object was written by a PUT request"),
        S3EventName("ObjectCreated:Post", CREATED, "an object was written by a browser POST"),
        S3EventName("ObjectCreated:Copy", CREATED, "an object was written by a COPY request"),
        S3EventName(
            "ObjectCreated:CompleteMultipartUpload",
            CREATED,
            "a multipart upload was completed into an object",
        ),
        S3EventName(
            "ObjectRemoved:Delete",
            REMOVED,
            "a DELETE permanently deleted the object (unversioned bucket) or the version "
            "named by versionId",
            versioned_kind=VERSION_REMOVED,
        ),
        S3EventName(
            "ObjectRemoved:DeleteMarkerCreated",
            REMOVED,
            "a DELETE on a versioned bucket created a delete marker that hides the key",
        ),
        S3EventName(
            "LifecycleExpiration:Delete",
            REMOVED,
            "a lifecycle rule permanently deleted the object (unversioned bucket) or the "
            "version named by versionId",
            versioned_kind=VERSION_REMOVED,
        ),
        S3EventName(
            "LifecycleExpiration:DeleteMarkerCreated",
            REMOVED,
            "a lifecycle rule expired the current version by creating a delete marker",
        ),
        S3EventName(
            "LifecycleTransition",
            STORAGE_CLASS_CHANGED,
            "a lifecycle rule transitioned the object to another storage class",
        ),
        S3EventName(
            "IntelligentTiering",
            ACCESS_TIER_CHANGED,
            "Intelligent-Tiering moved the object to the Archive or Deep Archive Access tier",
        ),
        S3EventName(
            "ObjectRestore:Post", RESTORE_STARTED, "a restore of an archived object was initiated"
        ),
        S3EventName(
            "ObjectRestore:Completed", RESTORED, "a restore of an archived object completed"
        ),
        S3EventName("ObjectRestore:Delete", RESTORE_EXPIRED, "the temporary restored copy expired"),
        S3EventName(
            "ObjectTagging:Put", TAGS_CHANGED, "tags were added to or replaced on the object"
        ),
        S3EventName("ObjectTagging:Delete", TAGS_CHANGED, "the object's tags were removed"),
        S3EventName("ObjectAcl:Put", ACL_CHANGED, "an ACL was set on the object"),
        S3EventName(
            "ReducedRedundancyLostObject",
            OBJECT_LOST,
            "S3 detected the loss of a Reduced Redundancy Storage object",
        ),
        S3EventName(
            "Replication:OperationFailedReplication",
            REPLICATION_FAILED,
            "the object failed to replicate",
        ),
        S3EventName(
            "Replication:OperationMissedThreshold",
            REPLICATION_MISSED_THRESHOLD,
            "replication exceeded the 15-minute Replication Time Control threshold",
        ),
        S3EventName(
            "Replication:OperationReplicatedAfterThreshold",
            REPLICATION_AFTER_THRESHOLD,
            "the object replicated after the Replication Time Control threshold",
        ),
        S3EventName(
            "Replication:OperationNotTracked",
            REPLICATION_NOT_TRACKED,
            "the object's replication is no longer tracked by replication metrics",
        ),
    ]
)
"""Every event name Amazon S3 documents for native notifications (``eventName``,
no ``s3:`` prefix). The test message ``s3:TestEvent`` is not an event name of a
record; the native parser ignores it at the document level."""


def event_name_info(event_name: str) -> S3EventName | None:
    """The table entry of a native S3 ``eventName``, or None when S3 documents no such name.

    Exact match only: an ``s3:``-prefixed name, a wildcard or another spelling is None.
    """
    return S3_EVENT_NAMES.get(event_name)


def kind_for(event_name: str, version_id: str | None) -> str | None:
    """The kind of a native S3 record, or None for an unknown ``event_name``.

    ``version_id`` is the record's ``versionId`` (None when absent or empty):
    it decides between ``removed`` and ``version_removed`` for the permanent
    deletes and is ignored for every other name.
    """
    info = S3_EVENT_NAMES.get(event_name)
    return None if info is None else info.kind_for(version_id)
