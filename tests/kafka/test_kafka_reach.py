"""`ensure_reachable`: an unreachable or refusing Kafka is one line naming the address,
the cause and the fix, within the timeout. Real sockets on loopback (a closed port, a
server that is not Kafka, a port that accepts and never answers); the secured broker's refusals are
in tests/kafka/test_secured_pipeline.py."""

from __future__ import annotations

import time

import pytest

from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings


@pytest.mark.kafka
def test_a_live_broker_answers_at_once(kafka_bootstrap: str) -> None:
    started = time.monotonic()
    ensure_reachable(KafkaSettings(kafka_bootstrap, timeout_s=10.0))
    assert time.monotonic() - started < 3.0
