"""A development broker as a value: :class:`BrokerHandle` and its state file.

``seqgate broker up`` records its broker in
``${SEQGATE_HOME:-~/.cache/seqgate}/broker/state.json`` (a :func:`running_broker` in
``<data dir>/state.json``), so that later commands find it again.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from seqgate_devtools.broker import security as sec
from seqgate_devtools.broker.locations import KAFKA_VERSION, default_state_file
from seqgate_devtools.broker.probe import broker_answers
from seqgate_devtools.broker.processes import is_broker_process
from seqgate_devtools.broker.recorded import RecordedAccess

__all__ = ["BrokerHandle", "broker_status", "is_running", "load_state"]


@dataclass
class BrokerHandle:
    """A development broker (running, or as recorded in a state file)."""

    bootstrap_servers: str
    pid: int
    data_dir: Path
    port: int
    controller_port: int
    state_file: Path | None = None
    kafka_version: str = KAFKA_VERSION
    already_running: bool = False
    """True when :func:`start_broker` found this broker running and returned it unchanged."""
    security: str = sec.PLAINTEXT
    """``plaintext`` or ``sasl_ssl`` (see :mod:`seqgate_devtools.broker.security`)."""
    client_properties: Path | None = None
    """librdkafka settings clients need (``sasl_ssl`` only; the client listener needs them)."""
    ca_file: Path | None = None
    """PEM of the CA that signed the broker's certificate (``sasl_ssl`` only)."""
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)
    _watchdog: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def log_file(self) -> Path:
        """The broker's log4j log."""
        return self.data_dir / "server.log"

    @property
    def stdout_file(self) -> Path:
        """Where the broker process's own stdout/stderr go."""
        return self.data_dir / "broker.out"

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "bootstrap_servers": self.bootstrap_servers,
            "data_dir": str(self.data_dir),
            "port": self.port,
            "controller_port": self.controller_port,
            "log_file": str(self.log_file),
            **self.access.to_json(),
        }

    @property
    def access(self) -> RecordedAccess:
        return RecordedAccess(
            self.security, self.client_properties, self.ca_file, self.kafka_version
        )

    def answers(self, timeout: float = 5.0) -> bool:
        """:func:`broker_answers` with this broker's client settings."""
        return broker_answers(self.bootstrap_servers, timeout, properties=self.client_properties)


def load_state(state_file: Path | None = None) -> BrokerHandle | None:
    """The broker recorded in ``state_file`` (default :func:`default_state_file`), if any.

    Does not check that it still runs (see :func:`is_running`, :func:`broker_status`). A state
    file that cannot be parsed is removed; one recording a cluster is kept and gives None.
    """
    path = state_file or default_state_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and data.get("kind") == "cluster":
            return None  # a cluster's record (cluster_handle): never removed as damaged here
        return BrokerHandle(
            bootstrap_servers=str(data["bootstrap_servers"]),
            pid=int(data["pid"]),
            data_dir=Path(data["data_dir"]),
            port=int(data["port"]),
            controller_port=int(data["controller_port"]),
            state_file=path,
            **RecordedAccess.from_json(data)._asdict(),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return None


def is_running(handle: BrokerHandle) -> bool:
    """True if the broker's process is alive (and really is that broker, not a reused pid)."""
    if handle._process is not None:
        return handle._process.poll() is None
    return is_broker_process(handle.pid, handle.data_dir)


def broker_status(state_file: Path | None = None) -> BrokerHandle | None:
    """The broker recorded in the state file if its process is alive and it answers, else None."""
    handle = load_state(state_file)
    if handle is None or not is_running(handle):
        return None
    if not handle.answers(timeout=5.0):
        return None
    return handle
