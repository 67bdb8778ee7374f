"""Why Kafka does not take a client's writes: what the metadata says of the replicas.

When the nodes holding a partition's replicas are down, an ``acks=all`` write to it fails
(``NOT_ENOUGH_REPLICAS``) or times out, and so do the transaction markers and the offsets a
commit writes. The operator needs one line that names the partitions, not a warning per
failed attempt, and the worker needs to tell such an outage from a client that is stuck
(one broker down leaves every partition writable: a call that hangs then is the client's
fault, runtime/bounded_call.py). Both come from the cluster's metadata and from which of
its brokers answer a connection: a partition cannot take writes while it has no leader, or
its leader or one of its in-sync replicas is down.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError

__all__ = [
    "WRITE_OUTAGE_CODES",
    "ReplicaState",
    "blocks_writes",
    "describe_blocked",
    "replica_states",
]

WRITE_OUTAGE_CODES = frozenset(
    {
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
        KafkaError.COORDINATOR_NOT_AVAILABLE,
        KafkaError.NOT_COORDINATOR,
        KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TIMED_OUT_QUEUE,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._WAIT_COORD,
    }
)
"""Failures that say the cluster cannot take writes now, not that this client is wrong."""


def blocks_writes(error: KafkaError) -> bool:
    return error.code() in WRITE_OUTAGE_CODES


@dataclass(frozen=True, slots=True)
class ReplicaState:
    topic: str
    partition: int
    leader: int  # -1: no leader
    replicas: tuple[int, ...]
    isr: tuple[int, ...]

    def blocker(self, up: AbstractSet[int]) -> str | None:
        """Why an ``acks=all`` write to this partition cannot complete now, given the brokers
        that are ``up``; None when it can.

        A write waits for every in-sync replica, so one that is down blocks it until the
        controller removes it from the ISR, which a controller quorum that is lost (two of
        three KRaft nodes down) never does; a dead leader blocks it until a new one is
        elected."""
        if self.leader < 0:
            return "no leader"
        if self.leader not in up:
            return f"leader {self.leader} is down"
        down = [node for node in self.isr if node not in up]
        if down:
            return "in-sync replica " + ",".join(map(str, down)) + " is down"
        return None

    def describe(self, blocker: str) -> str:
        isr = ",".join(map(str, self.isr))
        replicas = ",".join(map(str, self.replicas))
        return f"{self.topic}[{self.partition}] ({blocker}; isr {isr} of {replicas})"


def replica_states(metadata: Any, topics: Iterable[str]) -> list[ReplicaState]:
    """The partitions of ``topics`` in a ``list_topics`` answer (ClusterMetadata)."""
    states = []
    for topic in topics:
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            continue
        for p in sorted(found.partitions.values(), key=lambda p: p.id):
            states.append(
                ReplicaState(
                    topic, p.id, p.leader, tuple(sorted(p.replicas)), tuple(sorted(p.isrs))
                )
            )
    return states


def describe_blocked(
    states: Sequence[ReplicaState],
    listed: Iterable[int],
    unreachable: AbstractSet[int] = frozenset(),
    *,
    examples: int = 4,
) -> str:
    """One clause for the operator: the partitions that cannot take writes (a few named),
    and which brokers are up; "" when every partition can.

    ``listed`` are the brokers the metadata lists, ``unreachable`` those of them this client
    cannot connect to: with the quorum lost the metadata stops changing and still lists a
    dead node, so only a connection tells."""
    listed = set(listed)
    up = listed - unreachable
    blocked = [(state, why) for state in states if (why := state.blocker(up)) is not None]
    if not blocked:
        return ""
    named = "; ".join(state.describe(why) for state, why in blocked[:examples])
    more = f"; and {len(blocked) - examples} more" if len(blocked) > examples else ""
    known = listed | {node for state in states for node in state.replicas}
    down = sorted(known - up)
    return (
        f"{len(blocked)} of {len(states)} partitions cannot take writes: {named}{more};"
        f" brokers up: {_ids(up)}; down: {_ids(down)}"
    )


def _ids(nodes: Iterable[int]) -> str:
    return ", ".join(map(str, sorted(nodes))) or "none"
