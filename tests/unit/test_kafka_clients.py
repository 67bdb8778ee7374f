"""Which client errors end a process, and how the end is worded
(seqgate/runtime/kafka_clients.py)."""

from __future__ import annotations

from confluent_kafka import KafkaError

from seqgate.runtime.kafka_clients import consumer_failure, is_fatal

FENCED_STATIC_MEMBER = (
    "Fatal error: Broker: Static consumer fenced by other consumer with same"
    " group.instance.id: Fatal consumer error: Broker: Static consumer fenced by other"
    " consumer with same group.instance.id"
)


def test_a_consumed_fatal_code_is_fatal_even_without_the_flag() -> None:
    # What a consumer fenced after a long broker outage delivers on a message.
    error = KafkaError(KafkaError._FATAL, FENCED_STATIC_MEMBER)
    assert not error.fatal()
    assert is_fatal(error)


def test_flagged_errors_are_fatal_and_transient_ones_are_not() -> None:
    assert is_fatal(KafkaError(KafkaError._FENCED, "fenced", fatal=True))
    assert not is_fatal(KafkaError(KafkaError._TRANSPORT, "broker down"))
    assert not is_fatal(KafkaError(KafkaError._ALL_BROKERS_DOWN, "all brokers down"))


def test_a_fenced_static_member_is_explained_and_the_restart_named() -> None:
    line = consumer_failure(KafkaError(KafkaError._FATAL, FENCED_STATIC_MEMBER), "the worker")
    assert line.startswith("the Kafka consumer failed for good: Fatal error")
    assert "two instances share an id" in line and "broker outage" in line
    assert line.endswith("; restart the worker")
    plain = consumer_failure(KafkaError(KafkaError._FATAL, "Fatal error: other"), "the bridge")
    assert "share an id" not in plain and plain.endswith("; restart the bridge")
