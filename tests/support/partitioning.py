"""Where the Java client puts a keyed record, for checking the bridges' partitions."""

from __future__ import annotations

from seqgate.schemas.identity import java_murmur2


def java_partition(key: bytes, partitions: int) -> int:
    """The Java client's partition for a keyed record: toPositive(murmur2(key)) % n."""
    # java_murmur2 is the product's, vector-tested in tests/kafka/test_bridge_file.py
    return (java_murmur2(key) & 0x7FFFFFFF) % partitions
