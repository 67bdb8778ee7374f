"""A consumer's records in batches, with the idle exit: shared by `bridge kafka` and `dispatch`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol

from confluent_kafka import Consumer, Message

from seqgate.runtime.kafka_clients import PartitionEnds


class BatchSettings(Protocol):
    """What a consumer loop's settings say about its batches."""

    @property
    def batch_size(self) -> int: ...

    @property
    def poll_timeout_s(self) -> float: ...

    @property
    def idle_exit_seconds(self) -> float | None: ...


@dataclass
class RecordBatches:
    """`consume()` in batches of records (end-of-partition events and transient errors
    sorted out by `PartitionEnds`), until the idle exit is due: with
    `idle_exit_seconds`, once every assigned partition was read to its end and nothing
    came for that long."""

    consumer: Consumer
    ends: PartitionEnds
    batch_size: int
    poll_timeout_s: float
    idle_exit_seconds: float | None
    last_record: float = field(default_factory=time.monotonic)

    @classmethod
    def of(cls, consumer: Consumer, ends: PartitionEnds, settings: BatchSettings) -> RecordBatches:
        return cls(
            consumer, ends, settings.batch_size, settings.poll_timeout_s, settings.idle_exit_seconds
        )

    def next_batch(self) -> list[Message] | None:
        """The next batch's records (none when nothing came); None once the idle exit is due."""
        messages = self.consumer.consume(self.batch_size, timeout=self.poll_timeout_s)
        records = [message for message in messages if self.ends.usable(message)]
        now = time.monotonic()
        if records or not self.drained():
            self.last_record = now
        elif now - self.last_record >= (self.idle_exit_seconds or 0):
            return None
        return records

    def drained(self) -> bool:
        """With the idle exit: partitions assigned, every one read to its end."""
        return self.idle_exit_seconds is not None and self.ends.drained()
