"""Stand-ins for the Kafka clients where a unit test needs a call that never returns: the
hang librdkafka's send_offsets_to_transaction can fall into (issues 5456, 5511) cannot be
produced on demand by a real broker. The real faults run on a cluster in tests/torture."""

from __future__ import annotations

import threading
from typing import Any


class StandInConsumer:
    """A consumer that only gives group metadata and can be closed."""

    closed = False

    def consumer_group_metadata(self) -> object:
        return object()

    def assignment(self) -> list[Any]:
        return []  # nothing to rewind

    def close(self) -> None:
        self.closed = True


class HangingProducer:
    """send_offsets_to_transaction blocks until released; anything else after it is a bug."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls: list[str] = []

    def flush(self, timeout: float) -> int:
        self.calls.append("flush")
        return 0

    def send_offsets_to_transaction(self, *args: Any) -> None:
        self.calls.append("send_offsets_to_transaction")
        self.release.wait(30)

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> None:
            self.calls.append(name)

        return call
