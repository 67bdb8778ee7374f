"""Every Kafka client the worker, `bridge kafka` and `reset` create, and the exact
configuration each gets (seqgate/runtime/kafka_clients.py builds them all).

The clients are made through the commands' own entry points (the worker's constructor, its
takeover fencer and readers, its standby thread, the bridge's source, reset's session) with
confluent-kafka's `Producer` and `Consumer` replaced by stand-ins that keep the
configuration: the dicts below were captured from the code before the producer's settings
moved into one function, so a refactor that changes one property fails here.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest

from seqgate.connectors.sources.kafka_topic import KafkaSource, KafkaSourceConfig
from seqgate.runtime.errors import KafkaSettingsError, ProducerLost
from seqgate.runtime.kafka_clients import LIBRDKAFKA_LOGGER, transactional_producer_config
from seqgate.runtime.kafka_settings import KafkaSettings, build_settings
from seqgate.runtime.transaction_failures import FatalErrorTrap
from seqgate.streams.rules.policy import Policy
from seqgate.streams.tools.reset import _reset_session
from seqgate.streams.tools.reset_plan import OffsetTarget, ResetRequest, StateMode, TargetKind
from seqgate.streams.worker.handover import PendingOwners, takeover_reader
from seqgate.streams.worker.processor import Worker, WorkerConfig
from seqgate.streams.worker.standby import StandbyReplicas

# A user property (-X client.id=me) that no seqgate setting names: it reaches every client.
KAFKA = KafkaSettings("k:9092", {"client.id": "me"}, {"client.id": "-X"})
COMMON = {"bootstrap.servers": "k:9092", "client.id": "me", "logger": "librdkafka logger"}
COMMON["metadata.recovery.strategy"] = "none"

Made = list[tuple[str, dict[str, Any]]]


class _Client:
    """A Producer or Consumer that keeps its configuration and answers every call with []."""

    def __init__(self, kind: str, config: dict[str, Any], made: Made) -> None:
        made.append((kind, _shown(config)))

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: []


def _shown(config: dict[str, Any]) -> dict[str, Any]:
    """The configuration with its Python objects named: the librdkafka logger, and the
    type of an error callback."""
    shown = dict(config)
    if shown.get("logger") is LIBRDKAFKA_LOGGER:
        shown["logger"] = "librdkafka logger"
    if "error_cb" in shown:
        callback = shown["error_cb"]
        shown["error_cb"] = "trap" if isinstance(callback, FatalErrorTrap) else "function"
    return shown


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[Made]:
    """The clients made while the test runs, wherever in seqgate they are made."""
    clients: Made = []
    stand_ins = {
        confluent_kafka.Producer: lambda config: _Client("producer", config, clients),
        confluent_kafka.Consumer: lambda config: _Client("consumer", config, clients),
    }
    for name, module in list(sys.modules.items()):
        if not name.startswith("seqgate") or module is None:
            continue
        for attribute in ("Producer", "Consumer"):
            real = getattr(module, attribute, None)
            if real in stand_ins:
                monkeypatch.setattr(module, attribute, stand_ins[real])
    yield clients


def _worker_config(tmp_path: Path, **changes: Any) -> WorkerConfig:
    settings: dict[str, Any] = {"transaction_timeout_ms": 61_000, "session_timeout_ms": 30_000}
    return WorkerConfig(
        kafka=KAFKA,
        state_dir=tmp_path,
        application_id="app",
        instance_id="w1",
        engine="python",
        **{**settings, **changes},
    )


# ---- the worker --------------------------------------------------------------------------

WORKER_PRODUCER = {
    **COMMON,
    "transactional.id": "app-w1",
    "error_cb": "trap",
    "transaction.timeout.ms": 61_000,
    "enable.idempotence": True,
    "acks": "all",
    "linger.ms": 5,
    "partitioner": "murmur2_random",
}
WORKER_CONSUMER = {
    **COMMON,
    "group.id": "app",
    "group.instance.id": "w1",
    "isolation.level": "read_committed",
    "enable.auto.commit": False,
    "auto.offset.reset": "earliest",
    "partition.assignment.strategy": "cooperative-sticky",
    "session.timeout.ms": 30_000,
    "heartbeat.interval.ms": 500,
    "enable.partition.eof": False,
}
READER = {
    **COMMON,
    "isolation.level": "read_committed",
    "fetch.wait.max.ms": 10,
    "fetch.queue.backoff.ms": 10,
    "enable.auto.commit": False,
    "enable.partition.eof": True,
    "auto.offset.reset": "earliest",
}


def test_the_worker_makes_its_consumers_and_its_transactional_producer(
    made: Made, tmp_path: Path
) -> None:
    Worker(_worker_config(tmp_path))
    assert made == [
        ("consumer", WORKER_CONSUMER),
        ("consumer", {**READER, "group.id": "app-restore"}),
        ("producer", WORKER_PRODUCER),
    ]


def test_a_lost_producer_is_replaced_by_one_made_the_same_way(made: Made, tmp_path: Path) -> None:
    worker = Worker(_worker_config(tmp_path))
    session = worker._session
    first_trap = session._trap
    session.renew(ProducerLost("fenced", hung=False, what="fenced"), lambda: False)
    assert made[-2:] == [("producer", WORKER_PRODUCER), ("producer", WORKER_PRODUCER)]
    # The new producer's errors go to a new trap, the one the session consults.
    assert isinstance(session._trap, FatalErrorTrap) and session._trap is not first_trap


def test_dynamic_eager_workers_and_their_extra_client_properties(
    made: Made, tmp_path: Path
) -> None:
    config = _worker_config(
        tmp_path,
        membership="dynamic",
        rebalance="eager",
        extra_producer_config={"linger.ms": "0", "compression.type": "lz4"},
        extra_consumer_config={"fetch.wait.max.ms": "10"},
    )
    Worker(config)
    consumer = {key: value for key, value in WORKER_CONSUMER.items() if key != "group.instance.id"}
    assert made == [
        (
            "consumer",
            {**consumer, "partition.assignment.strategy": "range", "fetch.wait.max.ms": "10"},
        ),
        ("consumer", {**READER, "group.id": "app-restore"}),
        ("producer", {**WORKER_PRODUCER, "linger.ms": "0", "compression.type": "lz4"}),
    ]


def test_the_heartbeat_is_at_most_a_third_of_the_session_timeout(
    made: Made, tmp_path: Path
) -> None:
    Worker(_worker_config(tmp_path, session_timeout_ms=900))
    assert made[0] == (
        "consumer",
        {**WORKER_CONSUMER, "session.timeout.ms": 900, "heartbeat.interval.ms": 300},
    )


OFFSETS_CONSUMER = {**COMMON, "enable.auto.commit": False}


def test_the_takeover_fencer_its_readers_and_its_mark(made: Made, tmp_path: Path) -> None:
    config = _worker_config(tmp_path, extra_producer_config={"retry.backoff.ms": "50"})
    owners = PendingOwners(config)
    owners._open_readers()
    owners._end("w0", [1])  # the mark, then the producer of w0's transactional.id
    takeover_reader(config)(0.0)
    assert made == [
        (
            "consumer",
            {**OFFSETS_CONSUMER, "group.id": "app", "isolation.level": "read_uncommitted"},
        ),
        ("consumer", {**OFFSETS_CONSUMER, "group.id": "app", "isolation.level": "read_committed"}),
        ("consumer", {**OFFSETS_CONSUMER, "group.id": "app-fenced-w0"}),
        (
            "producer",
            {
                **WORKER_PRODUCER,
                "transactional.id": "app-w0",
                "error_cb": "function",
                "retry.backoff.ms": "50",  # the worker's extra properties win
                "retry.backoff.max.ms": "100",
            },
        ),
        ("consumer", {**OFFSETS_CONSUMER, "group.id": "app-fenced-w1"}),
    ]


def test_the_standby_follower_and_the_owners_stamps(made: Made, tmp_path: Path) -> None:
    standbys = StandbyReplicas(_worker_config(tmp_path), "topic-id", None)  # type: ignore[arg-type]
    standbys._stop.set()  # the thread makes its clients, then closes them
    standbys._run()
    assert made == [
        ("consumer", {**READER, "group.id": "app-standby-w1", "fetch.wait.max.ms": 100}),
        ("consumer", {**OFFSETS_CONSUMER, "group.id": "app-owners"}),
    ]


# ---- bridge kafka and reset ----------------------------------------------------------------


def test_the_kafka_topic_bridge(made: Made) -> None:
    config = KafkaSourceConfig(
        kafka=KAFKA,
        source_topic="raw",
        group_id="g",
        transactional_id="b-1",
        transaction_timeout_ms=62_000,
        session_timeout_ms=31_000,
        idle_exit_seconds=3.0,
    )
    KafkaSource(config)
    KafkaSource(
        KafkaSourceConfig(kafka=KAFKA, source_topic="raw", group_id="g", transactional_id="b-2")
    )
    consumer = {
        **COMMON,
        "group.id": "g",
        "group.instance.id": "b-1",
        "session.timeout.ms": 31_000,
        "isolation.level": "read_committed",
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "enable.partition.eof": True,
    }
    producer = {
        **COMMON,
        "transactional.id": "b-1",
        "transaction.timeout.ms": 62_000,
        "enable.idempotence": True,
        "acks": "all",
        "linger.ms": 5,
        "partitioner": "murmur2_random",
    }
    assert made == [
        ("consumer", consumer),
        ("producer", producer),
        (
            "consumer",
            {
                **consumer,
                "group.instance.id": "b-2",
                "session.timeout.ms": 45_000,
                "enable.partition.eof": False,
            },
        ),
        ("producer", {**producer, "transactional.id": "b-2", "transaction.timeout.ms": 60_000}),
    ]


def test_reset(made: Made) -> None:
    request = ResetRequest(
        kafka=KAFKA,
        application_id="app",
        input_topic="in",
        target=OffsetTarget(TargetKind.EARLIEST),
        state=StateMode.REBUILD,
        policy=Policy.build(),
    )
    _reset_session(request)
    assert made == [
        (
            "producer",
            {
                **COMMON,
                "transactional.id": "app/reset",
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "transaction.timeout.ms": 300_000,
            },
        )
    ]


# ---- what the user may not set, and what the user's properties change -----------------------


REFUSED = {
    "transactional.id": "seqgate derives it from --application-id and --instance-id"
    " (or --transactional-id): the broker fences a restarted instance by it",
    "enable.idempotence": "seqgate's producers are idempotent; exactly-once depends on it",
    "acks": "seqgate's producers use acks=all; exactly-once depends on it",
    "transaction.timeout.ms": "give it with --transaction-timeout-ms",
    "partitioner": "bridge and worker must map a key to the same partition (murmur2_random,"
    " the Java client's)",
    "group.id": "give the group with --application-id (or --group-id)",
    "group.instance.id": "give it with --instance-id",
    "session.timeout.ms": "give it with --session-timeout-ms",
    "isolation.level": "seqgate reads read_committed so that aborted records never count",
    "enable.auto.commit": "seqgate commits offsets itself, in its transactions or after delivery",
    "auto.offset.reset": "a new group starts at the earliest offset so that no input is skipped;"
    " move a group with `seqgate reset`",
    "partition.assignment.strategy": "seqgate's consumers rebalance cooperatively (the worker:"
    " choose with --rebalance)",
    "enable.partition.eof": "seqgate sets it per client to notice the end of a partition",
    "metadata.recovery.strategy": "seqgate sets none: the default left an offset commit"
    " hanging after a full broker outage (librdkafka issue 5456)",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_the_properties_seqgate_sets_are_refused_with_the_same_message(name: str) -> None:
    with pytest.raises(KafkaSettingsError) as caught:
        build_settings("b:1", flags=[f"{name}=x"])
    assert str(caught.value) == (f"{name} (-X): seqgate sets this property itself; {REFUSED[name]}")


def test_every_property_a_transactional_producer_gets_from_seqgate_is_refused_or_tuning() -> None:
    config = transactional_producer_config("b:1", "t", 1_000)
    tuning = {"linger.ms"}  # the user's value wins (below)
    callbacks = {"logger"}
    assert set(config) - set(REFUSED) - tuning - callbacks == {"bootstrap.servers"}


def test_the_users_tuning_wins_over_the_producers_linger(made: Made) -> None:
    kafka = KafkaSettings("k:9092", {"linger.ms": "7"}, {"linger.ms": "-X"})
    request = ResetRequest(
        kafka=kafka,
        application_id="app",
        input_topic="in",
        target=OffsetTarget(TargetKind.EARLIEST),
        state=StateMode.REBUILD,
        policy=Policy.build(),
    )
    _reset_session(request)
    KafkaSource(
        KafkaSourceConfig(kafka=kafka, source_topic="r", group_id="g", transactional_id="b")
    )
    assert [config["linger.ms"] for kind, config in made if kind == "producer"] == ["7", "7"]
