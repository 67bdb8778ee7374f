"""Is Kafka there? The one check every command makes before its real work, so that an
unreachable or misconfigured cluster is one line naming the address, the cause as
librdkafka reported it and the fix, within `--kafka-timeout`, instead of a long silence.
"""

from __future__ import annotations

import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from seqgate.runtime.errors import KafkaUnreachable
from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings

# librdkafka's codes of a connection that failed (rather than a request the cluster refused).
CONNECTION_CODES = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
        KafkaError._AUTHENTICATION,
        KafkaError._SSL,
        KafkaError._TIMED_OUT,
        KafkaError._BAD_MSG,
        KafkaError.SASL_AUTHENTICATION_FAILED,
    }
)


_TLS_QUESTION_AFTER_S = 1.0
# How long one metadata request may take, doubling from the first to the longest: short
# while brokers answer at once, long enough for a slow network.
_FIRST_METADATA_WAIT_S = 0.5
_LONGEST_METADATA_WAIT_S = 4.0


@dataclass(frozen=True, slots=True)
class Cause:
    """What went wrong, in the words an operator acts on, and how definitive it is."""

    summary: str
    fix: str
    definitive: bool  # retrying within the timeout cannot cure it


def classify(code: int, text: str) -> Cause | None:
    """The cause behind one of librdkafka's connection errors (None: not one)."""
    lowered = text.lower()
    if code in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED) or (
        "sasl authentication" in lowered
    ):
        return Cause(
            "authentication failed",
            "check sasl.mechanism, sasl.username and sasl.password",
            definitive=True,
        )
    if "certificate verify failed" in lowered or "broker certificate could not be verified" in (
        lowered
    ):
        return Cause(
            "TLS verification of the broker's certificate failed",
            "set ssl.ca.location to the CA that signed the brokers' certificates"
            " (and check that the host name matches the certificate)",
            definitive=True,
        )
    if (
        "incorrect security.protocol" in lowered
        or "wrong version number" in lowered
        or "plaintext broker listener" in lowered
    ):
        return Cause(
            "protocol mismatch (a plaintext client on a TLS listener, or the reverse)",
            "set security.protocol to the listener's (SSL or SASL_SSL for a TLS port)",
            definitive=True,
        )
    if "ssl" in lowered and ("handshake" in lowered or code == KafkaError._SSL):
        return Cause(
            "the TLS handshake failed",
            "check security.protocol and the ssl.* properties against the listener",
            definitive=True,
        )
    if "invalid response size" in lowered:
        return Cause(
            "the address answers, but not as a Kafka listener",
            "check the host and port of --bootstrap-servers",
            definitive=True,
        )
    if code == KafkaError._RESOLVE or "failed to resolve" in lowered:
        return Cause(
            "the host name does not resolve", "check the host names of --bootstrap-servers", False
        )
    if "connection refused" in lowered:
        return Cause(
            "connection refused",
            "check the address and that the brokers are running and listening there",
            definitive=False,
        )
    if code in CONNECTION_CODES and code != KafkaError._ALL_BROKERS_DOWN:
        return Cause(
            "the connection failed",
            "check the address, the network and security.protocol",
            definitive=False,
        )
    return None


def unreachable_line(kafka: KafkaSettings, detail: str, cause: Cause | None) -> str:
    """The one line for an unreachable or refusing cluster."""
    where = f"Kafka at {kafka.bootstrap_servers}"
    if cause is None:
        return (
            f"{where}: no broker answered within {kafka.timeout_s:g} s and no connection error"
            " was reported (packets dropped by a firewall, or not a Kafka port?); check the"
            " address and the network, or raise --kafka-timeout"
        )
    if cause.definitive:
        return (
            f"{where} refused the connection: {cause.summary} ({kafka.mask(detail)}); {cause.fix}"
        )
    return (
        f"{where}: no broker answered within {kafka.timeout_s:g} s: {cause.summary}"
        f" ({kafka.mask(detail)}); {cause.fix}"
    )


