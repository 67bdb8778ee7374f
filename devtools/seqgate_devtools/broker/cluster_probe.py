"""What a cluster's metadata says: the registered brokers, a partition's leader and ISR."""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from seqgate_devtools.broker import security as sec
from seqgate_devtools.errors import BrokerError

__all__ = ["PartitionState", "partition_state", "registered_brokers"]


class PartitionState(NamedTuple):
    """A partition as the cluster's metadata describes it (broker ids; leader -1 if none)."""

    leader: int
    replicas: list[int]
    isr: list[int]


def _admin(bootstrap: str, properties: Path | None, timeout: float) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {
            **sec.client_settings(properties, bootstrap),
            "socket.connection.setup.timeout.ms": max(1000, int(timeout * 1000)),
            "reconnect.backoff.max.ms": 500,
            "log_level": 0,  # a probe: the caller reports failures
        }
    )


def registered_brokers(
    bootstrap: str, timeout: float = 10.0, properties: Path | None = None
) -> set[int]:
    """Broker ids listed in the metadata (registered, not fenced); empty if none answers."""
    try:
        metadata = _admin(bootstrap, properties, timeout).list_topics(timeout=timeout)
    except Exception:  # KafkaException and friends: nobody answered
        return set()
    return {int(broker_id) for broker_id in metadata.brokers}


def partition_state(
    bootstrap: str, properties: Path | None, topic: str, partition: int, timeout: float
) -> PartitionState:
    """Leader, replicas and ISR of ``topic``/``partition`` from the cluster's metadata."""
    admin = _admin(bootstrap, properties, timeout)
    try:
        metadata = admin.list_topics(topic=topic, timeout=timeout)
    except Exception as exc:
        raise BrokerError(f"no metadata for {topic} from {bootstrap}: {exc}") from exc
    described = metadata.topics.get(topic)
    if described is None or described.error is not None or partition not in described.partitions:
        raise BrokerError(f"the cluster has no partition {topic}/{partition}")
    part = described.partitions[partition]
    return PartitionState(int(part.leader), list(part.replicas), list(part.isrs))
