"""Settings shared by every Kafka client seqgate creates."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterable
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


def offsets_consumer(kafka: KafkaSettings, group: str, **settings: Any) -> Consumer:
    """A consumer of `group` that never joins it: it only reads and commits offsets (with
    their metadata), through consumer requests rather than admin ones."""
    return Consumer(
        client_config(kafka, **{"group.id": group, "enable.auto.commit": False, **settings})
    )
