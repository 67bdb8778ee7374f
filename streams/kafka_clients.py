"""Settings shared by every Kafka client seqgate creates."""

from __future__ import annotations

import logging
from typing import Any

from confluent_kafka import KafkaError

# librdkafka's own log lines go through Python logging (JSON, on stderr) under
# this logger instead of raw `%3|...` lines. `configure_logging` keeps it quiet
# unless --log-level is info or debug: at the default level seqgate reports
# the consequences itself (a failed delivery, a fatal error) in one line.
LIBRDKAFKA_LOGGER = logging.getLogger("seqgate.librdkafka")


# librdkafka 2.16's default ("rebootstrap") drops every broker connection when
# all brokers are down, and a pending offset commit then waits forever on the
# dead coordinator connection (confluentinc/librdkafka#5456): a worker hung
# after a broker bounce. With "none" a client reconnects to the brokers it knows.
METADATA_RECOVERY = "none"


def client_config(bootstrap_servers: str, **settings: Any) -> dict[str, Any]:
    """A confluent-kafka configuration with seqgate's common settings."""
    return {
        "bootstrap.servers": bootstrap_servers,
        "logger": LIBRDKAFKA_LOGGER,
        "metadata.recovery.strategy": METADATA_RECOVERY,
        **settings,
    }


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
