"""`seqgate watermark` and `seqgate status` (issue 8, part 2), without a broker: the partitioner
is Kafka's murmur2 (the Java client's own vectors). The commands against the broker are in
tests/kafka/test_inspect.py.
"""

from __future__ import annotations

from concurrent.futures import Future
from types import SimpleNamespace
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import OffsetSpec  # type: ignore[attr-defined]

from seqgate.schemas.identity import identity_partition, java_murmur2
from seqgate.streams.errors import InspectError
from seqgate.streams.tools.inspect import list_offsets


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
        (b"1", -1993445489),
        (b"12", 126087238),
        (b"123", -267702483),
        # pinned by Akka's Murmur2Spec: every tail length
        (b"1234", -1614185708),
        (b"12345", -1188365604),
    ],
)
def test_java_murmur2(data: bytes, expected: int) -> None:
    assert java_murmur2(data) == expected


def test_identity_partition_is_positive_murmur2_modulo() -> None:
    assert identity_partition("21", 7) == (-973932308 & 0x7FFFFFFF) % 7


# --------------------------------------------------------------------------- list_offsets


class _Answers:
    """An admin client's `list_offsets` that answers each request with the next error, then
    with offset 7: the retry logic is under test, not Kafka (tests/kafka/test_inspect.py
    lists real offsets)."""

    def __init__(self, *errors: int) -> None:
        self.errors = list(errors)
        self.requests = 0

    def list_offsets(self, request: dict[Any, Any], **_: Any) -> dict[Any, Future[Any]]:
        self.requests += 1
        answers: dict[Any, Future[Any]] = {}
        for tp in request:
            future: Future[Any] = Future()
            if self.errors:
                future.set_exception(KafkaException(KafkaError(self.errors[0])))
            else:
                future.set_result(SimpleNamespace(offset=7, timestamp=-1))
            answers[tp] = future
        if self.errors:
            self.errors.pop(0)
        return answers


def test_list_offsets_asks_again_while_a_leader_is_moving() -> None:
    admin = _Answers(KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE)
    spec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
    found = list_offsets(admin, "t", [0, 1], spec, timeout=10)  # type: ignore[arg-type]
    assert found == {0: (7, -1), 1: (7, -1)}
    assert admin.requests == 3


def test_list_offsets_reports_other_errors_and_a_leader_that_never_comes() -> None:
    spec = OffsetSpec.earliest()  # type: ignore[no-untyped-call]
    admin = _Answers(KafkaError.UNKNOWN_TOPIC_OR_PART)
    with pytest.raises(InspectError, match=r"cannot list the offsets of t: .*nknown"):
        list_offsets(admin, "t", [0], spec, timeout=10)  # type: ignore[arg-type]
    assert admin.requests == 1
    admin = _Answers(*[KafkaError.NOT_LEADER_FOR_PARTITION] * 100)
    with pytest.raises(InspectError, match=r"[Nn]ot leader"):
        list_offsets(admin, "t", [0], spec, timeout=0.5)  # type: ignore[arg-type]
    assert 2 <= admin.requests <= 5
