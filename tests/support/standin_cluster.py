"""A cluster in memory and a stand-in for confluent_kafka.Consumer that reads it: the I/O edge
of `seqgate verify` (its `_Reader`), for tests that check what verify does with what it reads
without a broker. The consumer answers the calls the reader makes (list_topics, committed,
get_watermark_offsets, assign, consume, close) like librdkafka does for a read_committed
consumer with partition EOF events on; every call must be bounded by `timeout`."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from confluent_kafka import OFFSET_INVALID, KafkaError, KafkaException, TopicPartition


@dataclass(frozen=True, slots=True)
class Stored:
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int = 0


@dataclass
class Cluster:
    """Topics (name → partitions → records), the group's committed offsets, and what the
    consumers were made with and asked."""

    timeout: float
    topics: dict[str, dict[int, list[Stored]]] = field(default_factory=dict)
    broken: set[str] = field(default_factory=set)  # metadata says: error (unknown topic)
    committed: dict[str, dict[int, int]] = field(default_factory=dict)  # group → offsets
    committed_error: KafkaError | None = None
    failing: dict[tuple[str, int], KafkaError] = field(default_factory=dict)  # fetch errors
    stalled: set[tuple[str, int]] = field(default_factory=set)  # nothing ever arrives
    configs: list[dict[str, Any]] = field(default_factory=list)
    open_consumers: int = 0

    def add(self, topic: str, partition: int, *records: Stored) -> None:
        self.topics.setdefault(topic, {}).setdefault(partition, []).extend(records)

    def bounds(self, topic: str, partition: int) -> tuple[int, int]:
        records = self.topics[topic][partition]
        if not records:
            return 0, 0
        return records[0].offset, records[-1].offset + 1

    def consumer(self, config: dict[str, Any]) -> ClusterConsumer:
        """What `Consumer(config)` gives in the code under test."""
        self.configs.append(config)
        self.open_consumers += 1
        return ClusterConsumer(self, config)


class _Message:
    def __init__(
        self,
        stored: Stored | None,
        eof: int | None = None,
        error: KafkaError | None = None,
    ) -> None:
        self._stored, self._eof, self._error = stored, eof, error

    def error(self) -> KafkaError | None:
        if self._error is not None:
            return self._error
        return None if self._stored is not None else KafkaError(KafkaError._PARTITION_EOF)

    def offset(self) -> int | None:
        return self._stored.offset if self._stored is not None else self._eof

    def key(self) -> bytes | None:
        return self._stored.key if self._stored is not None else None

    def value(self) -> bytes | None:
        return self._stored.value if self._stored is not None else None

    def timestamp(self) -> tuple[int, int]:
        return (1, self._stored.timestamp if self._stored is not None else 0)


class ClusterConsumer:
    def __init__(self, cluster: Cluster, config: dict[str, Any]) -> None:
        self.cluster = cluster
        self.config = config
        self.closed = False
        self._pending: list[_Message] = []

    def _bounded(self, timeout: object) -> None:
        assert not self.closed, "a call on a closed consumer"
        assert timeout == self.cluster.timeout, f"timeout {timeout!r}, not the target's"

    def list_topics(self, topic: str, timeout: float) -> SimpleNamespace:
        self._bounded(timeout)
        if topic in self.cluster.broken:
            found = SimpleNamespace(
                error=KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART), partitions={}
            )
            return SimpleNamespace(topics={topic: found})
        partitions = self.cluster.topics.get(topic)
        if partitions is None:
            return SimpleNamespace(topics={})
        # librdkafka's dict is not sorted: give it backwards
        by_id = {p: SimpleNamespace(id=p) for p in sorted(partitions, reverse=True)}
        return SimpleNamespace(topics={topic: SimpleNamespace(error=None, partitions=by_id)})

    def committed(self, partitions: list[TopicPartition], timeout: float) -> list[TopicPartition]:
        self._bounded(timeout)
        if self.cluster.committed_error is not None:
            raise KafkaException(self.cluster.committed_error)
        assert self.config.get("isolation.level") == "read_committed", "unstable offsets asked"
        offsets = self.cluster.committed.get(self.config["group.id"], {})
        return [
            TopicPartition(tp.topic, tp.partition, offsets.get(tp.partition, OFFSET_INVALID))
            for tp in partitions
        ]

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float) -> tuple[int, int]:
        self._bounded(timeout)
        return self.cluster.bounds(tp.topic, tp.partition)

    def assign(self, partitions: list[TopicPartition]) -> None:
        [tp] = partitions
        _, high = self.cluster.bounds(tp.topic, tp.partition)
        records = self.cluster.topics[tp.topic][tp.partition]
        where = (tp.topic, tp.partition)
        if where in self.cluster.stalled:
            self._pending = []
            return
        failure = self.cluster.failing.get(where)
        if failure is not None:
            self._pending = [_Message(None, error=failure)]
            return
        self._pending = [_Message(stored) for stored in records if stored.offset >= tp.offset]
        self._pending.append(_Message(None, eof=high))

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        assert not self.closed
        taken, self._pending = self._pending[:num_messages], self._pending[num_messages:]
        return taken

    def close(self) -> None:
        assert not self.closed, "closed twice"
        self.closed = True
        self.cluster.open_consumers -= 1
