"""The worker's checkpoint: its open transaction committed, or aborted and read again.

`Checkpoint.commit` follows docs/design.md §5.2 steps 4 and 5; the commit protocol
itself (flush, offsets, commit_transaction) is `TransactionalSession.commit`, shared
with `bridge kafka` and `reset`. A failure aborts the transaction, discards the
overlay and rewinds the input (§5.3).
"""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from seqgate.runtime.engines import load_core
from seqgate.runtime.errors import ProducerLost, WorkerFatalError
from seqgate.runtime.metrics import WorkerMetrics
from seqgate.streams.errors import StateDamaged
from seqgate.streams.rules.accounting import OutcomeCounters
from seqgate.streams.rules.decider import purgeable
from seqgate.streams.state.keys import STREAM_TIME_KEY, decode_stream_time
from seqgate.streams.worker.audit import Decision
from seqgate.streams.worker.liveness import StallWatch
from seqgate.streams.worker.outage import WriteOutage
from seqgate.streams.worker.pending import PendingState, TransactionParts, coordinates

log = logging.getLogger(__name__)

# Expired dedupe ids tombstoned per partition and commit, to bound commit time.
_PURGE_PER_COMMIT = 1000
# How long an abort is retried while the cluster cannot take writes (a stop ends it sooner).
_OUTAGE_ABORT_RETRY_S = 3600.0

CommitListener = Callable[[list[Decision]], None]


