"""`seqgate watermark` and `seqgate status` (issue 8, part 2), without a broker: the partitioner
is Kafka's murmur2 (the Java client's own vectors). The commands against the broker are in
tests/kafka/test_inspect.py.
"""

from __future__ import annotations

import pytest

from seqgate.schemas.identity import identity_partition, java_murmur2


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
