"""What a replicated cluster says about itself, for the cluster fault tests (issue 17).

Leaders and in-sync replicas come from the admin client's topic metadata. The transaction
coordinator of a ``transactional.id`` is the leader of its ``__transaction_state`` partition;
confluent-kafka has no DescribeTransactions call, so the partition is computed the way the
broker computes it (``TransactionStateManager.partitionFor``: the non-negative Java
``String.hashCode`` of the id modulo the topic's partition count), and the tests check that
this partition is the one holding the id's records.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from seqgate_devtools.broker.cluster_probe import PartitionState

from tests.support.kafka_helpers import wait_for

__all__ = [
    "TRANSACTION_STATE_TOPIC",
    "ClusterProbe",
    "java_string_hash",
    "transaction_state_partition",
]

TRANSACTION_STATE_TOPIC = "__transaction_state"
CONSUMER_OFFSETS_TOPIC = "__consumer_offsets"
_COORDINATOR_MOVING = frozenset(
    {
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    }
)

_INT_MIN = -(2**31)


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode`` (UTF-16 code units, 32-bit signed overflow)."""
    value = 0
    units = text.encode("utf-16-be")
    for index in range(0, len(units), 2):
        value = (31 * value + int.from_bytes(units[index : index + 2], "big")) & 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


def transaction_state_partition(transactional_id: str, partitions: int) -> int:
    """The ``__transaction_state`` partition of ``transactional_id`` (Kafka's Utils.abs)."""
    code = java_string_hash(transactional_id)
    return (0 if code == _INT_MIN else abs(code)) % partitions


class ClusterProbe:
    """An admin client on the cluster with the few questions the fault tests ask."""

    def __init__(self, bootstrap: str) -> None:
        self._bootstrap = bootstrap
        self._admin = AdminClient({"bootstrap.servers": bootstrap})

    def partitions(self, topic: str) -> list[PartitionState]:
        """Every partition of ``topic`` as the metadata says now, by partition id; [] when
        unanswered (``ClusterHandle.partition`` raises instead: this one is polled through
        outages, with one long-lived client)."""
        try:
            metadata = self._admin.list_topics(topic, timeout=10)
        except KafkaException:
            return []
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            return []
        return [
            PartitionState(p.leader, sorted(p.replicas), sorted(p.isrs))
            for p in sorted(found.partitions.values(), key=lambda p: p.id)
        ]

    def leader(self, topic: str, partition: int) -> int:
        states = self.partitions(topic)
        return states[partition].leader if partition < len(states) else -1

    def transaction_coordinator(self, transactional_id: str) -> int:
        """The node leading the ``__transaction_state`` partition of ``transactional_id``."""
        states = self.partitions(TRANSACTION_STATE_TOPIC)
        if not states:
            raise AssertionError(f"{TRANSACTION_STATE_TOPIC} has no metadata yet")
        partition = transaction_state_partition(transactional_id, len(states))
        return states[partition].leader

    def create_coordinator_topics(self, timeout: float = 120) -> None:
        """Make the broker create ``__transaction_state`` and ``__consumer_offsets`` (it does
        on first use: a transactional producer's init, a group's coordinator lookup), so
        that the coordinators can be computed before any worker starts."""
        producer = Producer({"bootstrap.servers": self._bootstrap, "transactional.id": "probe"})
        producer.init_transactions(timeout)
        wait_for(self._group_described, timeout, "a group's coordinator to answer")
        wait_for(
            lambda: (
                bool(self.partitions(TRANSACTION_STATE_TOPIC))
                and bool(self.partitions(CONSUMER_OFFSETS_TOPIC))
            ),
            timeout,
            "the coordinator topics to exist",
        )

    def _group_described(self) -> bool:
        """Whether a group's coordinator answered; False while it moves or loads (a node of
        the cluster has just come back: NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS)."""
        try:
            self._admin.describe_consumer_groups(["cluster-probe"])["cluster-probe"].result(30)
        except KafkaException as error:
            code = error.args[0].code()
            if error.args[0].retriable() or code in _COORDINATOR_MOVING:
                return False
            raise
        return True

    def offsets_coordinator(self, group_id: str) -> int:
        """The node leading the ``__consumer_offsets`` partition of ``group_id``: the group's
        coordinator, known before the group exists (the same hash as for transactions)."""
        states = self.partitions(CONSUMER_OFFSETS_TOPIC)
        if not states:
            raise AssertionError(f"{CONSUMER_OFFSETS_TOPIC} has no metadata yet")
        return states[transaction_state_partition(group_id, len(states))].leader

    def group_coordinator(self, group_id: str) -> int:
        """The node coordinating consumer group ``group_id`` (from DescribeConsumerGroups)."""
        description = self._admin.describe_consumer_groups([group_id])[group_id].result(timeout=30)
        return int(description.coordinator.id)

    def transaction_state_written(self, transactional_id: str) -> bool:
        """Does the partition computed for ``transactional_id`` hold records? (It must, once the
        producer has initialized: the check that the computed coordinator is the real one.)"""
        states = self.partitions(TRANSACTION_STATE_TOPIC)
        partition = transaction_state_partition(transactional_id, len(states))
        consumer = Consumer({"bootstrap.servers": self._bootstrap, "group.id": "cluster-probe"})
        try:
            tp = TopicPartition(TRANSACTION_STATE_TOPIC, partition)
            _, high = consumer.get_watermark_offsets(tp, timeout=10)
        finally:
            consumer.close()
        return bool(high > 0)

    def fully_replicated(self, topics: Sequence[str], replicas: int) -> bool:
        """Every partition of ``topics`` has a leader and ``replicas`` in-sync replicas."""
        for topic in topics:
            states = self.partitions(topic)
            if not states or any(s.leader < 0 or len(s.isr) < replicas for s in states):
                return False
        return True

    def wait_fully_replicated(self, topics: Sequence[str], replicas: int, timeout: float) -> float:
        """Wait until :meth:`fully_replicated`; return how long it took."""
        started = time.monotonic()
        wait_for(
            lambda: self.fully_replicated(topics, replicas),
            timeout,
            f"{replicas} in-sync replicas on every partition of {list(topics)}",
        )
        return time.monotonic() - started

    def wait_leader_other_than(
        self, topic: str, partition: int, node: int, timeout: float
    ) -> float:
        """Wait until ``topic``/``partition`` has a leader that is not ``node``."""
        started = time.monotonic()
        wait_for(
            lambda: self.leader(topic, partition) not in (-1, node),
            timeout,
            f"a new leader of {topic}[{partition}] after node {node} went down",
        )
        return time.monotonic() - started
