"""Settings shared by every Kafka client seqgate creates."""

from __future__ import annotations

import logging
from typing import Any

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
