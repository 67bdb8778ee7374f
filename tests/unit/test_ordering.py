"""Position comparators (docs/design.md §3): the aws and numeric sequencer orders."""

from __future__ import annotations

import functools
import itertools
import random
import time
from collections.abc import Callable

import pytest

from seqgate.schemas.ordering import (
    AWS_SEQUENCER_ORDER,
    NUMERIC_SEQUENCER_ORDER,
    ORDER_NAMES,
    PositionOrder,
    order_named,
)

ORDERS: tuple[PositionOrder, ...] = (AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER)


def sign(value: int) -> int:
    return (value > 0) - (value < 0)


def reference_aws(a: str, b: str) -> int:
    """AWS's documented rule, written out literally: pad right with '0', compare."""
    width = max(len(a), len(b))
    pa, pb = a.lower().ljust(width, "0"), b.lower().ljust(width, "0")
    return (pa > pb) - (pa < pb)


def reference_numeric(a: str, b: str) -> int:
    va, vb = int(a, 16), int(b, 16)
    return (va > vb) - (va < vb)


def random_hex(rng: random.Random) -> str:
    length = rng.randint(1, 6)
    # A small alphabet (with both cases) makes ties and padding cases frequent.
    return "".join(rng.choice("00001fF") for _ in range(length))


def guide_replay(order: PositionOrder, arrivals: list[str]) -> list[str]:
    """The guide's watermark policy: accept only strictly greater positions."""
    watermark: str | None = None
    outcomes = []
    for position in arrivals:
        if watermark is None or order.compare(position, watermark) > 0:
            watermark = position
            outcomes.append("queued")
        elif order.compare(position, watermark) == 0:
            outcomes.append("duplicate")
        else:
            outcomes.append("stale")
    return outcomes


# --------------------------------------------------------------------------- numeric


def test_numeric_guide_sequence_values() -> None:
    values = [int(p, 16) for p in ["f", "000F", "e", "10"]]
    assert values == [15, 15, 14, 16]
    order = NUMERIC_SEQUENCER_ORDER
    assert order.compare("f", "000F") == 0
    assert order.compare("e", "f") < 0
    assert order.compare("10", "f") > 0
    assert order.compare("000F", "10") < 0


def test_numeric_guide_replay_matches_the_guide_output() -> None:
    outcomes = guide_replay(NUMERIC_SEQUENCER_ORDER, ["f", "000F", "e", "10", "10"])
    assert outcomes == ["queued", "duplicate", "stale", "queued", "duplicate"]


def test_numeric_canonical_is_shortest_lowercase_spelling() -> None:
    order = NUMERIC_SEQUENCER_ORDER
    assert order.canonical("000F") == "f"
    assert order.canonical("F0") == "f0"
    assert order.canonical("0000") == "0"
    assert order.canonical("0") == "0"
    assert order.canonical("0055AED6DCD90281E5") == format(int("0055AED6DCD90281E5", 16), "x")


# --------------------------------------------------------------------------- aws


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ("f", "10", 1),  # 'f' > '1' at the first digit
        ("000f", "f", -1),  # leading zeros are significant
        ("000F", "f", -1),
        ("e", "f", -1),
        ("f", "f0", 0),  # right padding: trailing zeros are not
        ("f", "F0", 0),
        ("F", "f", 0),
        ("f", "f01", -1),
        ("0", "000", 0),
        ("1", "0fff", 1),
        ("0055AED6DCD90281E5", "0055AED6DCD90281E6", -1),
        ("0055AED6DCD90281E5", "0055AED6DCD90281E500", 0),
    ],
)
def test_aws_examples(a: str, b: str, expected: int) -> None:
    assert sign(AWS_SEQUENCER_ORDER.compare(a, b)) == expected
    assert sign(AWS_SEQUENCER_ORDER.compare(b, a)) == -expected


def test_aws_guide_replay_differs_from_numeric() -> None:
    # Under AWS's rule 000F is older than f, and 10 is older than f.
    outcomes = guide_replay(AWS_SEQUENCER_ORDER, ["f", "000F", "e", "10", "F0"])
    assert outcomes == ["queued", "stale", "stale", "stale", "duplicate"]


def test_aws_canonical_strips_trailing_zeros_only() -> None:
    order = AWS_SEQUENCER_ORDER
    assert order.canonical("F0") == "f"
    assert order.canonical("000F") == "000f"
    assert order.canonical("000") == "0"
    assert order.canonical("0055AED6DCD90281E500") == "0055aed6dcd90281e5"


