"""Fetch, once and before any test runs, everything the tests would otherwise download in
their setup: the broker's Kafka jars, Azurite (npm), Apicurio Registry (Maven), and the
benchmark's peers (the Kafka Streams peer's Maven build, Quix Streams' venv).

``scripts/bootstrap.sh`` runs ``python -m tests.support.prefetch`` after installing the
package; each piece is cached under ``${SEQGATE_HOME:-~/.cache/seqgate}`` behind a marker
written after a complete fetch, so a later run only checks the markers (a second or two).
A piece that cannot be had here is said in one line and makes the exit code 1 under
``$CI`` (the tests that need it would fail there anyway, later and slower); elsewhere it is
a warning, and those tests skip with the same reason.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from seqgate_devtools.bench.peers.catalog import peer_named
from seqgate_devtools.broker.jars import ensure_kafka_jars
from seqgate_devtools.errors import BrokerError, PeerUnavailable

from tests.support.apicurio import RegistryUnavailable, ensure_apicurio, find_java_21
from tests.support.azurite import AzuriteUnavailable, ensure_azurite
from tests.support.required import in_ci

__all__ = ["PIECES", "main"]


def _quiet(line: str) -> None:
    del line


def _kafka_jars() -> None:
    ensure_kafka_jars(_quiet)


def _apicurio() -> None:
    find_java_21()  # it cannot run without Java 21+: say so rather than fetch it
    ensure_apicurio()


def _azurite() -> None:
    ensure_azurite()


def _peer(name: str) -> Callable[[], None]:
    def prepare() -> None:
        peer_named(name).command(_quiet)

    return prepare


# What is fetched, in order, with what each needs it for.
PIECES: tuple[tuple[str, str, Callable[[], None]], ...] = (
    ("Kafka jars", "every broker the tests start", _kafka_jars),
    ("Azurite", "the Azure listing tests", _azurite),
    ("Apicurio Registry", "the schema registry tests", _apicurio),
    ("Kafka Streams peer", "the bench's peers", _peer("kafka-streams")),
    ("Quix Streams peer", "the bench's peers", _peer("quix")),
)

_FAILURES = (
    AzuriteUnavailable,
    BrokerError,
    PeerUnavailable,
    RegistryUnavailable,
    OSError,
    RuntimeError,
)


def main() -> int:
    missing = 0
    for name, needed_by, fetch in PIECES:
        started = time.monotonic()
        try:
            fetch()
        except _FAILURES as error:
            missing += 1
            print(f"prefetch: {name} (for {needed_by}) cannot be had: {error}", file=sys.stderr)
            continue
        print(f"prefetch: {name} ready ({time.monotonic() - started:.1f} s)")
    return 1 if missing and in_ci() else 0


if __name__ == "__main__":
    raise SystemExit(main())
