"""Every kind seqgate emits: the provider-neutral word for what happened to an object.

Each ``ObjectEvent`` carries the provider's own event type in ``event_name``
and one of these kinds in ``kind``; the processor filters and orders on the
kind (docs/design.md §2.2, docs/kinds.md). The parsers' tables map their
providers' event types to these kinds.

* Three kinds change *which content a key names*, so S3 always stamps them
  with the object's ``sequencer``, and the processor orders them by it:
  ``created``, ``removed`` and ``version_removed`` (:data:`SEQUENCED_KINDS`).
  A record of one of these kinds without a valid sequencer is rejected
  (``invalid_sequencer``).
* Every other kind reports something about an object whose content stays the
  same (a restore, a storage-class move, tags, an ACL, replication status, a
  lost RRS object). AWS documents the sequencer for writes and deletes only,
  so for these it is optional: absent means no position, present means it is
  validated like any other sequencer.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType
from typing import Final

__all__ = [
    "ACCESSED",
    "ACCESS_TIER_CHANGED",
    "ACL_CHANGED",
    "CREATED",
    "KIND_DESCRIPTIONS",
    "METADATA_CHANGED",
    "OBJECT_LOST",
    "REMOVED",
    "REPLICATION_AFTER_THRESHOLD",
    "REPLICATION_FAILED",
    "REPLICATION_MISSED_THRESHOLD",
    "REPLICATION_NOT_TRACKED",
    "RESTORED",
    "RESTORE_EXPIRED",
    "RESTORE_STARTED",
    "RETENTION_CHANGED",
    "SEQUENCED_KINDS",
    "STORAGE_CLASS_CHANGED",
    "TAGS_CHANGED",
    "TRANSITION_FAILED",
    "VERSION_REMOVED",
    "EventKind",
]


class EventKind(StrEnum):
    """What happened to the object; the meaning of each is in :data:`KIND_DESCRIPTIONS`."""

    CREATED = "created"
    REMOVED = "removed"
    VERSION_REMOVED = "version_removed"
    RESTORE_STARTED = "restore_started"
    RESTORED = "restored"
    RESTORE_EXPIRED = "restore_expired"
    OBJECT_LOST = "object_lost"
    REPLICATION_FAILED = "replication_failed"
    REPLICATION_MISSED_THRESHOLD = "replication_missed_threshold"
    REPLICATION_AFTER_THRESHOLD = "replication_after_threshold"
    REPLICATION_NOT_TRACKED = "replication_not_tracked"
    STORAGE_CLASS_CHANGED = "storage_class_changed"
    ACCESS_TIER_CHANGED = "access_tier_changed"
    TAGS_CHANGED = "tags_changed"
    ACL_CHANGED = "acl_changed"
    # Kinds only MinIO produces (seqgate.connectors.parsers.s3.minio).
    RETENTION_CHANGED = "retention_changed"
    ACCESSED = "accessed"
    TRANSITION_FAILED = "transition_failed"
    METADATA_CHANGED = "metadata_changed"


KIND_DESCRIPTIONS: Final[Mapping[EventKind, str]] = MappingProxyType(
    {
        EventKind.CREATED: "new content was written under the key (a new object, or a new "
        "version of it)",
        EventKind.REMOVED: "the key no longer names content: the object was deleted from an "
        "unversioned bucket, or a delete marker now hides it",
        EventKind.VERSION_REMOVED: "one version was permanently deleted; other versions, and "
        "so the key, may still exist",
        EventKind.RESTORE_STARTED: "a restore of an archived object was initiated",
        EventKind.RESTORED: "a restore completed: a temporary readable copy of the archived "
        "object exists",
        EventKind.RESTORE_EXPIRED: "the temporary restored copy expired; the archived object "
        "remains",
        EventKind.OBJECT_LOST: "S3 lost the object (Reduced Redundancy Storage); its content "
        "is gone",
        EventKind.REPLICATION_FAILED: "replicating the object to its destination failed",
        EventKind.REPLICATION_MISSED_THRESHOLD: "replication (with Replication Time Control) "
        "exceeded its time threshold",
        EventKind.REPLICATION_AFTER_THRESHOLD: "the object was replicated, but after the time "
        "threshold",
        EventKind.REPLICATION_NOT_TRACKED: "the object's replication is no longer tracked by "
        "replication metrics",
        EventKind.STORAGE_CLASS_CHANGED: "a lifecycle rule moved the object to another storage "
        "class or tier",
        EventKind.ACCESS_TIER_CHANGED: "S3 Intelligent-Tiering moved the object into an "
        "archive access tier",
        EventKind.TAGS_CHANGED: "the object's tags were set or deleted; its content is unchanged",
        EventKind.ACL_CHANGED: "the object's access control list was set; its content is unchanged",
        EventKind.RETENTION_CHANGED: "the object's lock retention or legal hold was set "
        "(MinIO); its content is unchanged",
        EventKind.ACCESSED: "the object or its metadata was read (MinIO); nothing changed",
        EventKind.TRANSITION_FAILED: "a lifecycle transition to a remote tier failed (MinIO); "
        "the object stays where it was",
        EventKind.METADATA_CHANGED: "the object's metadata, name or place changed; its content "
        "is unchanged (GCS metadata updates, Box moves and renames, Supabase and Appwrite row "
        "updates)",
    }
)
"""Every kind with its meaning (one line each), in the order of docs/kinds.md."""

SEQUENCED_KINDS: Final[frozenset[EventKind]] = frozenset(
    {EventKind.CREATED, EventKind.REMOVED, EventKind.VERSION_REMOVED}
)
"""Kinds that change the content a key names: the source always sends a
sequencer for them, and the processor orders them by it."""

# The kinds as plain str, for the parsers' tables: the codec and the field
# limits take only exact str values (type(value) is str), never an enum member.
CREATED: Final = EventKind.CREATED.value
REMOVED: Final = EventKind.REMOVED.value
VERSION_REMOVED: Final = EventKind.VERSION_REMOVED.value
RESTORE_STARTED: Final = EventKind.RESTORE_STARTED.value
RESTORED: Final = EventKind.RESTORED.value
RESTORE_EXPIRED: Final = EventKind.RESTORE_EXPIRED.value
OBJECT_LOST: Final = EventKind.OBJECT_LOST.value
REPLICATION_FAILED: Final = EventKind.REPLICATION_FAILED.value
REPLICATION_MISSED_THRESHOLD: Final = EventKind.REPLICATION_MISSED_THRESHOLD.value
REPLICATION_AFTER_THRESHOLD: Final = EventKind.REPLICATION_AFTER_THRESHOLD.value
REPLICATION_NOT_TRACKED: Final = EventKind.REPLICATION_NOT_TRACKED.value
STORAGE_CLASS_CHANGED: Final = EventKind.STORAGE_CLASS_CHANGED.value
ACCESS_TIER_CHANGED: Final = EventKind.ACCESS_TIER_CHANGED.value
TAGS_CHANGED: Final = EventKind.TAGS_CHANGED.value
ACL_CHANGED: Final = EventKind.ACL_CHANGED.value
RETENTION_CHANGED: Final = EventKind.RETENTION_CHANGED.value
ACCESSED: Final = EventKind.ACCESSED.value
TRANSITION_FAILED: Final = EventKind.TRANSITION_FAILED.value
METADATA_CHANGED: Final = EventKind.METADATA_CHANGED.value
