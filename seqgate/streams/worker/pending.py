"""What the worker's open transaction holds until it commits (docs/design.md §5.2).

State changes stay in a `TransactionOverlay` and reach RocksDB only after
`commit_transaction`; each record reads them through an `OverlayView`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from confluent_kafka import Message

from seqgate.runtime.metrics import Tally
from seqgate.runtime.session import TransactionalSession
from seqgate.streams.state.store import PartitionStore, TransactionOverlay
from seqgate.streams.worker.audit import Decision
from seqgate.streams.worker.config import WorkerConfig
from seqgate.streams.worker.partition_stores import PartitionStores
from seqgate.streams.worker.refused import RefusedRecords


@dataclass
class PendingState:
    """Everything the open transaction holds until it commits."""

    overlay: TransactionOverlay = field(default_factory=TransactionOverlay)
    views: dict[int, OverlayView] = field(default_factory=dict)
    next_offsets: dict[int, int] = field(default_factory=dict)
    changelog_last_offset: dict[int, int] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)  # kept only for an on_commit listener
    tally: Tally = field(default_factory=dict)
    records: int = 0
    compiled_records: int = 0  # of `records`, those the compiled core decided


class OpenTransaction:
    """The worker's open transaction: what it holds, replaced when it commits or aborts."""

    def __init__(self) -> None:
        self.pending = PendingState()

    def discard(self) -> PendingState:
        """End it (committed or aborted): what it held, for the caller to use or drop."""
        done, self.pending = self.pending, PendingState()
        return done


@dataclass(frozen=True, slots=True)
class TransactionParts:
    """What the record step and the checkpoint share: the settings, the session, the open
    transaction, the stores and what is known of refused records."""

    config: WorkerConfig
    session: TransactionalSession
    transaction: OpenTransaction
    stores: PartitionStores
    refused: RefusedRecords


def coordinates(message: Message) -> tuple[int, int]:
    """(partition, offset) of a consumed or delivered message."""
    partition, offset = message.partition(), message.offset()
    assert partition is not None and offset is not None
    return partition, offset


class OverlayView:
    """The state one record sees: the open transaction's changes, then committed state."""

    def __init__(self, overlay: TransactionOverlay, store: PartitionStore, partition: int) -> None:
        self.changes = overlay.changes_of(partition)
        self.committed = store.get
        self.raw_reader = store.raw_reader  # the compiled step's read (compiled_step.py)

    def get(self, key: bytes) -> bytes | None:
        changes = self.changes
        return changes[key] if key in changes else self.committed(key)
