"""`seqgate bench --failover`: the load offered while a worker is killed and replaced."""

from __future__ import annotations

import random
import threading
import time

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate_devtools.bench.produce import (
    DeliveryErrors,
    bridge_like_producer,
    produce_waiting,
)
from seqgate_devtools.bench.workload import identity_key, make_event
from seqgate_devtools.errors import FailoverError

__all__ = ["OfferedLoad"]


class OfferedLoad:
    """New events for random identities at a steady rate, from a thread, until stopped.

    Each event is a write newer than any before it (one counter for every object), so
    the workers accept every one: each adds an outbox record and a changelog record, as
    live traffic would."""

    def __init__(
        self, kafka: KafkaSettings, topic: str, identities: int, rate: float, seed: int
    ) -> None:
        self._kafka, self._topic = kafka, topic
        self._identities, self._rate = identities, rate
        self._rng = random.Random(seed)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name="failover-load", daemon=True)
        self._errors: list[BaseException] = []
        self._delivery = DeliveryErrors()
        self._sent = 0
        self._seconds = 0.0
        self._stopped: tuple[int, float] | None = None

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> tuple[int, float]:
        """Stop sending, wait for the acknowledgements: (events sent, seconds sent for)."""
        if self._stopped is not None:
            return self._stopped
        self._stopping.set()
        self._thread.join(60)
        if self._thread.is_alive():
            raise FailoverError("the offered load did not stop within 60 s")
        if self._errors:
            raise FailoverError(f"the offered load failed: {self._errors[0]!r}")
        if self._delivery.errors:
            raise FailoverError(f"the offered load was not delivered: {self._delivery.errors[:3]}")
        self._stopped = (self._sent, self._seconds)
        return self._stopped

    def halt(self) -> None:
        """Stop sending and wait a bounded time for the thread, without reporting."""
        self._stopping.set()
        self._thread.join(60)

    def _run(self) -> None:
        try:
            producer = bridge_like_producer(self._kafka, linger_ms=5)
            write = 1  # the pre-load wrote each object's write 1
            started = time.monotonic()
            while not self._stopping.is_set():
                due = int((time.monotonic() - started) * self._rate)
                while self._sent < due:
                    write += 1
                    obj = self._rng.randrange(self._identities)
                    value = OBJECT_EVENT.encode(make_event(obj, write))
                    produce_waiting(
                        producer, self._topic, identity_key(obj), value, self._delivery, poll_s=0.01
                    )
                    self._sent += 1
                producer.poll(0)
                self._stopping.wait(0.005)  # pacing: a look at the clock every 5 ms
            self._seconds = time.monotonic() - started
            remaining = producer.flush(30)
            if remaining:
                raise FailoverError(f"{remaining} offered events not acknowledged in 30 s")
        except BaseException as error:  # reported by stop(), in the caller's thread
            self._errors.append(error)
