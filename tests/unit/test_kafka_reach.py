"""`ensure_reachable`: an unreachable or refusing Kafka is one line naming the address,
the cause and the fix, within the timeout. Real sockets on loopback (a closed port, a
server that is not Kafka, a port that accepts and never answers); the secured broker's refusals are
in tests/kafka/test_secured_pipeline.py."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from confluent_kafka import KafkaError

from seqgate.runtime.errors import KafkaUnreachable
from seqgate.runtime.kafka_reach import classify, ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from tests.support.kafka_helpers import closed_port


@contextlib.contextmanager
def listener(on_accept: Callable[[socket.socket], None]) -> Iterator[int]:
    """A loopback port whose connections get `on_accept`; closed at the end."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    server.settimeout(0.2)
    accepted: list[socket.socket] = []
    done = threading.Event()

    def accept() -> None:
        while not done.is_set():
            try:
                conn = server.accept()[0]
            except OSError:
                continue
            accepted.append(conn)
            on_accept(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        done.set()
        thread.join(5)
        for conn in accepted:
            conn.close()
        server.close()


@pytest.fixture
def ssh_port() -> Iterator[int]:
    """Speaks first, as an SSH server does: the wrong port of a host."""
    with listener(lambda conn: conn.sendall(b"SSH-2.0-OpenSSH_9.2p1\r\n")) as port:
        yield port


@pytest.fixture
def silent_port() -> Iterator[int]:
    """Accepts connections and never writes a byte (an HTTP server waiting for a
    request line that Kafka's binary protocol never sends behaves the same)."""
    with listener(lambda conn: None) as port:
        yield port


def unreachable(bootstrap: str, timeout_s: float) -> tuple[str, float]:
    started = time.monotonic()
    with pytest.raises(KafkaUnreachable) as caught:
        ensure_reachable(KafkaSettings(bootstrap, timeout_s=timeout_s))
    return str(caught.value), time.monotonic() - started


def test_a_closed_port_is_connection_refused_at_the_timeout() -> None:
    address = f"127.0.0.1:{closed_port()}"
    line, took = unreachable(address, 2.0)
    assert line.startswith(f"Kafka at {address}: no broker answered within 2 s: connection refused")
    assert "check the address and that the brokers are running" in line
    assert "\n" not in line
    assert 1.9 <= took < 5.0


def test_a_server_that_is_not_kafka_is_said_at_once(ssh_port: int) -> None:
    address = f"127.0.0.1:{ssh_port}"
    line, took = unreachable(address, 10.0)
    assert line.startswith(f"Kafka at {address} refused the connection: the address answers,")
    assert "not as a Kafka listener" in line
    assert took < 5.0  # definitive: no need to wait for the timeout


def test_a_port_that_never_answers_says_so_at_the_timeout(silent_port: int) -> None:
    address = f"127.0.0.1:{silent_port}"
    line, took = unreachable(address, 2.0)
    assert line.startswith(f"Kafka at {address}: no broker answered within 2 s")
    assert "raise --kafka-timeout" in line
    assert 1.9 <= took < 5.0


def test_a_name_that_does_not_resolve_is_named() -> None:
    line, took = unreachable("kafka.seqgate.invalid:9092", 2.0)
    assert "the host name does not resolve" in line and "kafka.seqgate.invalid:9092" in line
    assert took < 5.0


# ---- librdkafka's messages, as seen from real clients -----------------------------------

SEEN = {
    "authentication failed": (
        KafkaError._AUTHENTICATION,
        "sasl_ssl://127.0.0.1:4/bootstrap: SASL authentication error: Authentication failed"
        " during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512",
    ),
    "TLS verification of the broker's certificate failed": (
        KafkaError._SSL,
        "ssl://127.0.0.1:4/bootstrap: SSL handshake failed: error:0A000086:SSL routines::"
        "certificate verify failed: broker certificate could not be verified, verify that"
        " ssl.ca.location is correctly configured",
    ),
    "protocol mismatch": (
        KafkaError._TRANSPORT,
        "127.0.0.1:4/bootstrap: Disconnected while requesting ApiVersion: might be caused by"
        " incorrect security.protocol configuration (connecting to a SSL listener?)",
    ),
    "connection refused": (
        KafkaError._TRANSPORT,
        "127.0.0.1:1/bootstrap: Connect to ipv4#127.0.0.1:1 failed: Connection refused",
    ),
    "the host name does not resolve": (
        KafkaError._RESOLVE,
        "nohost:9092/bootstrap: Failed to resolve 'nohost:9092': Name or service not known",
    ),
}


@pytest.mark.parametrize("summary", sorted(SEEN))
def test_each_cause_is_recognised(summary: str) -> None:
    code, text = SEEN[summary]
    cause = classify(code, text)
    assert cause is not None and cause.summary.startswith(summary)


def test_all_brokers_down_alone_is_not_a_cause() -> None:
    assert classify(KafkaError._ALL_BROKERS_DOWN, "1/1 brokers are down") is None
