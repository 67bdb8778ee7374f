"""The worker's local state: one checked, restored RocksDB store per assigned partition.

A store is opened on assignment, checked against what it says it mirrors and
restored from the changelog (`seqgate.streams.state.recovery`); it is moved aside and
rebuilt whenever it cannot be trusted, and closed on release. The worker's
transaction loop (`seqgate.streams.worker.processor`) only reads stores and hands them
committed changes; everything that can go wrong with the local files ends
here, as a rebuild or as one `WorkerFatalError` line.
"""

from __future__ import annotations

import logging
import time

from confluent_kafka import Consumer

from seqgate.runtime.errors import WorkerFatalError
from seqgate.runtime.metrics import WorkerMetrics
from seqgate.streams.errors import StateDamaged, StateRecoveryError, StateUnavailable
from seqgate.streams.state.recovery import Rebuild, changelog_topic_id, restore_checked
from seqgate.streams.state.restore import restore_partition
from seqgate.streams.state.store import PartitionStore, StateDirectory, StoreIdentity
from seqgate.streams.worker.config import WorkerConfig
from seqgate.streams.worker.restore_report import RestoreReport

log = logging.getLogger(__name__)


class PartitionStores:
    """The stores of the partitions assigned to one worker."""

    def __init__(
        self, config: WorkerConfig, restore_consumer: Consumer, metrics: WorkerMetrics
    ) -> None:
        self.config = config
        self._restore_consumer = restore_consumer
        self._metrics = metrics
        self._directory = StateDirectory(config.state_dir, config.input_topic)
        self._stores: dict[int, PartitionStore] = {}

    def get(self, partition: int) -> PartitionStore | None:
        return self._stores.get(partition)

    def __len__(self) -> int:
        return len(self._stores)

    def assign(self, partitions: list[int]) -> dict[int, tuple[int, float]]:
        """Open, check and restore the store of each newly assigned partition.
        Returns, per partition, (changelog records restored, seconds it took)."""
        self._metrics.restore_started(len(partitions))
        topic_id = self.changelog_topic_id() if partitions else ""
        restores: dict[int, tuple[int, float]] = {}
        for partition in partitions:
            began = time.monotonic()
            restored = self._open_restored(partition, topic_id)
            restores[partition] = (restored, time.monotonic() - began)
            self._metrics.restore_finished()
            log.info("assigned", extra={"partition": partition, "restored": restored})
        return restores

    def rebuild(self, damage: StateDamaged) -> None:
        """A read or write of a store failed while processing: move it aside and restore
        the partition from the changelog, at least up to the offset the store had reached.

        The caller aborts its open transaction first (nothing of it is visible yet)."""
        partition = damage.partition
        store = None if partition is None else self._stores.pop(partition, None)
        if partition is None or store is None:
            return  # not ours any more: the next owner opens (and checks) it
        at_least = store.known_next_offset
        store.close()
        self._metrics.restore_started(1)
        restored = self._open_restored(
            partition, self.changelog_topic_id(), damaged=damage, at_least=at_least
        )
        self._metrics.restore_finished()
        log.info("restored after damage", extra={"partition": partition, "restored": restored})

    def apply_committed(
        self, partition: int, changes: dict[bytes, bytes | None], next_offset: int
    ) -> None:
        """Write a committed transaction's changes of one partition to its store."""
        store = self._stores.get(partition)
        if store is None:
            return
        try:
            store.apply(changes, next_offset)
        except StateDamaged as damage:
            # The transaction is committed, so in the changelog: the rebuild reads it back.
            store.known_next_offset = max(next_offset, store.known_next_offset or 0)
            self.rebuild(damage)
        except StateUnavailable as error:
            raise WorkerFatalError(describe_unavailable(error, self.config)) from None

    def release(self, partition: int) -> None:
        store = self._stores.pop(partition, None)
        if store is not None:
            store.close()

    def close(self) -> None:
        for store in self._stores.values():
            store.close()
        self._stores.clear()

    def changelog_topic_id(self) -> str:
        try:
            return changelog_topic_id(
                self.config.kafka,
                self.config.changelog_topic,
                self.config.kafka_timeout_s,
            )
        except StateRecoveryError as error:
            raise WorkerFatalError(str(error)) from None

    def _open_restored(
        self,
        partition: int,
        topic_id: str,
        *,
        damaged: StateDamaged | None = None,
        at_least: int | None = None,
    ) -> int:
        """Open the partition's store (rebuilt if it cannot be trusted) and restore it."""
        config = self.config
        identity = store_identity(config, partition, topic_id)
        report = RestoreReport(
            self._restore_consumer,
            self._metrics,
            changelog_topic=config.changelog_topic,
            partition=partition,
            instance_id=config.instance_id,
        )

        def restore(store: PartitionStore, at_least: int | None) -> int:
            return restore_partition(
                self._restore_consumer,
                config.changelog_topic,
                partition,
                store,
                timeout=config.kafka_timeout_s,
                progress=report.progress,
                at_least=at_least,
                settle_s=min(10.0, config.kafka_timeout_s),
            )

        try:
            store, restored = restore_checked(
                self._directory,
                identity,
                restore,
                self._rebuilt,
                damaged=damaged,
                at_least=at_least,
            )
        except StateUnavailable as error:
            raise WorkerFatalError(describe_unavailable(error, config)) from None
        except StateRecoveryError as error:
            raise WorkerFatalError(str(error)) from None
        finally:
            report.finished()
        self._stores[partition] = store
        return restored

    def _rebuilt(self, rebuild: Rebuild) -> None:
        log.warning(
            rebuild.describe(),
            extra={
                "partition": rebuild.partition,
                "reason": rebuild.reason,
                "path": str(rebuild.path),
                "moved_to": None if rebuild.moved_to is None else str(rebuild.moved_to),
            },
        )
        self._metrics.state_rebuilds.labels(str(rebuild.partition), rebuild.reason).inc()


def store_identity(config: WorkerConfig, partition: int, topic_id: str) -> StoreIdentity:
    """What the store of `partition` must record it mirrors (active or standby)."""
    return StoreIdentity(
        application_id=config.application_id,
        input_topic=config.input_topic,
        partition=partition,
        changelog_topic=config.changelog_topic,
        changelog_partition=partition,  # the changelog is co-partitioned with the input
        changelog_topic_id=topic_id,
    )


def describe_unavailable(error: StateUnavailable, config: WorkerConfig) -> str:
    """One line for a state directory that cannot be used at all (never rebuilt)."""
    if error.disk_full:
        return (
            f"no space left on device for the state directory {config.state_dir}"
            f" (writing {error.path}): free space there or point --state-dir elsewhere,"
            " then restart the worker (what it committed is in the changelog; the restart"
            " restores it)"
        )
    if "/LOCK:" in error.cause:
        return (
            f"state store {error.path} is in use by another process: two workers with the"
            f" same --state-dir and --instance-id? ({error.cause})"
        )
    return (
        f"state store {error.path} cannot be used ({error.cause}): fix the directory's"
        " permissions or point --state-dir elsewhere"
    )
