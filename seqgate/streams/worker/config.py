"""The worker's settings and the Kafka client configurations they make."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaError

from seqgate.runtime.kafka_clients import client_config, group_consumer_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import changelog_topic
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.streams.rules.policy import Policy
from seqgate.streams.worker.cadence import DEFAULT_COMMIT_EVERY, DEFAULT_COMMIT_INTERVAL_MS

# The input consumer's heartbeat, at most (and at most a third of the session timeout).
HEARTBEAT_MS = 500


@dataclass(frozen=True, slots=True)
class WorkerConfig:
    kafka: KafkaSettings
    state_dir: Path
    application_id: str = "seqgate"
    instance_id: str = "worker-0"
    input_topic: str = "object-events"
    outbox_topic: str = "object-events.outbox"
    rejected_topic: str = "object-events.rejected"
    policy: Policy = field(default_factory=Policy.build)
    commit_every: int = DEFAULT_COMMIT_EVERY
    commit_interval_ms: int = DEFAULT_COMMIT_INTERVAL_MS
    batch_size: int = 500
    session_timeout_ms: int = 45_000
    transaction_timeout_ms: int = 60_000
    stall_timeout_ms: int = 120_000
    kafka_timeout_s: float = 30.0
    audit_topic: str | None = None  # every decision, in the outbox's transaction
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = None  # /metrics, /healthz, /readyz; 0 picks a free port
    extra_consumer_config: dict[str, str] = field(default_factory=dict)
    extra_producer_config: dict[str, str] = field(default_factory=dict)
    framing: Framing = SINGLE_OBJECT  # how outbox, dead letters and audit are written
    engine: str = "compiled"  # or "python": the record step alone (compiled_step.py)
    standby_replicas: int = 0  # warm copies of each partition on other workers (standby.py)
    # static: the group keeps a stopped worker's partitions for --session-timeout-ms (its
    # restart takes them back without a move); dynamic: a stopped worker leaves at once.
    membership: str = "static"
    # cooperative: a rebalance stops only the partitions that move; eager: every member gives
    # up all its partitions and gets them back (offered to measure the difference).
    rebalance: str = "cooperative"

    @property
    def changelog_topic(self) -> str:
        return changelog_topic(self.application_id)

    @property
    def transactional_id(self) -> str:
        return f"{self.application_id}-{self.instance_id}"


# --rebalance: the assignor of each rebalance protocol.
ASSIGNORS = {"cooperative": "cooperative-sticky", "eager": "range"}


def consumer_config(config: WorkerConfig) -> dict[str, object]:
    """The input consumer: read_committed, manual commits, static membership unless
    --membership dynamic."""
    # Static membership: a restarted instance takes its partitions back at once instead of
    # waiting for the session timeout. But librdkafka never sends a static member's
    # LeaveGroup, so a worker stopped for good keeps its partitions idle for that timeout:
    # dynamic membership hands them over at the stop (docs/processor.md, "Membership").
    static = {"group.instance.id": config.instance_id} if config.membership == "static" else {}
    return group_consumer_config(
        config.kafka,
        config.application_id,
        **{
            **static,
            "session.timeout.ms": config.session_timeout_ms,
            # A rebalance reaches a member with its next heartbeat's answer: librdkafka's
            # 3 s default made a handover wait 0-3 s for the survivor to hear of it
            # (docs/benchmark.md, "Failover with standby replicas").
            "heartbeat.interval.ms": min(HEARTBEAT_MS, config.session_timeout_ms // 3),
            "enable.partition.eof": False,
            "partition.assignment.strategy": ASSIGNORS[config.rebalance],
            **config.extra_consumer_config,
        },
    )


def producer_config(
    config: WorkerConfig, *, on_error: Callable[[KafkaError], None]
) -> dict[str, object]:
    """The transactional producer of outbox, changelog, dead letters and audit records."""
    return client_config(
        config.kafka,
        **{
            "transactional.id": config.transactional_id,
            "error_cb": on_error,
            # How long a dead worker's open transaction can hold back
            # read_committed readers before the broker aborts it.
            "transaction.timeout.ms": config.transaction_timeout_ms,
            "enable.idempotence": True,
            "acks": "all",
            "linger.ms": 5,
            # The Java client's partitioner, so Java and Python producers agree.
            "partitioner": "murmur2_random",
            **config.extra_producer_config,
        },
    )
