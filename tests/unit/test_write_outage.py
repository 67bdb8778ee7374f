"""worker.outage, runtime.replication and kafka_reach.unreachable_brokers: a cluster that
cannot take writes, told from a stuck client and said once."""

from __future__ import annotations

import logging
import socket
from types import SimpleNamespace

import pytest
from confluent_kafka import KafkaError

from seqgate.runtime.kafka_reach import unreachable_brokers
from seqgate.runtime.replication import ReplicaState, describe_blocked, replica_states
from seqgate.streams.worker.outage import WriteOutage

_TIMEOUT = KafkaError(KafkaError._MSG_TIMED_OUT, "400 message(s) timed out")
_FENCED = KafkaError(KafkaError._FENCED, "fenced")


def _metadata() -> SimpleNamespace:
    def partition(pid: int, leader: int, isrs: list[int]) -> SimpleNamespace:
        return SimpleNamespace(id=pid, leader=leader, replicas=[3, 1, 2], isrs=isrs)

    outbox = SimpleNamespace(
        error=None,
        partitions={
            0: partition(0, 2, [2, 3]),
            1: partition(1, 3, [3, 2]),
            2: partition(2, -1, []),
            3: partition(3, 1, [1, 2, 3]),
        },
    )
    return SimpleNamespace(topics={"t.outbox": outbox}, brokers={2: None, 3: None})


def test_the_partitions_that_cannot_take_writes_are_named_with_the_brokers_up() -> None:
    metadata = _metadata()
    states = replica_states(metadata, ["t.outbox", "t.missing"])
    assert [s.partition for s in states] == [0, 1, 2, 3]
    # Broker 2 is listed but refuses connections: a lost quorum leaves it in the metadata.
    line = describe_blocked(states, metadata.brokers, frozenset({2}))
    assert line == (
        "4 of 4 partitions cannot take writes: t.outbox[0] (leader 2 is down; isr 2,3 of 1,2,3);"
        " t.outbox[1] (in-sync replica 2 is down; isr 2,3 of 1,2,3);"
        " t.outbox[2] (no leader; isr  of 1,2,3);"
        " t.outbox[3] (leader 1 is down; isr 1,2,3 of 1,2,3); brokers up: 3; down: 1, 2"
    )


def test_one_broker_down_after_the_isr_shrank_leaves_every_partition_writable() -> None:
    """The case where a call that hangs is the client's fault, not the cluster's."""
    states = [ReplicaState("t", p, 2 + p % 2, (1, 2, 3), (2, 3)) for p in range(6)]
    assert describe_blocked(states, [2, 3]) == ""


def test_an_in_sync_replica_that_is_down_blocks_writes_until_the_isr_drops_it() -> None:
    state = ReplicaState("t", 0, 2, (1, 2, 3), (1, 2, 3))
    assert state.blocker({2, 3}) == "in-sync replica 1 is down"
    assert state.blocker({1, 2, 3}) is None


def test_many_are_named_a_few_at_a_time() -> None:
    states = [ReplicaState("t", p, -1, (1, 2, 3), ()) for p in range(10)]
    assert describe_blocked(states, [1], examples=2).count("t[") == 2
    assert "and 8 more" in describe_blocked(states, [1], examples=2)


def test_an_outage_is_said_once_paused_growingly_and_its_end_said(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [100.0]
    outage = WriteOutage(lambda: "1 of 6 partitions cannot take writes", clock=lambda: now[0])
    with caplog.at_level(logging.WARNING, logger="seqgate.streams.worker.outage"):
        pauses = [outage.failed(_TIMEOUT) for _ in range(6)]
        now[0] = 160.0
        outage.committed()
        outage.committed()  # no outage: nothing more to say
    assert pauses == [1.0, 2.0, 4.0, 8.0, 15.0, 15.0]
    lines = [r for r in caplog.records if r.name == "seqgate.streams.worker.outage"]
    assert [r.getMessage() for r in lines] == [
        "Kafka is not taking the worker's writes; waiting for the cluster to recover",
        "Kafka takes the worker's writes again",
    ]
    assert lines[0].cluster == "1 of 6 partitions cannot take writes"  # type: ignore[attr-defined]
    assert lines[1].after_s == 60.0  # type: ignore[attr-defined]
    assert lines[1].failures == 6  # type: ignore[attr-defined]
    assert not outage.active and outage.failed(_TIMEOUT) == 1.0  # a new outage starts over


def test_repeats_are_info_lines_not_more_warnings(
    caplog: pytest.LogCaptureFixture,
) -> None:
    said = iter(["1 partition cannot take writes", "1 partition cannot take writes", "3 under"])
    outage = WriteOutage(lambda: next(said))
    with caplog.at_level(logging.INFO, logger="seqgate.streams.worker.outage"):
        for _ in range(3):
            outage.failed(_TIMEOUT)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        ("WARNING", "Kafka is not taking the worker's writes; waiting for the cluster to recover"),
        ("INFO", "Kafka is not taking the worker's writes; waiting for the cluster to recover"),
        ("INFO", "Kafka is not taking the worker's writes; waiting for the cluster to recover"),
    ]


def test_a_call_waiting_in_an_outage_is_waited_for_until_the_worker_stops() -> None:
    beats: list[int] = []
    outage = WriteOutage(
        lambda: "1 of 6 partitions cannot take writes", beat=lambda: beats.append(1)
    )
    assert outage.waiting() and outage.active
    assert beats == [1]  # waiting it out keeps the worker alive for its supervisor
    outage.stop.set()
    assert not outage.waiting()


def test_a_call_overrunning_with_every_replica_in_sync_is_not_waited_for() -> None:
    outage = WriteOutage(lambda: "")
    assert not outage.waiting() and not outage.active


def test_not_an_outage_when_the_error_is_not_or_every_partition_takes_writes() -> None:
    assert WriteOutage(lambda: "1 of 6 partitions cannot take writes").failed(_FENCED) is None
    assert WriteOutage(lambda: "").failed(_TIMEOUT) is None


def test_the_brokers_word_for_too_few_replicas_is_an_outage_on_its_face() -> None:
    refused = KafkaError(KafkaError.NOT_ENOUGH_REPLICAS, "Broker: Not enough in-sync replicas")
    outage = WriteOutage(lambda: "")
    assert outage.failed(refused) == 1.0 and outage.active


def test_a_listed_broker_that_refuses_connections_is_unreachable() -> None:
    with socket.socket() as listening, socket.socket() as closed:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        closed.bind(("127.0.0.1", 0))  # bound, never listening: connections are refused
        brokers = {
            1: SimpleNamespace(host="127.0.0.1", port=listening.getsockname()[1]),
            2: SimpleNamespace(host="127.0.0.1", port=closed.getsockname()[1]),
        }
        assert unreachable_brokers(brokers, timeout_s=2) == {2}