class Checkpoint:
    """Commits the worker's open transaction, or aborts it and rewinds the input."""

    def __init__(
        self,
        parts: TransactionParts,
        *,
        consumer: Consumer,
        metrics: WorkerMetrics,
        stall: StallWatch,
        on_commit: CommitListener | None,
        outage: WriteOutage,
    ) -> None:
        self.config = parts.config
        self._session = parts.session
        self._transaction = parts.transaction
        self._stores = parts.stores
        self._refused = parts.refused
        self._consumer = consumer  # for the lag
        self._metrics = metrics
        # With the compiled engine, the changelog records are produced from the core: the
        # same produce() calls, without an interpreted loop around them.
        self._produce_changes = (
            None if self.config.engine == "python" else load_core().produce_changes
        )
        self._stall = stall
        self._on_commit = on_commit
        self._outage = outage
        self.counters = OutcomeCounters()
        self.commits = 0
        self.committed_records = 0  # input records of committed transactions
        self.compiled_records = 0  # of those, the ones the compiled core decided
        self.aborts = 0
        self.committed_offsets: dict[int, int] = {}  # next input offset per partition, committed

    def commit(self) -> None:
        """docs/design.md §5.2, steps 4 and 5, in this order. A failure raises with the
        transaction still open: `recover` then aborts it, rewinds the input and discards
        the overlay (§5.3), so RocksDB never sees a change Kafka did not commit."""
        started = time.monotonic()
        pending = self._transaction.pending
        # 1. The changelog records: the overlay's last value per key, and tombstones for
        #    dedupe ids expired in record time, into the same transaction.
        self._produce_changelog(pending)
        # 2. Kafka commits outbox, changelog, rejected records, audit and input offsets together
        #    (flush, send_offsets_to_transaction, commit_transaction).
        self._session.commit(self._input_offsets(pending))
        # 3. Only now the committed state: the overlay to RocksDB, with the next changelog
        #    offset it reflects (a crash before this leaves RocksDB behind; restore catches up).
        for partition, changes in pending.overlay.partitions().items():
            last = pending.changelog_last_offset.get(partition)
            if last is not None:
                self._stores.apply_committed(partition, changes, last + 1)
        # 4. Count what committed, and tell the listener.
        self._count(pending, time.monotonic() - started)
        decisions = self._transaction.discard().decisions
        if self._on_commit is not None:
            self._on_commit(decisions)

    def _count(self, pending: PendingState, took_s: float) -> None:
        for (partition, outcome, _kind, _reason), count in pending.tally.items():
            self.counters.add(partition, outcome, count)
        self.commits += 1
        self.committed_records += pending.records
        self.compiled_records += pending.compiled_records
        self.committed_offsets.update(pending.next_offsets)
        self._refused.committed(pending.next_offsets)
        self._metrics.committed(pending.tally, took_s, pending.compiled_records)
        self._metrics.observe_lag(self._consumer, self.committed_offsets)  # at most 1/s
        self._stall.progressed(time.monotonic())
        self._outage.committed()

    def _input_offsets(self, pending: PendingState) -> list[TopicPartition]:
        """The open transaction's input offsets: the next offset to read, per partition. Each
        names this worker in its metadata: the partition's next owner reads it to know whose
        transaction may hold the offsets pending (worker/handover.py)."""
        return [
            TopicPartition(
                self.config.input_topic, partition, next_offset, metadata=self.config.instance_id
            )
            for partition, next_offset in sorted(pending.next_offsets.items())
        ]

    def _produce_changelog(self, pending: PendingState) -> None:
        """The transaction's state changes (last value per key) to the changelog partition of
        the input partition, with tombstones for dedupe ids expired in record time."""
        policy, overlay = self.config.policy, pending.overlay
        for partition, changes in list(overlay.partitions().items()):
            raw_time = changes.get(STREAM_TIME_KEY)
            store = self._stores.get(partition)
            if raw_time is not None and store is not None:
                stream_time = decode_stream_time(raw_time)
                horizon = stream_time - policy.dedupe_retention_ms
                candidates = store.seen_older_than(horizon, limit=_PURGE_PER_COMMIT)
                for state_key in purgeable(candidates, stream_time, policy):
                    if state_key not in changes:
                        overlay.put(partition, state_key, None)
            # Only the partition's last record reports its delivery: it carries the
            # highest offset, the one the store records. A failure of any other
            # record makes the transaction abortable, so the commit raises.
            last, done = len(changes) - 1, 0
            if self._produce_changes is not None:  # the same calls, from the compiled core
                done = self._produce_changes(
                    self._session.producer.produce,
                    self.config.changelog_topic,
                    partition,
                    changes,
                    self._on_changelog_delivery,
                )
            rest = itertools.islice(changes.items(), done, None)
            for index, (state_key, value) in enumerate(rest, start=done):
                self._session.produce(
                    self.config.changelog_topic,
                    value,
                    key=state_key,
                    partition=partition,
                    on_delivery=self._on_changelog_delivery if index == last else None,
                )

    def _on_changelog_delivery(self, error: KafkaError | None, message: Message) -> None:
        if error is not None:
            self._session.on_delivery(error, message)
            return
        last = self._transaction.pending.changelog_last_offset
        partition, offset = coordinates(message)
        last[partition] = max(last.get(partition, -1), offset)

    # ---- abort ---------------------------------------------------------------------------------

    def recover(self, error: KafkaException) -> None:
        """After a failed step: stop on a fatal error, else abort and read the input again."""
        # produce() only says "Fatal error": the session asks the producer for the cause.
        self._session.raise_if_fatal(error)
        # Abortable or retriable: aborting and re-reading from the committed
        # offsets is always safe, since nothing of this transaction is visible.
        cause = self._session.failure_cause(
            error.args[0], self._input_offsets(self._transaction.pending)
        )
        # A cluster that cannot take writes is said once (worker/outage.py), not per abort.
        wait_s = self._outage.failed(cause)
        level = logging.WARNING if wait_s is None else logging.INFO
        log.log(level, "transaction aborted", extra={"error": cause.str()})
        self._find_unwritable(cause)
        self.abort_and_rewind(outage=wait_s is not None)
        if wait_s is None:
            self._check_abort_loop(cause)
        else:
            self._refused.reset_abort_loop()
            self._outage.stop.wait(wait_s)  # the pause between attempts, cut short by a stop

    def abort_and_rewind(self, *, outage: bool = False) -> None:
        """Abort the open transaction, discard its overlay, rewind to the committed offsets
        (during a write outage the abort is retried until the cluster takes it)."""
        self.aborts += 1
        self._metrics.aborts.inc()
        self._session.abort_and_rewind(
            outage_retry_s=_OUTAGE_ABORT_RETRY_S if outage else None,
            stopping=self._outage.stopping,
        )
        self._transaction.discard()

    def renew(self, lost: ProducerLost) -> None:
        """The producer is lost (its transaction outlived the timeout, or a call hung): a new
        one takes over (runtime/renewal.py). The open transaction is dropped as by an abort;
        a worker that is stopping stops with the reason instead."""
        if self._outage.stopping():
            raise WorkerFatalError(lost.reason)
        self.aborts += 1
        self._metrics.aborts.inc()
        self._metrics.producer_renewals.inc()
        self._session.renew(lost, stopping=self._outage.stopping)
        self._transaction.discard()
        self._refused.reset_abort_loop()

    def rebuild_damaged(self, damage: StateDamaged) -> None:
        """A store failed while processing: abort the open transaction (nothing of it is
        visible yet) and rewind, then rebuild the store from the changelog."""
        if self._session.in_transaction:
            self.abort_and_rewind()
        self._stores.rebuild(damage)

    def _find_unwritable(self, error: KafkaError) -> None:
        """Before the abort: let `seqgate.streams.worker.refused` close in on a record the
        broker refuses for good, or stop when not even its bare rejected record can be written."""
        pending = self._transaction.pending
        codes = {error.code(), *(failed.code() for failed in self._session.delivery_errors)}
        stuck = self._refused.after_abort(codes, error.str(), pending.records, pending.next_offsets)
        if stuck is None:
            return
        partition, offset = stuck
        raise WorkerFatalError(
            f"input record {self.config.input_topic}[{partition}] offset {offset} cannot be"
            f" written, not even as a rejected record without its bytes ({error.str()}): raise"
            f" max.message.bytes of {self.config.rejected_topic} (and"
            f" {self.config.outbox_topic}, {self.config.changelog_topic}) to the input"
            " topic's, then restart the worker"
        )

    def _check_abort_loop(self, error: KafkaError) -> None:
        """Aborts without a commit in between for --stall-timeout-ms: exit, never spin."""
        lasted = self._refused.abort_loop_seconds(time.monotonic())
        if lasted is None:
            return
        raise WorkerFatalError(
            f"no transaction committed for {lasted:.0f} s"
            f" (--stall-timeout-ms {self.config.stall_timeout_ms}): every attempt aborted,"
            f" the last with: {error.str()}; restart the worker (it resumes from the"
            " committed offsets) once Kafka accepts the worker's writes"
        )
