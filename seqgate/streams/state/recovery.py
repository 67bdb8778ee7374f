"""Opening a partition's store so that what it holds can be trusted, or rebuilding it.

The changelog is the state; a store is only a local copy of a prefix of it, and
rebuilding one from the changelog is always correct. So a store that cannot be
trusted is never repaired or refused: it is moved aside (kept for inspection,
as `<partition dir>.<reason>-<UTC timestamp>`) and a new one is restored from
the changelog. Untrusted means (`Rebuild.reason`):

* `damaged`: RocksDB reports corruption (at open, in the restore, or later on a
  read or write: `StateDamaged`);
* `foreign`: its identity record names another application, input topic or
  partition (a directory copied to the wrong place, a backup restored there);
* `recreated`: it mirrors an earlier changelog topic of the same name (the
  topic id differs);
* `ahead`: it reflects changelog offsets the changelog does not have (the
  changelog lost its tail);
* `behind`: the changelog no longer holds the offsets that follow the store's (records
  deleted from its start): what the store lacks cannot be read any more, so the store
  is not a prefix of the changelog;
* `unrecorded`: it was written before stores recorded their identity, so nothing
  tells whose state it is. Rebuilt once, and deleted rather than moved aside:
  keeping a copy of every store at the upgrade could fill the disk.

A directory that cannot be used at all (disk full, locked by another process,
not writable) is not damaged: `StateUnavailable` goes up to the caller, since a
rebuild in the same place would fail the same way.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.streams.errors import (
    ChangelogBehind,
    StateDamaged,
    StateError,
    StateRecoveryError,
    StoreBehind,
)
from seqgate.streams.state.store import PartitionStore, StateDirectory, StoreIdentity

# Rebuilds of one partition in a row (one assignment or one damage) before giving
# up: a store damaged again right after its rebuild points at the disk, not at the data.
MAX_REBUILDS = 3


@dataclass(frozen=True, slots=True)
class Rebuild:
    """One store found untrustworthy and replaced by a rebuild from the changelog."""

    partition: int
    reason: str  # damaged, foreign, recreated, ahead, behind, unrecorded
    why: str  # the true cause, one line
    path: Path
    moved_to: Path | None  # None: deleted (reason unrecorded)

    def describe(self) -> str:
        kept = f"moved to {self.moved_to}" if self.moved_to is not None else "deleted"
        return (
            f"state of partition {self.partition} rebuilt from the changelog: {self.why};"
            f" the old store was {kept}"
        )


def changelog_topic_id(kafka: KafkaSettings, topic: str, timeout: float) -> str:
    """The changelog topic's id: it changes when the topic is deleted and created again."""
    admin = AdminClient(client_config(kafka))
    deadline = time.monotonic() + timeout
    while True:
        try:
            future = admin.describe_topics(TopicCollection([topic]))[topic]
            description = future.result(max(0.1, deadline - time.monotonic()))
            return str(description.topic_id)
        except KafkaException as error:
            cause = error.args[0]
            missing = (
                isinstance(cause, KafkaError) and cause.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
            )
            if missing and time.monotonic() < deadline:
                # A topic created a moment ago may not be in the broker's metadata yet.
                time.sleep(0.2)
                continue
            if missing:
                raise StateRecoveryError(
                    f"changelog topic {topic} does not exist: create it (seqgate topics create)"
                ) from None
            text = cause.str() if isinstance(cause, KafkaError) else str(cause)
            raise StateRecoveryError(f"cannot describe changelog topic {topic}: {text}") from None


def move_aside(path: Path, reason: str, now: datetime | None = None) -> Path:
    """Rename a store directory to `<path>.<reason>-<UTC timestamp>` (never over another)."""
    stamp = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}.{reason}-{stamp}")
    for attempt in range(1, 100):
        if not target.exists():
            break
        target = path.with_name(f"{path.name}.{reason}-{stamp}-{attempt}")
    path.rename(target)
    return target


def identity_mismatch(
    recorded: StoreIdentity, wanted: StoreIdentity, path: Path
) -> tuple[str, str] | None:
    """Why a store recording `recorded` is not the store `wanted`, as (reason, text);
    None: it is."""
    if (recorded.input_topic, recorded.partition) != (wanted.input_topic, wanted.partition):
        return "foreign", (
            f"store at {path} mirrors partition {recorded.partition} of topic"
            f" {recorded.input_topic}, not partition {wanted.partition} of {wanted.input_topic}"
        )
    if (recorded.application_id, recorded.changelog_topic, recorded.changelog_partition) != (
        wanted.application_id,
        wanted.changelog_topic,
        wanted.changelog_partition,
    ):
        return "foreign", (
            f"store at {path} belongs to application {recorded.application_id} (changelog"
            f" {recorded.changelog_topic} partition {recorded.changelog_partition}), not"
            f" {wanted.application_id} ({wanted.changelog_topic}"
            f" partition {wanted.changelog_partition})"
        )
    if recorded.changelog_topic_id != wanted.changelog_topic_id:
        return "recreated", (
            f"the changelog topic {wanted.changelog_topic} was recreated (topic id"
            f" {wanted.changelog_topic_id}, store at {path} recorded {recorded.changelog_topic_id})"
        )
    return None


