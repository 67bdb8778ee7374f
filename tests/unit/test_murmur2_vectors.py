"""Java's murmur2, which the bridge keys by (identity -> partition, as Kafka's Java
clients do): Kafka's own test vectors and every tail length. No broker: pure arithmetic
(moved from tests/kafka/test_bridge_file.py, issue 22)."""

from __future__ import annotations

import pytest

from seqgate.schemas.identity import java_murmur2


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        # apache/kafka clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java
        # (testMurmur2).
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
        # Values of Kafka's Utils.murmur2 pinned by Akka's Murmur2Spec: every tail length.
        (b"1", -1993445489),
        (b"12", 126087238),
        (b"123", -267702483),
        (b"1234", -1614185708),
        (b"12345", -1188365604),
    ],
)
def test_java_murmur2_matches_kafkas_own_vectors(data: bytes, expected: int) -> None:
    assert java_murmur2(data) == expected
