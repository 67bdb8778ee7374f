"""Where the development broker lives: its Kafka release, host, home, state and data."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "HOST",
    "KAFKA_VERSION",
    "SCALA_VERSION",
    "default_data_dir",
    "default_state_file",
    "kafka_home",
    "seqgate_home",
]

KAFKA_VERSION = "4.1.1"
"""Apache Kafka release run by the development broker (keep in step with pom.xml)."""
SCALA_VERSION = "2.13"
HOST = "127.0.0.1"
"""The loopback address every listener of the development broker binds to."""


def seqgate_home() -> Path:
    """``$SEQGATE_HOME``, or ``~/.cache/seqgate``."""
    env = os.environ.get("SEQGATE_HOME")
    base = Path(env).expanduser() if env else Path.home() / ".cache" / "seqgate"
    return base.absolute()


def default_state_file() -> Path:
    """State file of the broker managed by ``seqgate broker up|down|status``."""
    return seqgate_home() / "broker" / "state.json"


def default_data_dir() -> Path:
    """Data directory of the broker started by ``seqgate broker up`` (wiped on each start)."""
    return seqgate_home() / "broker" / "data"


def kafka_home() -> Path:
    """Where the jars of :data:`KAFKA_VERSION` are cached."""
    return seqgate_home() / f"kafka-{KAFKA_VERSION}"