class _Errors:
    """The connection errors librdkafka reports while the check runs (its own thread)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.seen: list[tuple[int, str]] = []

    def __call__(self, error: KafkaError) -> None:
        with self._lock:
            self.seen.append((error.code(), error.str()))

    def worst(self) -> tuple[str, Cause] | None:
        """The most telling error so far: a definitive one wins over a retriable one."""
        with self._lock:
            seen = list(self.seen)
        best: tuple[str, Cause] | None = None
        for code, text in seen:
            cause = classify(code, text)
            if cause is None:
                continue
            if cause.definitive:
                return text, cause
            if best is None:
                best = text, cause
        return best


def ensure_reachable(kafka: KafkaSettings) -> None:
    """Return once a broker returns metadata; raise `KafkaUnreachable` with one line
    as soon as the cause is definitive (authentication, TLS), or at `kafka.timeout_s`."""
    errors = _Errors()
    timeout_ms = max(1000, int(kafka.timeout_s * 1000))
    admin = AdminClient(
        client_config(
            kafka,
            error_cb=errors,
            **{
                "socket.connection.setup.timeout.ms": timeout_ms,
                "reconnect.backoff.ms": 100,
                "reconnect.backoff.max.ms": 1000,
            },
        )
    )
    started = time.monotonic()
    deadline = started + kafka.timeout_s
    tls_asked = False
    wait_s = _FIRST_METADATA_WAIT_S
    while True:
        remaining = deadline - time.monotonic()
        try:
            metadata = admin.list_topics(timeout=max(0.05, min(wait_s, remaining)))
        except KafkaException:
            metadata = None
        # A fixed 0.5 s was never answered through 300 ms of delay each way (measured:
        # tests/torture/test_cluster_partitions.py); a healthy broker answers the first.
        wait_s = min(2 * wait_s, _LONGEST_METADATA_WAIT_S)
        if metadata is not None and metadata.brokers:
            return
        admin.poll(0)  # deliver pending error callbacks
        worst = errors.worst()
        if worst is not None and worst[1].definitive:
            raise KafkaUnreachable(unreachable_line(kafka, *worst))
        if worst is None and not tls_asked and time.monotonic() - started >= _TLS_QUESTION_AFTER_S:
            # A TLS listener reached in plaintext never answers (the broker waits for a
            # ClientHello) and librdkafka reports nothing: ask the port itself.
            tls_asked = True
            address = _tls_listener(kafka, min(2.0, max(0.1, deadline - time.monotonic())))
            if address is not None:
                raise KafkaUnreachable(unreachable_line(kafka, *_plaintext_on_tls(address)))
        if remaining <= 0:
            if worst is None:
                raise KafkaUnreachable(unreachable_line(kafka, "", None))
            raise KafkaUnreachable(unreachable_line(kafka, *worst))


def _plaintext_on_tls(address: str) -> tuple[str, Cause]:
    return (
        f"{address} completed a TLS handshake",
        Cause(
            "protocol mismatch (a plaintext client on a TLS listener)",
            "set security.protocol to SSL or SASL_SSL (and the ssl.* and sasl.* properties)",
            definitive=True,
        ),
    )


def _tls_listener(kafka: KafkaSettings, timeout_s: float) -> str | None:
    """The first bootstrap address that speaks TLS, when the client is set for plaintext."""
    protocol = kafka.properties.get("security.protocol", "plaintext").lower()
    if protocol not in ("plaintext", "sasl_plaintext"):
        return None
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # only asking whether the port speaks TLS
    for address in kafka.bootstrap_servers.split(","):
        host, _, port = address.strip().rpartition(":")
        if not host or not port.isdigit():
            continue
        try:
            with (
                socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s) as raw,
                context.wrap_socket(raw, server_hostname=host.strip("[]")),
            ):
                return address.strip()
        except (OSError, ssl.SSLError):
            continue
    return None


def unreachable_brokers(brokers: Mapping[int, Any], timeout_s: float = 1.0) -> frozenset[int]:
    """The brokers of a metadata answer (id → BrokerMetadata) that refuse a TCP connection
    or do not accept one within ``timeout_s``: a listed broker need not be alive (see
    runtime/replication.py)."""
    down = set()
    for node, broker in brokers.items():
        try:
            with socket.create_connection((broker.host, broker.port), timeout=timeout_s):
                pass
        except OSError:
            down.add(node)
    return frozenset(down)
