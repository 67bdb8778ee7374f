"""The pure parts of tests/support/cluster_probe.py: Java's String.hashCode and the partition.

The expected hashes were printed by Java 17 (`String.hashCode`), not computed here.
"""

from __future__ import annotations

import pytest

from tests.support.cluster_probe import java_string_hash, transaction_state_partition


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("hello", 99162322),  # "hello".hashCode() in Java
        ("polygenelubricants", -2147483648),  # Integer.MIN_VALUE: Kafka's Utils.abs gives 0
        ("seqgate-app-w0", -1865788600),
        ("é", 233),
        ("😀", 1772899),  # a surrogate pair: two UTF-16 code units
    ],
)
def test_java_string_hash(text: str, expected: int) -> None:
    assert java_string_hash(text) == expected


def test_overflow_wraps_like_a_java_int() -> None:
    assert java_string_hash("Aa") == java_string_hash("BB") == 2112
    assert java_string_hash("hellohellohello") == -1353814638


def test_partition_is_non_negative_and_min_value_maps_to_zero() -> None:
    assert transaction_state_partition("polygenelubricants", 50) == 0
    assert transaction_state_partition("hellohellohello", 50) == 1353814638 % 50
    assert transaction_state_partition("hello", 3) == 99162322 % 3
