"""The exactly-once worker: a transactional consume-transform-produce loop.

One consumer (read_committed, manual commits, cooperative-sticky) and one
transactional producer whose `transactional.id` is stable per worker
instance. Per transaction (docs/design.md §5.2):

1. consume a batch and decide each event against its object's watermark,
   reading the in-memory overlay first, then committed RocksDB state
   (`seqgate.streams.worker.step`);
2. produce outbox records, changelog records and rejected records;
3. send the consumed offsets to the transaction, then commit it;
4. only then write the overlay to RocksDB with the changelog offset
   (`seqgate.streams.worker.checkpoint`; steps 2 and 3 through
   `seqgate.runtime.session`).

Any abortable error aborts the transaction, drops the overlay and rewinds
the consumer to the committed offsets, so the same input is decided again
against the same committed state. This module is the loop and the rebalance
callbacks; `seqgate.streams.worker.liveness` the stall exit.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, TopicPartition

from seqgate.runtime.engines import load_core
from seqgate.runtime.errors import ProducerLost
from seqgate.runtime.errors import WorkerFatalError as WorkerFatalError  # re-exported
from seqgate.runtime.faults import FaultInjector
from seqgate.runtime.kafka_reach import unreachable_brokers
from seqgate.runtime.metrics import WorkerMetrics
from seqgate.runtime.replication import describe_blocked, replica_states
from seqgate.runtime.session import TransactionalSession
from seqgate.runtime.transaction_failures import SessionRole
from seqgate.streams.errors import StateDamaged, StateUnavailable
from seqgate.streams.state.restore import restore_consumer_config
from seqgate.streams.worker.audit import (
    Decision as Decision,  # re-exported: on_commit receives them
)
from seqgate.streams.worker.cadence import CommitCadence
from seqgate.streams.worker.checkpoint import Checkpoint, CommitListener
from seqgate.streams.worker.compiled_step import CompiledStep
from seqgate.streams.worker.config import WorkerConfig as WorkerConfig  # re-exported
from seqgate.streams.worker.config import consumer_config, producer_settings
from seqgate.streams.worker.handover import PendingOwners, takeover_reader
from seqgate.streams.worker.liveness import LivenessCheck, StallWatch
from seqgate.streams.worker.outage import WriteOutage
from seqgate.streams.worker.partition_stores import PartitionStores, describe_unavailable
from seqgate.streams.worker.pending import OpenTransaction, TransactionParts
from seqgate.streams.worker.refused import RefusedRecords
from seqgate.streams.worker.standby import StandbyReplicas
from seqgate.streams.worker.step import RecordStep
from seqgate.streams.worker.takeover import Takeovers

log = logging.getLogger(__name__)


class CheckpointCount:
    """A count the worker's checkpoint keeps, read as an attribute of the worker."""

    def __set_name__(self, owner: type[Worker], name: str) -> None:
        self._name = name

    def __get__(self, worker: Worker, owner: type[Worker] | None = None) -> int:
        count: int = getattr(worker._checkpoint, self._name)
        return count


