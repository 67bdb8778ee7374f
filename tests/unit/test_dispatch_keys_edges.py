"""Version keys at their limits: the widest offset, a long numeric position, an unknown order,
a repair of a source with an order of its own."""

from __future__ import annotations

import pytest

from seqgate.schemas.ordering import NUMERIC_SEQUENCER_ORDER
from seqgate.schemas.records import OutboxRecord
from seqgate.streams.dispatch.keys import offset_key, position_key, version_key
from seqgate.streams.errors import InvalidVersion
from seqgate.streams.rules.policy import Policy
from tests.support.events import event


def test_the_widest_offset_has_20_digits_and_the_next_is_refused() -> None:
    assert offset_key(10**20 - 1) == "9" * 20
    with pytest.raises(InvalidVersion) as raised:
        offset_key(10**20)
    assert str(raised.value) == f"input offset {10**20} is not a Kafka offset"


def test_a_numeric_position_of_200_digits_has_a_key() -> None:
    position = "f" * 200
    assert position_key(NUMERIC_SEQUENCER_ORDER, position) == f"{200:08x}{position}"


class _OtherOrder:
    name = "other"

    def canonical(self, position: str) -> str:
        return position

    def compare(self, a: str, b: str) -> int:
        return 0


def test_an_order_without_a_key_is_named() -> None:
    with pytest.raises(InvalidVersion) as raised:
        position_key(_OtherOrder(), "0a")
    assert str(raised.value) == "no version key for position order 'other'"


def test_a_repair_of_minio_is_keyed_by_minios_own_order_whatever_the_ordering() -> None:
    """MinIO ordered by option keeps its numeric order under --ordering aws, in a repair's
    key (the watermark's position, then the offset) as in a notification's."""
    policy = Policy.build("aws", ordered_sources=["s3", "minio"])
    repair = event("k", "10", source="minio", origin="reconcile:bucket")
    record = OutboxRecord(repair, "10", 0, 7)
    # numeric: 2 digits, then "10"; the aws order would make it "1/..."
    assert version_key(record, policy) == f"0000000210/{offset_key(7)}"
