"""Standby replicas: warm copies of partitions this worker does not own (`--standby-replicas`).

A standby is the very store the worker would open on an assignment
(`<state-dir>/<input topic>/<partition>`), kept close to the changelog's end by a thread of
its own: it reads the changelog partitions of its standbys (read_committed, so only
committed transactions) and applies them with their offsets, atomically, as a restore does.
When the group gives the worker one of those partitions, the thread hands the store over
(closes it) and the worker's restore (`seqgate.streams.state.recovery`) opens it, checks it
like any store and reads only the tail it lacks. A standby writes nothing to Kafka.

Which partitions: `seqgate.streams.rules.placement`, from the group's assignment as the
workers stamp it in the owners' group (runtime/topics.py: each stamps the partitions it
owns, every few seconds and after each rebalance), read at the same time. A worker that
owns no partition is not seen as a member. A standby store that cannot
be trusted (damaged, foreign, from an earlier changelog topic, ahead of the changelog, or
behind its start) is moved aside and rebuilt, as an active store is.

Every Kafka and RocksDB call on standby stores happens on the thread; the worker's loop only
posts requests (`own`, `disown`) and waits for `own` to be done before it opens the stores.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass, field

from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    TopicPartition,
)

from seqgate.runtime.kafka_clients import offsets_consumer
from seqgate.runtime.metrics import WorkerMetrics
from seqgate.runtime.partition_reader import reader_config
from seqgate.runtime.topics import (
    STANDBY_STAMP,
    owner_stamp,
    owners_group,
    read_owner_stamp,
    standby_group,
)
from seqgate.streams.errors import StateDamaged, StateError
from seqgate.streams.rules.placement import standbys_of
from seqgate.streams.state.recovery import (
    Rebuild,
    damage_text,
    open_checked,
    replace_store,
)
from seqgate.streams.state.store import PartitionStore, StateDirectory, StoreIdentity
from seqgate.streams.worker.config import WorkerConfig
from seqgate.streams.worker.partition_stores import store_identity

log = logging.getLogger(__name__)

# How often the group's assignment is asked for (and at once after a rebalance here).
REFRESH_S = 2.0
_OWNERS_TIMEOUT_S = 5.0
# How long one read of the changelog waits for a record: the longest a request waits.
_READ_WAIT_S = 0.05
_READ_BATCH = 1_000
# The changelog's bounds, asked when a standby is added (a refresh tries again).
_WATERMARKS_WAIT_S = 5.0
# Lag gauges at most this often (local calls only).
_LAG_EVERY_S = 1.0
# How long `own` waits for the thread to hand stores over before opening them anyway
# (the thread is gone, or stuck in a Kafka call: the worker's open then names the lock).
_HANDOVER_WAIT_S = 30.0


@dataclass
class _Request:
    kind: str  # own, disown
    partitions: frozenset[int]
    done: threading.Event = field(default_factory=threading.Event)
    warm: frozenset[int] = frozenset()  # for own: the partitions handed over warm


class StandbyReplicas:
    """The standby stores of one worker, kept by a thread of their own."""

    def __init__(self, config: WorkerConfig, topic_id: str, metrics: WorkerMetrics) -> None:
        self.config = config
        self._topic_id = topic_id
        self._metrics = metrics
        self._directory = StateDirectory(config.state_dir, config.input_topic)
        self._requests: queue.Queue[_Request] = queue.Queue()
        self._stop = threading.Event()
        self._owned: frozenset[int] = frozenset()
        self._stores: dict[int, PartitionStore] = {}
        self._caught_up: set[int] = set()
        self._refresh_at = 0.0
        self._partitions: int | None = None  # of the input topic, asked once
        self._lag_at = 0.0
        self._thread = threading.Thread(target=self._run, name="standby-replicas", daemon=True)

    def start(self) -> None:
        self._thread.start()

    # ---- the worker's requests (its own thread) ----------------------------------------

    def own(self, partitions: list[int]) -> frozenset[int]:
        """The worker was assigned `partitions`: hand their standby stores over (closed).
        Returns those that were warm standbys. Waits for the thread (bounded)."""
        request = _Request("own", frozenset(partitions))
        self._requests.put(request)
        if self._thread.is_alive():
            request.done.wait(_HANDOVER_WAIT_S)
        return request.warm

    def disown(self, partitions: list[int]) -> None:
        """The worker released `partitions`: they may become standbys here."""
        self._requests.put(_Request("disown", frozenset(partitions)))

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(_HANDOVER_WAIT_S)

    # ---- the thread --------------------------------------------------------------------

    def _run(self) -> None:
        consumer = Consumer(
            {
                **reader_config(
                    self.config.kafka,
                    standby_group(self.config.application_id, self.config.instance_id),
                ),
                # A follower, not a reader that stops at the end: fetches wait a little
                # for new records rather than asking the broker a hundred times a second.
                "fetch.wait.max.ms": 100,
            }
        )
        # Stamps this worker's partitions in the owners' group and reads the others'; a
        # member of no group.
        owners = offsets_consumer(self.config.kafka, owners_group(self.config.application_id))
        try:
            while not self._stop.is_set():
                self._serve_requests(consumer)
                if time.monotonic() >= self._refresh_at:
                    self._refresh(consumer, owners)
                if self._stores:
                    self._follow(consumer)
                else:
                    self._stop.wait(_READ_WAIT_S)
                self._observe_lag(consumer)
        except Exception:
            log.exception("standby replicas stopped; the worker goes on without them")
        finally:
            for partition in list(self._stores):
                self._drop(consumer, partition)
            self._serve_requests(None)  # release anyone waiting
            consumer.close()
            owners.close()

    def _serve_requests(self, consumer: Consumer | None) -> None:
        while True:
            try:
                request = self._requests.get_nowait()
            except queue.Empty:
                return
            if request.kind == "own":
                self._owned |= request.partitions
                request.warm = frozenset(
                    p for p in request.partitions if p in self._stores and p in self._caught_up
                )
                for partition in request.partitions:
                    if consumer is not None and partition in self._stores:
                        self._drop(consumer, partition)
            else:
                self._owned -= request.partitions
            self._refresh_at = 0.0  # the group changed: ask it again
            request.done.set()

    def _refresh(self, consumer: Consumer, owners: Consumer) -> None:
        self._refresh_at = time.monotonic() + REFRESH_S
        assignment = self._assignment(owners)
        if assignment is None:
            return  # keep what is there: the next question may be answered
        wanted = standbys_of(self.config.instance_id, assignment, self.config.standby_replicas)
        wanted -= self._owned
        for partition in sorted(set(self._stores) - wanted):
            self._drop(consumer, partition)
        for partition in sorted(wanted - set(self._stores)):
            self._add(consumer, partition)
        self._metrics.standby_partitions.set(len(self._stores))

    def _assignment(self, owners: Consumer) -> dict[str, frozenset[int]] | None:
        """Instance id -> owned input partitions: stamps this worker's own partitions in the
        owners' group, then reads every partition's stamp there. A stamp stands until the
        partition's next owner stamps over it: a dead worker's partitions keep their
        standbys until they are taken over. Consumer requests only: the
        group coordinator's admin description could abort the process when a connection
        drops under it (librdkafka issues 3663 and 4605)."""
        topic, me = self.config.input_topic, self.config.instance_id
        now_ms = int(time.time() * 1000)
        try:
            if self._partitions is None:
                listed = owners.list_topics(topic, timeout=_OWNERS_TIMEOUT_S).topics[topic]
                self._partitions = len(listed.partitions)
            stamp = owner_stamp(now_ms, me)
            mine = [TopicPartition(topic, p, 0, metadata=stamp) for p in sorted(self._owned)]
            if mine:
                owners.commit(offsets=mine, asynchronous=False)
            asked = [TopicPartition(topic, p) for p in range(self._partitions)]
            stamps = owners.committed(asked, _OWNERS_TIMEOUT_S)
        except KafkaException as error:
            log.info("partition owners not read", extra={"error": str(error.args[0])})
            return None
        found: dict[str, set[int]] = {me: set(self._owned)}
        for tp in stamps:
            owner = read_owner_stamp(tp.metadata)
            if owner is None:
                continue
            if owner[1] != me and tp.partition not in self._owned:
                found.setdefault(owner[1], set()).add(tp.partition)
        return {member: frozenset(partitions) for member, partitions in found.items()}

    def _identity(self, partition: int) -> StoreIdentity:
        return store_identity(self.config, partition, self._topic_id)

    def _add(self, consumer: Consumer, partition: int) -> None:
        """Open (checked) the partition's store and start following its changelog; a store
        that cannot be used is left for the next refresh to try again."""
        identity = self._identity(partition)
        try:
            store, rebuild = open_checked(self._directory, identity)
            if rebuild is not None:
                self._rebuilt(rebuild)
            try:
                store, start = self._checked_start(consumer, store, identity)
            except BaseException:
                store.close()
                raise
        except (StateError, KafkaException) as error:
            log.warning("standby not kept for now: %s", error, extra={"partition": partition})
            return
        self._follow_from(consumer, partition, store, start)

    def _follow_from(
        self, consumer: Consumer, partition: int, store: PartitionStore, start: int
    ) -> None:
        self._stores[partition] = store
        self._caught_up.discard(partition)
        tp = TopicPartition(self.config.changelog_topic, partition, start)
        consumer.incremental_assign([tp])
        log.info("standby added", extra={"partition": partition, "offset": start})

    def _checked_start(
        self, consumer: Consumer, store: PartitionStore, identity: StoreIdentity
    ) -> tuple[PartitionStore, int]:
        """(the store to follow with, the offset to follow from). A store ahead of the
        changelog's end or behind its start is replaced by an empty one, as a restore does
        (seqgate.streams.state.restore)."""
        tp = TopicPartition(identity.changelog_topic, identity.partition)
        low, high = consumer.get_watermark_offsets(tp, timeout=_WATERMARKS_WAIT_S)
        offset = store.changelog_next_offset()
        reason = why = ""
        if offset is not None and offset > high:
            reason, why = (
                "ahead",
                (
                    f"store at {store.path} reflects changelog offsets up to {offset} but changelog"
                    f" {identity.changelog_topic} ends at {high}"
                ),
            )
        elif offset is not None and offset < low:
            reason, why = (
                "behind",
                (
                    f"store at {store.path} reflects changelog offsets up to {offset} but changelog"
                    f" {identity.changelog_topic} now starts at {low}"
                ),
            )
        if not reason:
            return store, low if offset is None else offset
        store.close()
        fresh, rebuild = replace_store(self._directory, identity, reason, why)
        self._rebuilt(rebuild)
        return fresh, low

    def _drop(self, consumer: Consumer, partition: int) -> None:
        store = self._stores.pop(partition, None)
        self._caught_up.discard(partition)
        if store is None:
            return
        try:
            consumer.incremental_unassign([TopicPartition(self.config.changelog_topic, partition)])
        except KafkaException as error:
            log.info("standby not unassigned", extra={"error": str(error.args[0])})
        store.close()
        self._metrics.forget_standby(partition)

    def _follow(self, consumer: Consumer) -> None:
        """Apply what the changelog has for the standbys, one write per partition."""
        messages: list[Message] = consumer.consume(_READ_BATCH, _READ_WAIT_S)
        changes: dict[int, dict[bytes, bytes | None]] = {}
        next_offsets: dict[int, int] = {}
        for message in messages:
            partition, offset = message.partition(), message.offset()
            if partition is None or offset is None or partition not in self._stores:
                continue  # handed over since it was fetched
            error = message.error()
            if error is not None:
                self._follow_error(partition, error, offset)
                next_offsets[partition] = max(next_offsets.get(partition, 0), offset)
                changes.setdefault(partition, {})
                continue
            key = message.key()
            if key is not None:
                changes.setdefault(partition, {})[key] = message.value()
            next_offsets[partition] = offset + 1
        for partition, partition_changes in changes.items():
            self._apply(consumer, partition, partition_changes, next_offsets[partition])

    def _follow_error(self, partition: int, error: KafkaError, offset: int) -> None:
        if error.code() != KafkaError._PARTITION_EOF:
            log.warning("standby read failed", extra={"partition": partition, "error": error.str()})
            return
        if partition not in self._caught_up:
            self._caught_up.add(partition)
            log.info("standby caught up", extra={"partition": partition, "offset": offset})

    def _apply(
        self, consumer: Consumer, partition: int, changes: dict[bytes, bytes | None], offset: int
    ) -> None:
        store = self._stores[partition]
        known = store.known_next_offset
        if not changes and known is not None and known >= offset:
            return  # an end already recorded
        try:
            store.apply(changes, offset)
            self._metrics.standby_records.inc(len(changes))
        except StateDamaged as damage:
            self._drop(consumer, partition)
            fresh, rebuild = replace_store(
                self._directory, self._identity(partition), "damaged", damage_text(damage)
            )
            self._rebuilt(rebuild)
            self._follow_from(consumer, partition, fresh, OFFSET_BEGINNING)
        except StateError as error:
            log.warning(
                "standby dropped: its store cannot be written",
                extra={"partition": partition, "error": str(error)},
            )
            self._drop(consumer, partition)

    def _observe_lag(self, consumer: Consumer) -> None:
        """The lag gauges, and each standby's progress committed to its group, with the
        time in the metadata: `seqgate status` shows only standbys heard of lately."""
        now = time.monotonic()
        if now - self._lag_at < _LAG_EVERY_S:
            return
        self._lag_at = now
        stamp = f"{STANDBY_STAMP}{int(time.time() * 1000)}"
        progress = []
        for partition, store in self._stores.items():
            tp = TopicPartition(self.config.changelog_topic, partition)
            done = store.known_next_offset or 0
            progress.append(TopicPartition(tp.topic, partition, done, metadata=stamp))
            try:
                _low, high = consumer.get_watermark_offsets(tp, cached=True)
            except KafkaException:
                continue
            if high >= 0:
                self._metrics.standby_lag.labels(str(partition)).set(max(0, high - done))
        if progress:
            try:
                consumer.commit(offsets=progress, asynchronous=True)
            except KafkaException as error:  # a report only: the next one may get through
                log.info("standby progress not recorded", extra={"error": str(error.args[0])})

    def _rebuilt(self, rebuild: Rebuild) -> None:
        log.warning(
            "standby " + rebuild.describe(),
            extra={"partition": rebuild.partition, "reason": rebuild.reason},
        )
        self._metrics.state_rebuilds.labels(str(rebuild.partition), rebuild.reason).inc()
