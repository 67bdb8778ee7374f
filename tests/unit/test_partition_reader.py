"""The partition reader's end, stop and failures, against a scripted consumer."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator
from typing import Any, cast

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from seqgate.runtime.errors import PartitionStalled
from seqgate.runtime.partition_reader import PartitionReader, PartitionReadFailed, reader_config


class _Message:
    def __init__(self, offset: int, error: KafkaError | None = None) -> None:
        self._offset = offset
        self._error = error

    def offset(self) -> int:
        return self._offset

    def error(self) -> KafkaError | None:
        return self._error


def _end(offset: int) -> _Message:
    return _Message(offset, KafkaError(KafkaError._PARTITION_EOF))


class _ScriptedConsumer:
    """Returns the scripted batches one per consume() call, then nothing."""

    def __init__(self, *batches: list[_Message]) -> None:
        self._batches = list(batches)
        self.assigned: list[TopicPartition] = []

    def assign(self, partitions: list[TopicPartition]) -> None:
        self.assigned = partitions

    def consume(self, num_messages: int, timeout: float) -> list[_Message]:
        return self._batches.pop(0)[:num_messages] if self._batches else []


def _read(
    consumer: _ScriptedConsumer, begin: int, stop: int | None = None
) -> tuple[list[list[int | None]], PartitionReader]:
    """(the offsets read, batch by batch; the reader)."""
    reader = PartitionReader(cast(Consumer, consumer), "t", 0, timeout=30.0)
    read = [[message.offset() for message in batch] for batch in reader.batches(begin, stop)]
    return read, reader


def test_reads_from_the_offset_to_the_end_of_partition_event() -> None:
    consumer = _ScriptedConsumer([_Message(3), _Message(4)], [_Message(6), _end(8)])
    read, reader = _read(consumer, 3)
    assert consumer.assigned[0].offset == 3
    assert read == [[3, 4], [6]]
    assert reader.end_offset == 8  # past the gap a transaction marker leaves


def test_what_follows_the_end_is_not_read() -> None:
    consumer = _ScriptedConsumer([_Message(0), _end(1), _Message(1)])
    read, reader = _read(consumer, 0)
    assert read == [[0]]
    assert reader.end_offset == 1


def test_an_empty_partition_gives_no_batch() -> None:
    read, reader = _read(_ScriptedConsumer([_end(0)]), 0)
    assert read == []
    assert reader.end_offset == 0


@pytest.mark.parametrize(
    ("stop", "expected"),
    [(5, [[3, 4]]), (6, [[3, 4]]), (7, [[3, 4, 6]]), (4, [[3]]), (3, [])],
)
def test_stop_is_exclusive_and_ends_the_read_before_the_end(
    stop: int, expected: list[list[int]]
) -> None:
    consumer = _ScriptedConsumer([_Message(3), _Message(4), _Message(6), _Message(7)])
    read, reader = _read(consumer, 3, stop)
    assert read == expected
    assert reader.end_offset is None


def test_a_consumer_error_fails_the_read_with_it() -> None:
    failure = KafkaError(KafkaError._TRANSPORT)
    consumer = _ScriptedConsumer([_Message(0)], [_Message(1, failure)])
    batches = PartitionReader(cast(Consumer, consumer), "t", 0, timeout=30.0).batches(0)
    assert [message.offset() for message in next(batches)] == [0]
    with pytest.raises(PartitionReadFailed) as raised:
        next(batches)
    assert raised.value.error.code() == KafkaError._TRANSPORT
    assert isinstance(raised.value, KafkaException)


def test_no_record_for_the_timeout_stalls_the_read(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = itertools.count()  # a second per look at the clock
    monkeypatch.setattr(time, "monotonic", lambda: next(clock))
    consumer = _ScriptedConsumer([_Message(7)])
    reader = PartitionReader(cast(Consumer, consumer), "t", 2, timeout=5.0)
    batches: Iterator[Any] = reader.batches(7)
    next(batches)
    with pytest.raises(PartitionStalled) as raised:
        next(batches)
    assert (raised.value.topic, raised.value.partition, raised.value.offset) == ("t", 2, 8)
    assert str(raised.value) == "reading t[2] made no progress at offset 8 for 5s"


def test_the_reader_config_reads_committed_records_to_the_end_quickly() -> None:
    config = reader_config("127.0.0.1:9092", "app-verify")
    assert config["group.id"] == "app-verify"
    assert config["isolation.level"] == "read_committed"
    assert config["enable.partition.eof"] is True
    assert config["enable.auto.commit"] is False
    assert (config["fetch.wait.max.ms"], config["fetch.queue.backoff.ms"]) == (10, 10)
