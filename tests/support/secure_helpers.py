"""What the ``secured_kafka`` fixture (tests/conftest.py) yields: a SASL_SSL broker."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from seqgate_devtools.broker.security import client_settings


@dataclass(frozen=True)
class SecuredKafka:
    """A throwaway broker whose client listener is SASL_SSL only (SCRAM-SHA-512 over TLS)."""

    bootstrap_servers: str
    properties_file: Path
    """librdkafka settings (``security.protocol``, ``sasl.*``, ``ssl.ca.location``)."""
    ca_file: Path
    username: str
    password: str

    def config(self, extra: dict[str, Any] | None = None) -> dict[str, Any]:
        """confluent_kafka settings from :attr:`properties_file`, updated with ``extra``."""
        settings: dict[str, Any] = dict(
            client_settings(self.properties_file, self.bootstrap_servers)
        )
        settings.update(extra or {})
        return settings
