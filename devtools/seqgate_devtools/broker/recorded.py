"""What a state file records of how clients reach a development broker or cluster.

A single broker's record (:mod:`~seqgate_devtools.broker.handle`) and a cluster's
(:mod:`~seqgate_devtools.broker.cluster_handle`) share these fields; records written
before a field existed read as its default.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from seqgate_devtools.broker import security as sec
from seqgate_devtools.broker.locations import KAFKA_VERSION

__all__ = ["RecordedAccess"]


class RecordedAccess(NamedTuple):
    security: str = sec.PLAINTEXT
    client_properties: Path | None = None
    ca_file: Path | None = None
    kafka_version: str = KAFKA_VERSION

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RecordedAccess:
        return cls(
            str(data.get("security", sec.PLAINTEXT)),
            _path(data.get("client_properties")),
            _path(data.get("ca_file")),
            str(data.get("kafka_version", KAFKA_VERSION)),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "security": self.security,
            "client_properties": _text(self.client_properties),
            "ca_file": _text(self.ca_file),
            "kafka_version": self.kafka_version,
        }


def _path(value: object) -> Path | None:
    return None if value is None else Path(str(value))


def _text(path: Path | None) -> str | None:
    return None if path is None else str(path)
