"""The bridge's output bytes are pinned: what `normalize` + `EventPublisher` hand to the
producer for the bench workload's notifications (and for bodies each strictness rule of
the JSON decoder refuses) hashes to a digest computed before the bridge's fast paths
(issue 19 §3), so a speed change cannot change a byte of a key, a value or a topic."""

from __future__ import annotations

import hashlib
from typing import Any

from seqgate_devtools.bench.workload import WorkloadSpec, build_workload

from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.publish.publisher import EventPublisher, Topics

# Computed with the code of 390f143 (before the fast paths).
GOLDEN_WORKLOAD = "155293b08eec4729f48ff79c8a8be8449035703add8aced99a95cfe78c8c638b"
GOLDEN_REFUSED = "4276d9426109069a68e6fb79cf930b27a73b26424748ee37fa30710b39671e72"

# One body per rule of strict_json, and a few that pass it with unusual values
# (24 rejected records: one body has four records).
REFUSED_BODIES: tuple[bytes, ...] = (
    b'{"Records":[{"eventSource":"aws:s3","eventSource":"aws:s3"}]}',
    b'{"a":{"b":1,"b":2}}',
    b'{"a":{"b":{"c":1}},"a":{"b":{"d":2}}}',
    b'{"Records":[NaN]}',
    b'{"Records":[Infinity]}',
    b'{"Records":[-Infinity]}',
    b'{"Records":[1' + b"0" * 5000 + b"]}",
    b'{"Records":["\xff"]}',
    b'{"Records":["\xed\xa0\x80"]}',
    b'{"Records":["\xc0\x80"]}',
    b'{"Records":["\xf4\x90\x80\x80"]}',
    b'{"Records":["\\ud800"]}',
    b'{"Records":[1e400, 123456789012345678901234567890, -0.0, 1E2]}',
    b"[" * 65 + b"]" * 65,
    b'{"Records":[{"a":"\\\\\\":x"}]}',
    b'{"Records" : [ {"a" : "\\\\", "b" : "\xc3\xa9:\\u00e9", "a\\\\" : 1} ] }',
    b'{"Records":[{"a\\":b":1,"a\\":b":2}]}',
    b"\xef\xbb\xbf{}",
    b"\xef\xbb\xbf\xef\xbb\xbf{}",
    b'{"Records":[]} x',
    b"",
)


class _Capture:
    """Stands in for the producer: keeps what it is given, acknowledges nothing."""

    def __init__(self) -> None:
        self.digest = hashlib.sha256()
        self.count = 0

    def produce(self, topic: str, key: bytes, value: bytes, on_delivery: Any = None) -> None:
        for part in (topic.encode(), key, value):
            self.digest.update(len(part).to_bytes(4, "big") + part)
        self.count += 1

    def poll(self, timeout: float = 0) -> int:
        return 0


def _produced_digest(bodies: list[bytes]) -> tuple[str, int]:
    publisher = EventPublisher("127.0.0.1:1", Topics("e", "r"))  # type: ignore[arg-type]
    real = publisher._producer
    capture = _Capture()
    publisher._producer = capture  # type: ignore[assignment]
    try:
        for index, raw in enumerate(bodies):
            origin = f"bench:{index}"
            publisher.submit(normalize(raw, origin), raw, origin)
    finally:
        real.purge()
        real.flush(0)
    return capture.digest.hexdigest(), capture.count


def test_the_bench_workload_publishes_the_same_bytes() -> None:
    workload = build_workload(WorkloadSpec(events=20_000, identities=2_000))
    bodies = [workload.notification(index) for index in range(len(workload))]
    assert _produced_digest(bodies) == (GOLDEN_WORKLOAD, 20_000)


def test_refused_bodies_publish_the_same_rejected_records() -> None:
    assert _produced_digest(list(REFUSED_BODIES)) == (GOLDEN_REFUSED, 24)
