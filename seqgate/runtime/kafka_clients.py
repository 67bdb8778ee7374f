"""The configuration of every Kafka client seqgate creates: the settings all share
(`client_config`), then each kind's own: the transactional producer of the worker,
`bridge kafka` and `reset` (`transactional_producer_config`), a group member
(`group_consumer_config`, the worker's `member_consumer_config`), and a consumer of a
group it never joins (`offsets_consumer_config`). Commands pass their settings here
rather than writing librdkafka properties themselves."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Message, Producer, TopicPartition

from seqgate.runtime.kafka_settings import KafkaSettings

# librdkafka's own log lines go through Python logging (JSON, on stderr) under
# this logger instead of raw `%3|...` lines. `configure_logging` keeps it quiet
# unless --log-level is info or debug: at the default level seqgate reports
# the consequences itself (a failed delivery, a fatal error) in one line.
LIBRDKAFKA_LOGGER = logging.getLogger("seqgate.librdkafka")
log = logging.getLogger(__name__)


# librdkafka 2.16's default ("rebootstrap") drops every broker connection when
# all brokers are down, and a pending offset commit then waits forever on the
# dead coordinator connection (confluentinc/librdkafka#5456): a worker hung
# after a broker bounce. With "none" a client reconnects to the brokers it knows.
METADATA_RECOVERY = "none"
# The Java client's partitioner: every producer of a keyed topic, Java or Python, maps a
# key to the same partition.
MURMUR2_RANDOM = "murmur2_random"
# How long a transactional producer waits to fill a batch, unless the caller or the user
# says otherwise.
LINGER_MS = 5
# The worker's input consumer heartbeats at most this often (and at most three times per
# session timeout): a rebalance reaches a member with its next heartbeat's answer, and
# librdkafka's 3 s default made a handover wait 0-3 s for the survivor to hear of it
# (docs/benchmark.md, "Failover with standby replicas").
HEARTBEAT_MS = 500
# The worker's --rebalance: the assignor of each rebalance protocol.
ASSIGNORS = {"cooperative": "cooperative-sticky", "eager": "range"}


def client_config(kafka: KafkaSettings | str, **settings: Any) -> dict[str, Any]:
    """A confluent-kafka configuration: seqgate's common settings, then the client's own
    `settings`, then the user's properties (`--kafka-config`, `SEQGATE_KAFKA_*`, `-X`).

    The user's come last so that a tuning property (`linger.ms`, say) is never silently
    overridden; the ones seqgate must own were refused when they were read
    (`seqgate.runtime.kafka_settings`). A plain address string means no user
    properties (tests, the development broker).
    """
    if isinstance(kafka, str):
        kafka = KafkaSettings(kafka)
    return {
        "bootstrap.servers": kafka.bootstrap_servers,
        "logger": LIBRDKAFKA_LOGGER,
        "metadata.recovery.strategy": METADATA_RECOVERY,
        **settings,
        **kafka.properties,
    }


def group_consumer_config(
    kafka: KafkaSettings | str, group_id: str, **settings: Any
) -> dict[str, Any]:
    """A group member reading transactional output: committed records only, offsets
    committed by the reader itself once their work is done (in its transaction, or after
    the destination applied them), from the start when the group has no offset, and
    rebalances that move only the partitions that change hands."""
    return client_config(
        kafka,
        **{
            "group.id": group_id,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "partition.assignment.strategy": "cooperative-sticky",
            **settings,
        },
    )


def member_consumer_config(
    kafka: KafkaSettings | str,
    group_id: str,
    *,
    instance_id: str | None,
    session_timeout_ms: int,
    rebalance: str = "cooperative",
    overrides: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """The worker's input consumer: a group member (`group_consumer_config`) that is static
    under `instance_id` (None: dynamic), heartbeats often, reports no partition ends, and
    rebalances by `rebalance` (a key of ASSIGNORS); `overrides` last (the worker's extra
    consumer properties)."""
    # Static membership: a restarted instance takes its partitions back at once instead of
    # waiting for the session timeout. But librdkafka never sends a static member's
    # LeaveGroup, so a worker stopped for good keeps its partitions idle for that timeout:
    # dynamic membership hands them over at the stop (docs/processor.md, "Membership").
    static = {} if instance_id is None else {"group.instance.id": instance_id}
    return group_consumer_config(
        kafka,
        group_id,
        **{
            **static,
            "session.timeout.ms": session_timeout_ms,
            "heartbeat.interval.ms": min(HEARTBEAT_MS, session_timeout_ms // 3),
            "enable.partition.eof": False,
            "partition.assignment.strategy": ASSIGNORS[rebalance],
            **(overrides or {}),
        },
    )


def offsets_consumer_config(
    kafka: KafkaSettings | str, group: str, *, isolation: str | None = None
) -> dict[str, Any]:
    """A consumer of `group` that never joins it: it only reads and commits offsets (with
    their metadata); `isolation` None keeps librdkafka's read_committed, which waits for
    pending offsets (read_uncommitted does not)."""
    chosen = {} if isolation is None else {"isolation.level": isolation}
    return client_config(kafka, **{"group.id": group, "enable.auto.commit": False, **chosen})


def transactional_producer_config(
    kafka: KafkaSettings | str,
    transactional_id: str,
    transaction_timeout_ms: int,
    *,
    linger_ms: int = LINGER_MS,
    partitioner: str | None = MURMUR2_RANDOM,
    error_cb: Callable[[KafkaError], None] | None = None,
    overrides: Mapping[str, object] | None = None,
) -> dict[str, Any]:
    """The transactional producer, the one configuration of the worker's, `bridge kafka`'s
    and `reset`'s (and of the worker's takeover fencer): idempotent, every replica
    acknowledging, `transactional.id` fencing an earlier incarnation. `partitioner` None
    leaves librdkafka's (reset names every record's partition); `error_cb` receives the
    client's errors; `overrides` last (the worker's extra producer properties)."""
    own: dict[str, object] = {
        "transactional.id": transactional_id,
        # How long a dead producer's open transaction can hold back read_committed
        # readers before the broker aborts it.
        "transaction.timeout.ms": transaction_timeout_ms,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": linger_ms,
    }
    if partitioner is not None:
        own["partitioner"] = partitioner
    if error_cb is not None:
        own["error_cb"] = error_cb
    return client_config(kafka, **{**own, **(overrides or {})})


@dataclass(frozen=True, slots=True)
class ProducerSettings:
    """A command's part of its transactional producer's configuration: what
    `transactional_producer_config` takes besides the transactional id, the transaction
    timeout and the error callback, which the `TransactionalSession` that makes the
    producer (runtime/session.py) has from its role."""

    kafka: KafkaSettings | str
    linger_ms: int = LINGER_MS
    partitioner: str | None = MURMUR2_RANDOM
    overrides: Mapping[str, object] = field(default_factory=dict)

    def config(
        self,
        transactional_id: str,
        transaction_timeout_ms: int,
        error_cb: Callable[[KafkaError], None] | None = None,
    ) -> dict[str, Any]:
        return transactional_producer_config(
            self.kafka,
            transactional_id,
            transaction_timeout_ms,
            linger_ms=self.linger_ms,
            partitioner=self.partitioner,
            error_cb=error_cb,
            overrides=self.overrides,
        )


def is_fatal(error: KafkaError) -> bool:
    """An error only a new client cures.

    librdkafka reports a consumer's fatal state on consumed messages with the code
    `_FATAL` but without the fatal flag (seen: the broker fencing a static member
    after an outage longer than the session timeout), so the code counts too.
    """
    return bool(error.fatal()) or error.code() == KafkaError._FATAL


def consumer_failure(error: KafkaError, restart: str) -> str:
    """One line for a consumer that failed for good; `restart` says what to restart."""
    text = error.str()
    if "group.instance.id" in text:
        text += (
            " (another member joined with this one's group.instance.id: two instances"
            " share an id, or the group replaced this member after a broker outage"
            " longer than the session timeout)"
        )
    return f"the Kafka consumer failed for good: {text}; restart {restart}"


class PartitionEnds:
    """Which assigned partitions a consumer has read to their end, for an idle exit
    (`enable.partition.eof`), and the sorting of what `consume()` returns into
    records, end-of-partition events and errors. Used by `bridge kafka` and `dispatch`."""

    def __init__(self, restart: str, failed: Callable[[str], Exception]) -> None:
        self.assigned: set[int] = set()
        self.at_end: set[int] = set()
        self._restart = restart  # what to restart, for the failure line
        self._failed = failed  # the caller's exception for a consumer that failed for good

    def assign(self, partitions: Iterable[TopicPartition]) -> None:
        self.assigned.update(tp.partition for tp in partitions)

    def revoke(self, partitions: Iterable[TopicPartition]) -> None:
        gone = {tp.partition for tp in partitions}
        self.assigned -= gone
        self.at_end -= gone

    def forget_ends(self) -> None:
        """After a rewind: nothing is known to be read to its end any more."""
        self.at_end.clear()

    def drained(self) -> bool:
        """Partitions assigned, and every one read to its end."""
        return bool(self.assigned) and self.assigned <= self.at_end

    def usable(self, message: Message) -> bool:
        """True for a record; notes ends; logs transient errors; raises the caller's
        exception for a consumer that failed for good."""
        error = message.error()
        if error is None:
            self.at_end.discard(message.partition() or 0)
            return True
        if error.code() == KafkaError._PARTITION_EOF:
            self.at_end.add(message.partition() or 0)
            return False
        if is_fatal(error):
            raise self._failed(consumer_failure(error, self._restart))
        log.warning("consumer error", extra={"error": error.str()})
        return False


def close_producer(producer: Producer) -> None:
    """Close a producer that may be fenced, quietly: a fenced producer still holds its
    transaction and the client warns that it cannot abort it, or raises its fatal error
    once more. What stopped the caller already said so: both go to the log (info), not to
    stderr with a source line, nor raised from a `finally` over the one line that explains
    the stop."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            producer.close()
        except KafkaException as error:
            log.info("producer close", extra={"error": error.args[0].str()})
    for warning in caught:
        log.info("producer close", extra={"warning": str(warning.message)})


def offsets_consumer(kafka: KafkaSettings, group: str, *, isolation: str | None = None) -> Consumer:
    """A consumer of `group` that never joins it (`offsets_consumer_config`): offsets are
    read and committed through consumer requests rather than admin ones."""
    return Consumer(offsets_consumer_config(kafka, group, isolation=isolation))
