"""The messages of seqgate.schemas.ordering's refusals, which reach rejected records (an
invalid sequencer's reason), and its preview of long positions at the exact limit."""

from __future__ import annotations

from typing import Any

import pytest

from seqgate.schemas.ordering import AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER


def _refusal(order: Any, position: Any) -> str:
    with pytest.raises(ValueError) as raised:
        order.canonical(position)
    return str(raised.value)


def test_an_invalid_position_is_named_with_what_is_expected() -> None:
    assert _refusal(AWS_SEQUENCER_ORDER, "12g4") == (
        "aws order: position '12g4' is not valid: expected a non-empty string of hex"
        " digits 0-9, a-f (any case)"
    )


def test_a_position_that_is_not_a_string_is_named_by_its_type() -> None:
    assert _refusal(NUMERIC_SEQUENCER_ORDER, 15) == (
        "numeric order: a position must be a string of hex digits, got int"
    )


def test_a_position_of_40_characters_is_shown_whole_and_a_longer_one_cut() -> None:
    forty = "x" * 40
    assert f"position {forty!r} is not valid" in _refusal(AWS_SEQUENCER_ORDER, forty)
    longer = "y" * 41
    shown = f"position {'y' * 40!r}... (41 characters) is not valid"
    assert shown in _refusal(AWS_SEQUENCER_ORDER, longer)


@pytest.mark.parametrize("order", [AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER])
def test_the_canonical_form_is_lowercase(order: Any) -> None:
    assert order.canonical("AbC1") == "abc1"