class Worker:
    """Runs the processor loop for one worker instance until stopped."""

    commits = CheckpointCount()
    committed_records = CheckpointCount()  # input records of committed transactions
    compiled_records = CheckpointCount()  # of those, decided by the compiled core
    aborts = CheckpointCount()
    _standbys: StandbyReplicas | None = None  # --standby-replicas: started by run()
    _handover: PendingOwners | None = None  # started by run()
    _closing = False  # set by _close: stores are closed after the consumer

    def __init__(
        self,
        config: WorkerConfig,
        *,
        faults: FaultInjector | None = None,
        on_commit: CommitListener | None = None,
    ) -> None:
        self.config = config
        faults = faults or FaultInjector()
        self._transaction = OpenTransaction()
        self._cadence = CommitCadence(config.commit_interval_ms / 1000, config.commit_every)
        # Before the clients: a port that cannot be bound leaves nothing to close.
        self.metrics = WorkerMetrics(
            config.instance_id, alive_timeout_s=config.stall_timeout_ms / 1000
        )
        if config.metrics_port is not None:
            self.metrics.serve(config.metrics_host, config.metrics_port)
        self._consumer = Consumer(consumer_config(config))
        self._restore_consumer = Consumer(
            restore_consumer_config(config.kafka, config.application_id)
        )
        self._stores = PartitionStores(config, self._restore_consumer, self.metrics)
        self._outage = WriteOutage(self._diagnose_replicas, beat=self.metrics.health.beat)
        stall = StallWatch(config.stall_timeout_ms / 1000, time.monotonic())
        self._session = self._new_session(faults, stall)
        self._refused = RefusedRecords(config.stall_timeout_ms / 1000)
        parts = TransactionParts(
            config, self._session, self._transaction, self._stores, self._refused
        )
        self._step = RecordStep(
            parts, begin=self._begin, faults=faults, keep_decisions=on_commit is not None
        )
        self._compiled = (
            None
            if config.engine == "python"
            else CompiledStep(
                parts,
                self._step,
                begin=self._begin,
                faults=faults,
                keep_decisions=on_commit is not None,
                core=load_core(),
            )
        )
        self._checkpoint = Checkpoint(
            parts,
            consumer=self._consumer,
            metrics=self.metrics,
            stall=stall,
            on_commit=on_commit,
            outage=self._outage,
        )
        self.counters = self._checkpoint.counters
        self._takeovers = Takeovers(self.metrics)
        self._liveness = LivenessCheck(
            stall,
            self._consumer,
            self._restore_consumer,
            input_topic=config.input_topic,
            stall_timeout_ms=config.stall_timeout_ms,
        )

    def _new_session(self, faults: FaultInjector, stall: StallWatch) -> TransactionalSession:
        config = self.config
        return TransactionalSession(
            producer_settings(config),  # the session makes the producer
            SessionRole(
                "worker", config.transactional_id, "--instance-id", config.transaction_timeout_ms
            ),
            timeout_s=config.kafka_timeout_s,
            failed=WorkerFatalError,
            consumer=self._consumer,
            # An abort the broker cannot answer is retried as long as a stall may last.
            abort_retry_s=stall.timeout_s,
            faults=faults,
            outage=self._outage,
            renew=True,  # a fenced or hung producer is replaced in place
            taken_over=takeover_reader(config),  # ... also when fenced by a takeover
        )

    @property
    def _in_transaction(self) -> bool:
        return self._session.in_transaction

    # ---- main loop -------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Process until `stop` is set; then commit the open transaction and close.

        Raises WorkerFatalError for errors that a restart with the same
        configuration would not cure by itself.
        """
        self._outage.stop = stop  # a stop also ends a write outage's waits
        self._session.init()
        self._handover = PendingOwners(self.config)
        if self.config.standby_replicas > 0:
            self._standbys = StandbyReplicas(
                self.config, self._stores.changelog_topic_id(), self.metrics
            )
            self._standbys.start()
        self._consumer.subscribe(
            [self.config.input_topic],
            on_assign=self._on_assign,
            on_revoke=self._on_revoke,
            on_lost=self._on_lost,
        )
        graceful = False
        try:
            while not stop.is_set():
                messages = self._read()
                self._liveness.polled(bool(messages))
                self.metrics.health.beat()
                if not messages and not self._in_transaction:
                    self.metrics.observe_lag(self._consumer, self._checkpoint.committed_offsets)
                self._process_batch(messages)
            if self._in_transaction:
                self._commit_or_recover()
            graceful = True
        finally:
            self._close(graceful)

    def _read(self) -> list[Message]:
        """The next batch, up to --batch-size records. Within a transaction only what the
        client has fetched already, without waiting: a shorter batch means the worker has
        caught up, and commits (cadence.py). Without one, the first record is waited for
        (an idle wait), then whatever else has been fetched is taken with it."""
        size, consumer = self.config.batch_size, self._consumer
        if self._in_transaction:
            return consumer.consume(size, timeout=0)
        first = consumer.poll(self._cadence.idle_wait_s())
        if first is None:
            return []
        return [first, *consumer.consume(size - 1, timeout=0)] if size > 1 else [first]

    def _process_batch(self, messages: list[Message]) -> None:
        """Decide the batch into the open transaction; commit it when due."""
        if not self._recovering(lambda: self._decide(messages)):
            return  # aborted and rewound: the batch is read again
        caught_up = len(messages) < self.config.batch_size
        if self._in_transaction and self._commit_due(caught_up):
            self._commit_or_recover()

    def _decide(self, messages: list[Message]) -> None:
        compiled, index, end = self._compiled, 0, len(messages)
        while index < end:
            if compiled is not None and compiled.usable:
                index = compiled.run(messages, index)  # as far as it can prove
                if index == end:
                    break
            self._step.process(messages[index])  # the reference step: the rest, one record
            index += 1
            isolating = self._refused.isolating and self._in_transaction
            if isolating and not self._commit_or_recover():
                break  # rewound: the rest of the batch is read again

    def _recovering(self, action: Callable[[], None]) -> bool:
        """Run `action`; False when it failed and the open transaction was aborted (the
        input rewound, a damaged store rebuilt, a lost producer replaced)."""
        try:
            try:
                action()
            except KafkaException as error:
                self._checkpoint.recover(error)
                return False
            except StateDamaged as damage:  # the purge reads the store before the commit, too
                self._checkpoint.rebuild_damaged(damage)
                return False
            except StateUnavailable as error:
                raise WorkerFatalError(describe_unavailable(error, self.config)) from None
        except ProducerLost as lost:  # from the step, or from the recovery itself
            self._checkpoint.renew(lost)
            return False
        return True

    def _begin(self) -> None:
        self._session.begin()

    def _commit(self) -> None:
        self._cadence.committing(time.monotonic())
        partitions = list(self._transaction.pending.next_offsets)
        self._checkpoint.commit()
        self._takeovers.committed(partitions)

    def _commit_or_recover(self) -> bool:
        """Commit the open transaction; False when it was aborted (and the input rewound)."""
        return self._recovering(self._commit)

    def _commit_due(self, caught_up: bool) -> bool:
        records = self._transaction.pending.records
        return self._cadence.due(records, time.monotonic(), caught_up=caught_up)

    def _diagnose_replicas(self) -> str:
        """Which partitions the worker writes cannot take writes now (runtime/replication.py),
        asked through the restore consumer: the other clients may be the ones waiting."""
        c = self.config
        topics = [c.outbox_topic, c.changelog_topic, c.rejected_topic]
        try:
            metadata = self._restore_consumer.list_topics(timeout=5)
        except KafkaException as error:
            return f"no metadata from the cluster ({error.args[0].str()})"
        states = replica_states(metadata, topics)
        return describe_blocked(states, metadata.brokers, unreachable_brokers(metadata.brokers))

    def _describe_fatal(self, error: KafkaError) -> str:
        return self._session.describe_fatal(error)

    # ---- rebalancing ---------------------------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        at, began = time.time(), time.monotonic()
        numbers = [tp.partition for tp in partitions]
        if self._handover is not None:  # a dead owner's transaction may hold their offsets
            self._handover.end_transactions(numbers)
        # A standby of one of them is handed over first: the restore then reads its tail.
        standbys = self._standbys
        warm = frozenset() if standbys is None else standbys.own(numbers)
        restores = self._stores.assign(numbers)
        self._takeovers.assigned(at, began, restores, warm)
        self.metrics.partitions_assigned(len(self._stores))
        self._liveness.assigned()

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # Commit before giving the partitions away, so the next owner restores
        # everything this worker decided (a hung client commits nothing more: the next
        # owner fences it and resumes from the committed offsets).
        if self._in_transaction and not self._session.hung:
            self._commit_or_recover()
        self._release(partitions)

    def _on_lost(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # The group moved on without us: our offsets can no longer commit.
        aborted = self._in_transaction
        log.warning(
            "partitions lost: this worker was silent longer than --session-timeout-ms"
            " (paused or stalled) and the group gave them to another member; rejoining",
            extra={
                "partitions": sorted(tp.partition for tp in partitions),
                "session_timeout_ms": self.config.session_timeout_ms,
                "transaction_aborted": aborted,
            },
        )
        if aborted:
            try:
                self._checkpoint.abort_and_rewind()
            except ProducerLost as lost:  # the broker aborted it first, on its timeout
                self._checkpoint.renew(lost)
        self._release(partitions)
        self._liveness.lost(consumer.memberid())
        self.metrics.health.set_ready(False, "partitions lost; rejoining the group")

    def _release(self, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._checkpoint.committed_offsets.pop(tp.partition, None)
            self._refused.release(tp.partition)
            if not self._closing:  # else closed after the consumer: see _close
                self._stores.release(tp.partition)
            self._takeovers.released(tp.partition)
        if self._standbys is not None and not self._closing:  # warm: they may stay standbys
            self._standbys.disown([tp.partition for tp in partitions])
        self.metrics.forget(partitions)
        self.metrics.partitions_assigned(len(self._stores))

    def _close(self, graceful: bool) -> None:
        # Closing the consumer revokes its partitions; their stores are closed after it
        # (below), since closing a large store takes a while and a dynamic member leaves
        # the group only once the revocation is done.
        self._closing = True
        try:
            # The group first: a dynamic member leaves it as its consumer closes, and the
            # standbys' stores (each flushed as it closes) need not hold the handover back.
            self._session.close(flush_timeout_s=5 if graceful else 0)
        finally:
            if self._standbys is not None:
                self._standbys.close()
            if self._handover is not None:
                self._handover.close()
            self._restore_consumer.close()
            self._stores.close()
            self.metrics.close()
