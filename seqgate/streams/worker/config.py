"""The worker's settings, passed down to the module that makes every client's
configuration from them (`seqgate.runtime.kafka_clients`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import KafkaError

from seqgate.runtime.kafka_clients import ProducerSettings, member_consumer_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import changelog_topic
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.streams.rules.policy import Policy
from seqgate.streams.worker.cadence import DEFAULT_COMMIT_EVERY, DEFAULT_COMMIT_INTERVAL_MS


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
    framing: Framing = SINGLE_OBJECT  # how outbox, rejected records and audit are written
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


def consumer_config(config: WorkerConfig) -> dict[str, object]:
    """The input consumer (kafka_clients.member_consumer_config): static membership unless
    --membership dynamic."""
    static = config.membership == "static"
    return member_consumer_config(
        config.kafka,
        config.application_id,
        instance_id=config.instance_id if static else None,
        session_timeout_ms=config.session_timeout_ms,
        rebalance=config.rebalance,
        overrides=config.extra_consumer_config,
    )


def producer_settings(config: WorkerConfig) -> ProducerSettings:
    """The worker's part of its transactional producer's configuration (the session makes
    the producer, with the transactional id and timeout of its role)."""
    return ProducerSettings(config.kafka, overrides=config.extra_producer_config)


def producer_config(
    config: WorkerConfig, *, on_error: Callable[[KafkaError], None]
) -> dict[str, object]:
    """The worker's transactional producer, as a fencer of `config.transactional_id` makes
    it (worker/handover.py): the session's configuration, with `on_error`."""
    return producer_settings(config).config(
        config.transactional_id, config.transaction_timeout_ms, on_error
    )
