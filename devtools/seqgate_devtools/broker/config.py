"""The broker's ``server.properties``: one KRaft node (broker and controller) on free ports."""

from __future__ import annotations

import base64
import socket
import uuid
from pathlib import Path

from seqgate_devtools.broker import security as sec
from seqgate_devtools.broker.locations import HOST

__all__ = ["cluster_id", "free_ports", "server_properties", "write_server_properties"]

_NODE_ID = 1


def free_ports(count: int, host: str = HOST) -> list[int]:
    """``count`` ports of ``host`` that were free a moment ago (a start retries if one is
    taken)."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((host, 0))
            sockets.append(s)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def cluster_id() -> str:
    """A random Kafka cluster id (what ``kafka-storage.sh random-uuid`` prints)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def server_properties(
    port: int, controller_port: int, log_dir: Path, material: sec.SecurityMaterial | None
) -> str:
    """The text of ``server.properties`` (SASL_SSL client listener when ``material`` is given)."""
    props = {
        "process.roles": "broker,controller",
        "node.id": str(_NODE_ID),
        "controller.quorum.voters": f"{_NODE_ID}@{HOST}:{controller_port}",
        "listeners": f"PLAINTEXT://{HOST}:{port},CONTROLLER://{HOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{HOST}:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        # A single node: every internal topic has one replica, or transactions never start.
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    if material is not None:
        props.update(sec.server_properties(material, HOST, port, controller_port))
    lines = [
        "# seqgate development broker (generated; rewritten on every start)",
        *(f"{key}={value}" for key, value in props.items()),
    ]
    return "\n".join(lines) + "\n"


def write_server_properties(
    data_dir: Path, port: int, controller_port: int, material: sec.SecurityMaterial | None
) -> Path:
    """Write ``<data_dir>/server.properties`` (Kafka data in ``<data_dir>/kraft``)."""
    props = data_dir / "server.properties"
    props.write_text(
        server_properties(port, controller_port, data_dir / "kraft", material),
        encoding="utf-8",
    )
    props.chmod(0o600)  # it holds the SCRAM and keystore passwords in sasl_ssl mode
    return props
