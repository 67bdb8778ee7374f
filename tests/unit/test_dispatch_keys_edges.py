"""Version keys at their limits: the widest offset, a long numeric position, an unknown order."""

from __future__ import annotations

import pytest

from seqgate.schemas.ordering import NUMERIC_SEQUENCER_ORDER
from seqgate.streams.dispatch.keys import InvalidVersion, offset_key, position_key


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
