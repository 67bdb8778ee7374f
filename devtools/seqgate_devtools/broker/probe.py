"""Whether a broker answers: a TCP connection, then metadata listing at least one broker."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from seqgate_devtools.broker import security as sec
from seqgate_devtools.broker.locations import HOST

__all__ = ["broker_answers"]


def _split_bootstrap(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    return host.strip("[]") or HOST, int(port)


def broker_answers(
    bootstrap_servers: str, timeout: float = 5.0, *, properties: Path | None = None
) -> bool:
    """True if the broker at ``bootstrap_servers`` accepts a connection and returns metadata
    listing at least one broker; ``properties`` is a client properties file to connect with
    (``BrokerHandle.client_properties`` of a ``sasl_ssl`` broker)."""
    from confluent_kafka.admin import AdminClient

    try:
        host, port = _split_bootstrap(bootstrap_servers)
        with socket.create_connection((host, port), timeout=min(timeout, 1.0)):
            pass
    except (OSError, ValueError):
        return False
    try:
        settings: dict[str, Any] = dict(sec.client_settings(properties, bootstrap_servers))
    except OSError:
        return False
    admin = AdminClient(
        {
            **settings,
            "socket.connection.setup.timeout.ms": max(1000, int(timeout * 1000)),
            "reconnect.backoff.ms": 100,
            "reconnect.backoff.max.ms": 500,
            "log_level": 0,  # a probe: failures are reported by the caller, not by librdkafka
        }
    )
    try:
        metadata = admin.list_topics(timeout=timeout)
    except Exception:  # KafkaException and friends: not answering (yet)
        return False
    return bool(metadata.brokers)
