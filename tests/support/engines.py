"""The Worker's two record engines side by side, without a broker (the differential tests).

`run_engine` decides a list of consumed records with the Python record step alone
(`--engine python`, the reference) or as the Worker does with the compiled core
(`--engine compiled`): the same loop as `Worker._decide`. Everything either writes is
kept in the order it was written: every produce() (topic, value, key, timestamp), the
open transaction's state changes, the bookkeeping (records, next offsets, tally,
decisions) and the exception that ended the run, if any. The producer and the committed
store are in memory: what is compared is the record step, which reads the one and writes
the other; the Kafka tier runs both engines against real brokers.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from seqgate.runtime.engines import load_core
from seqgate.runtime.faults import FaultInjector
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.session import TransactionalSession
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.streams.rules.policy import Policy
from seqgate.streams.worker.audit import Decision
from seqgate.streams.worker.compiled_step import CompiledStep
from seqgate.streams.worker.config import WorkerConfig
from seqgate.streams.worker.partition_stores import PartitionStores
from seqgate.streams.worker.pending import OpenTransaction, TransactionParts
from seqgate.streams.worker.refused import RefusedRecords
from seqgate.streams.worker.step import RecordStep


class Message:
    """A consumed record, with `confluent_kafka.Message`'s accessors."""

    def __init__(
        self,
        value: bytes | None,
        key: bytes | None,
        partition: int,
        offset: int,
        timestamp: int,
        error: Any = None,
        topic: str = "object-events",
    ) -> None:
        self._value, self._key, self._error = value, key, error
        self._partition, self._offset, self._timestamp = partition, offset, timestamp
        self._topic = topic

    def error(self) -> Any:
        return self._error

    def value(self) -> bytes | None:
        return self._value

    def key(self) -> bytes | None:
        return self._key

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return (1, self._timestamp)

    def topic(self) -> str:
        return self._topic


Produced = tuple[str, bytes | None, bytes | None, int]
Refusal = Callable[[str, bytes | None], BaseException | None]
"""What the producer raises for a (topic, value), or None: a BufferError once (a full
queue, which drains), any other exception every time (a record too large)."""


class Producer:
    """What the transactional producer was given, in order."""

    def __init__(self, sent: list[Produced], refuse: Refusal) -> None:
        self.sent = sent
        self._refuse = refuse
        self._drained: set[bytes | None] = set()

    def produce(
        self,
        topic: str,
        value: bytes | None = None,
        key: bytes | None = None,
        partition: int = -1,
        on_delivery: Any = None,
        timestamp: int = 0,
    ) -> None:
        refusal = self._refuse(topic, value)
        if isinstance(refusal, BufferError) and value in self._drained:
            refusal = None
        if refusal is not None:
            if isinstance(refusal, BufferError):
                self._drained.add(value)
            raise refusal  # refused before it was queued
        self.sent.append((topic, value, key, timestamp))


class Session:
    """The `TransactionalSession` surface the record step uses."""

    def __init__(self, sent: list[Produced], refuse: Refusal) -> None:
        self.producer = Producer(sent, refuse)
        self.in_transaction = False
        self.begun = 0

    def begin(self) -> None:
        self.in_transaction = True
        self.begun += 1

    def produce(
        self,
        topic: str,
        value: bytes | None,
        *,
        key: bytes | None = None,
        partition: int = -1,
        timestamp: int = 0,
        on_delivery: Any = None,
    ) -> None:
        while True:  # as TransactionalSession.produce: a full queue is waited for
            try:
                self.producer.produce(topic, value, key, partition, on_delivery, timestamp)
                return
            except BufferError:
                continue

    def on_delivery(self, error: Any, message: Any) -> None:
        pass


class Store:
    """A partition's committed state."""

    def __init__(self, committed: dict[bytes, bytes]) -> None:
        self._committed = committed

    @property
    def raw_reader(self) -> tuple[Any, bytes]:
        return self.get, b""

    def get(self, key: bytes) -> bytes | None:
        value = self._committed.get(key)
        if value == b"\xffbroken":
            raise OSError("the store failed to read")  # as a damaged RocksDB would
        return value


@dataclass
class Run:
    """All an engine wrote for one list of records."""

    sent: list[Produced] = field(default_factory=list)
    changes: dict[int, dict[bytes, bytes | None]] = field(default_factory=dict)
    records: int = 0
    next_offsets: dict[int, int] = field(default_factory=dict)
    tally: dict[Any, int] = field(default_factory=dict)
    decisions: list[Decision] = field(default_factory=list)
    raised: str | None = None
    begun: int = 0
    python_records: int = 0  # records the Python step decided


def run_engine(
    engine: str,
    messages: list[Message],
    committed: dict[int, dict[bytes, bytes]],
    *,
    policy: Policy,
    audit: bool = False,
    keep_decisions: bool = True,
    faults: FaultInjector | None = None,
    framing: Framing = SINGLE_OBJECT,
    refuse: Refusal = lambda topic, value: None,
) -> Run:
    """Decide `messages` into one open transaction with `engine` ("python" or "compiled")."""
    config = WorkerConfig(
        kafka=KafkaSettings("127.0.0.1:1"),
        state_dir=Path("/nonexistent"),
        policy=policy,
        audit_topic="object-events.decisions" if audit else None,
        framing=framing,
        engine=engine,
    )
    run = Run()
    session = Session(run.sent, refuse)
    transaction = OpenTransaction()
    stores = {partition: Store(values) for partition, values in committed.items()}
    # The in-memory session and stores have the surface the record step uses.
    parts = TransactionParts(
        config,
        cast(TransactionalSession, session),
        transaction,
        cast(PartitionStores, stores),
        RefusedRecords(120.0),
    )
    faults = faults or FaultInjector()
    step = RecordStep(parts, begin=session.begin, faults=faults, keep_decisions=keep_decisions)
    compiled = (
        CompiledStep(
            parts,
            step,
            begin=session.begin,
            faults=faults,
            keep_decisions=keep_decisions,
            core=load_core(),
        )
        if engine == "compiled"
        else None
    )
    try:
        index = 0
        while index < len(messages):  # Worker._decide
            if compiled is not None and compiled.usable:
                index = compiled.run(messages, index)  # type: ignore[arg-type]
                if index == len(messages):
                    break
            run.python_records += 1
            step.process(messages[index])  # type: ignore[arg-type]
            index += 1
    except Exception as error:
        run.raised = f"{type(error).__name__}: {error}"
    pending = transaction.pending
    run.changes = {p: dict(c) for p, c in pending.overlay.partitions().items() if c}
    run.records = pending.records
    run.next_offsets = dict(pending.next_offsets)
    run.tally = dict(pending.tally)
    run.decisions = list(pending.decisions)
    run.begun = session.begun
    return run