def _fresh(directory: StateDirectory, identity: StoreIdentity) -> PartitionStore:
    store = directory.open(identity.partition)
    store.record_identity(identity)
    return store


def replace_store(
    directory: StateDirectory, identity: StoreIdentity, reason: str, why: str
) -> tuple[PartitionStore, Rebuild]:
    """Move (or, for `unrecorded`, delete) the closed store and open an empty one."""
    path = directory.partition_path(identity.partition)
    moved: Path | None = None
    if reason == "unrecorded":
        shutil.rmtree(path)
    else:
        moved = move_aside(path, reason)
    return _fresh(directory, identity), Rebuild(identity.partition, reason, why, path, moved)


def damage_text(damage: StateError) -> str:
    return f"store at {damage.path} is damaged ({damage.cause})"


def open_checked(
    directory: StateDirectory, identity: StoreIdentity
) -> tuple[PartitionStore, Rebuild | None]:
    """Open the partition's store if it is the one `identity` describes, else an empty one
    in its place (the Rebuild says why). StateUnavailable goes up."""
    try:
        store = directory.open(identity.partition)
    except StateDamaged as damage:
        return replace_store(directory, identity, "damaged", damage_text(damage))
    try:
        recorded = store.identity()
        offset = store.changelog_next_offset()
    except StateDamaged as damage:
        store.close()
        return replace_store(directory, identity, "damaged", damage_text(damage))
    if recorded is None and offset is None:
        store.record_identity(identity)  # new: nothing restored into it yet
        return store, None
    if recorded is None:
        store.close()
        why = (
            f"store at {store.path} records no identity (written by an earlier version):"
            " nothing tells which partition it mirrors"
        )
        return replace_store(directory, identity, "unrecorded", why)
    mismatch = identity_mismatch(recorded, identity, store.path)
    if mismatch is None:
        return store, None
    store.close()
    return replace_store(directory, identity, *mismatch)


Restore = Callable[[PartitionStore, int | None], int]
"""restore(store, at_least) -> records applied (seqgate.streams.state.restore.restore_partition)."""


def restore_checked(
    directory: StateDirectory,
    identity: StoreIdentity,
    restore: Restore,
    on_rebuild: Callable[[Rebuild], None],
    *,
    damaged: StateDamaged | None = None,
    at_least: int | None = None,
) -> tuple[PartitionStore, int]:
    """The partition's store, restored to the changelog's end; rebuilt when untrustworthy.

    `damaged`: the store (already closed) failed while processing; it is moved aside
    and rebuilt up to at least `at_least`, the offset it had reached.
    Raises StateRecoveryError after MAX_REBUILDS rebuilds in a row.
    """
    rebuild: Rebuild | None
    if damaged is not None:
        store, rebuild = replace_store(directory, identity, "damaged", damage_text(damaged))
    else:
        store, rebuild = open_checked(directory, identity)
    rebuilds = 0
    while True:
        if rebuild is not None:
            rebuilds += 1
            on_rebuild(rebuild)
            if rebuilds > MAX_REBUILDS:
                store.close()
                raise StateRecoveryError(
                    f"state of partition {identity.partition} at {rebuild.path} was rebuilt"
                    f" {MAX_REBUILDS} times in a row and failed again ({rebuild.why}): check"
                    " the disk under it, or point --state-dir elsewhere"
                )
        try:
            return store, restore(store, at_least)
        except StateDamaged as damage:
            known = store.known_next_offset
            store.close()
            if known is not None and (at_least is None or known > at_least):
                at_least = known
            store, rebuild = replace_store(directory, identity, "damaged", damage_text(damage))
        except ChangelogBehind as behind:
            store.close()
            # The changelog is what every other instance would restore: its state is
            # the partition's state now (see docs/processor.md, "Local state").
            at_least = None
            why = (
                f"store at {behind.path} reflects changelog offsets up to {behind.wanted} but"
                f" changelog {identity.changelog_topic} ends at {behind.end}: the changelog"
                " lost records (truncated, e.g. by an unclean leader election)"
            )
            store, rebuild = replace_store(directory, identity, "ahead", why)
        except StoreBehind as behind:
            store.close()
            at_least = None
            store, rebuild = replace_store(directory, identity, "behind", str(behind))
        except BaseException:
            store.close()  # a Kafka error: the next assignment opens it again
            raise