# --------------------------------------------------------------------------- both


@pytest.mark.parametrize(
    ("order", "reference"),
    [(AWS_SEQUENCER_ORDER, reference_aws), (NUMERIC_SEQUENCER_ORDER, reference_numeric)],
)
def test_matches_reference_and_canonical_on_random_pairs(
    order: PositionOrder, reference: Callable[[str, str], int]
) -> None:
    rng = random.Random(20261125)
    for _ in range(3000):
        a, b = random_hex(rng), random_hex(rng)
        result = sign(order.compare(a, b))
        assert result == reference(a, b), (a, b)
        assert sign(order.compare(b, a)) == -result
        assert (order.canonical(a) == order.canonical(b)) == (result == 0), (a, b)
        # The canonical form is itself a valid position equal to the original.
        assert order.compare(order.canonical(a), a) == 0
        assert order.canonical(order.canonical(a)) == order.canonical(a)


@pytest.mark.parametrize("order", ORDERS)
def test_transitive_sort_on_random_positions(order: PositionOrder) -> None:
    rng = random.Random(7)
    positions = [random_hex(rng) for _ in range(300)]
    ranked = sorted(positions, key=functools.cmp_to_key(order.compare))
    for earlier, later in itertools.pairwise(ranked):
        assert order.compare(earlier, later) <= 0


@pytest.mark.parametrize("order", ORDERS)
def test_long_sequencers(order: PositionOrder) -> None:
    base = "0055AED6DCD90281E5" * 11 + "AB"  # 200 hex digits
    assert len(base) == 200
    bumped = base[:-1] + "C"
    assert order.compare(base, bumped) < 0
    assert order.compare(bumped, base) > 0
    assert order.compare(base, base.lower()) == 0
    assert order.canonical(base) == order.canonical(base.lower())


def test_long_sequencers_against_references() -> None:
    rng = random.Random(3)
    for _ in range(200):
        a = "".join(rng.choice("0123456789abcdef") for _ in range(rng.randint(150, 250)))
        b = a[: rng.randint(0, len(a))] + "".join(
            rng.choice("0123456789abcdef") for _ in range(rng.randint(0, 60))
        )
        if not b:
            continue
        assert sign(AWS_SEQUENCER_ORDER.compare(a, b)) == reference_aws(a, b)
        assert sign(NUMERIC_SEQUENCER_ORDER.compare(a, b)) == reference_numeric(a, b)


@pytest.mark.parametrize("order", ORDERS)
def test_huge_sequencers_are_fast(order: PositionOrder) -> None:
    a = "f" * 1_000_000
    b = "f" * 999_999 + "e"
    started = time.perf_counter()
    for _ in range(10):
        assert order.compare(a, b) > 0
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize("order", ORDERS)
@pytest.mark.parametrize(
    "bad", ["", "0x1f", "f_f", " f", "f ", "g", "-1", "+1", "\u0661", "ff\n", "\uff11"]
)
def test_invalid_hex_is_a_value_error(order: PositionOrder, bad: str) -> None:
    with pytest.raises(ValueError, match=order.name):
        order.canonical(bad)
    with pytest.raises(ValueError):
        order.compare(bad, "f")
    with pytest.raises(ValueError):
        order.compare("f", bad)


def test_invalid_message_is_bounded_for_long_input() -> None:
    with pytest.raises(ValueError) as caught:
        AWS_SEQUENCER_ORDER.canonical("z" * 10_000)
    assert len(str(caught.value)) < 300
    assert "10000 characters" in str(caught.value)


# --------------------------------------------------------------------------- lookup


def test_order_names() -> None:
    assert ORDER_NAMES == ("aws", "numeric")
    assert order_named("aws") is AWS_SEQUENCER_ORDER
    assert order_named("numeric") is NUMERIC_SEQUENCER_ORDER
    assert AWS_SEQUENCER_ORDER.name == "aws"
    assert NUMERIC_SEQUENCER_ORDER.name == "numeric"


@pytest.mark.parametrize("name", ["", "AWS", "hex", "lexicographic"])
def test_unknown_order_lists_valid_names(name: str) -> None:
    with pytest.raises(ValueError, match=r"'aws', 'numeric'"):
        order_named(name)


def test_orders_are_immutable() -> None:
    with pytest.raises(AttributeError):
        AWS_SEQUENCER_ORDER.name = "numeric"  # type: ignore[misc]
