"""Settings shared by every Kafka client seqgate creates."""

from __future__ import annotations

import logging
from typing import Any

# librdkafka's own log lines go through Python logging (JSON, on stderr) under
# this logger instead of raw `%3|...` lines. `configure_logging` keeps it quiet
# unless --log-level is info or debug: at the default level seqgate reports
# the consequences itself (a failed delivery, a fatal error) in one line.
LIBRDKAFKA_LOGGER = logging.getLogger("seqgate.librdkafka")


def client_config(bootstrap_servers: str, **settings: Any) -> dict[str, Any]:
    """A confluent-kafka configuration with seqgate's common settings."""
    return {"bootstrap.servers": bootstrap_servers, "logger": LIBRDKAFKA_LOGGER, **settings}
