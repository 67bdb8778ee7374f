"""Position comparators for per-object ordering (docs/design.md §3).

A position is the per-write marker a provider attaches to an event (for S3,
the object's ``sequencer``). The processor compares positions only between
events of the same object identity, so every order here answers one question:
given two positions of the same object, which write came later?

Two orders exist for hexadecimal sequencers:

* ``aws`` (the default for S3): the rule in AWS's current documentation.
  The shorter value is right-padded with ``0`` and the padded strings are
  compared case-insensitively. Trailing zeros are therefore insignificant
  (``f`` equals ``F0``) while leading zeros are significant (``000F`` sorts
  before ``f``), and ``f`` sorts after ``10``.
* ``numeric`` (the original brief's rule, docs/design.md §3 and §9): the
  numeric value of the hex string. Leading zeros are insignificant (``000F``
  equals ``f``) and ``10`` sorts after ``f``.

Both work on strings of any length without padding or big-integer arithmetic:
each position is reduced once to a canonical string and canonical strings are
compared directly, which is linear in the length of the inputs.

Everything here is pure: no I/O, no clock, no global state.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final, Protocol

__all__ = [
    "AWS_SEQUENCER_ORDER",
    "NUMERIC_SEQUENCER_ORDER",
    "ORDER_NAMES",
    "AwsSequencerOrder",
    "NumericSequencerOrder",
    "PositionOrder",
    "order_named",
]

# ASCII hex only: str.isdigit()/\d would let other Unicode digits through.
_HEX: Final = re.compile(r"[0-9A-Fa-f]+")


class PositionOrder(Protocol):
    """A total order on the positions of one object."""

    @property
    def name(self) -> str:
        """The configuration name of this order (e.g. ``"aws"``)."""
        ...

    def compare(self, a: str, b: str) -> int:
        """Return a negative number, zero or a positive number as ``a`` is
        earlier than, the same write as, or later than ``b``.

        Raises ValueError when either position is not valid for this order.
        """
        ...

    def canonical(self, position: str) -> str:
        """Return the canonical form of ``position``: two positions compare
        equal exactly when their canonical forms are equal strings.

        Raises ValueError when the position is not valid for this order.
        """
        ...


def _require_hex(position: str, order_name: str) -> str:
    """Return ``position`` lowercased after checking that it is non-empty hex."""
    if not isinstance(position, str):
        raise ValueError(
            f"{order_name} order: a position must be a string of hex digits, "
            f"got {type(position).__name__}"
        )
    if _HEX.fullmatch(position) is None:
        raise ValueError(
            f"{order_name} order: position {_preview(position)} is not valid: "
            "expected a non-empty string of hex digits 0-9, a-f (any case)"
        )
    return position.lower()


def _preview(text: str, limit: int = 40) -> str:
    """A quoted, bounded rendering of ``text`` for error messages."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text)} characters)"


def _sign(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` sorts before, equal to or after ``b``."""
    return (a > b) - (a < b)


@dataclass(frozen=True)
class AwsSequencerOrder:
    """AWS's documented sequencer rule: right-pad the shorter value with ``0``
    and compare the padded strings case-insensitively.

    Padding with ``0`` (the smallest hex digit) makes trailing zeros
    insignificant, so comparing the lowercased values with trailing zeros
    removed gives the same answer as comparing the padded strings, without
    building them.
    """

    @property
    def name(self) -> str:
        return "aws"

    def canonical(self, position: str) -> str:
        """Lowercased, trailing zeros removed (``"0"`` for an all-zero value)."""
        return _require_hex(position, self.name).rstrip("0") or "0"

    def compare(self, a: str, b: str) -> int:
        return _sign(self.canonical(a), self.canonical(b))


@dataclass(frozen=True)
class NumericSequencerOrder:
    """The numeric value of the hex string; any length (no fixed-width limit).

    Compared as strings: with leading zeros removed, a longer value is larger,
    and values of equal length compare like their lowercased digits.
    """

    @property
    def name(self) -> str:
        return "numeric"

    def canonical(self, position: str) -> str:
        """Lowercased, leading zeros removed (``"0"`` for zero): the value's
        shortest hex spelling, as ``format(int(position, 16), "x")``."""
        return _require_hex(position, self.name).lstrip("0") or "0"

    def compare(self, a: str, b: str) -> int:
        ca = self.canonical(a)
        cb = self.canonical(b)
        if len(ca) != len(cb):
            return -1 if len(ca) < len(cb) else 1
        return _sign(ca, cb)


AWS_SEQUENCER_ORDER: Final[PositionOrder] = AwsSequencerOrder()
NUMERIC_SEQUENCER_ORDER: Final[PositionOrder] = NumericSequencerOrder()

_ORDERS: Final[dict[str, PositionOrder]] = {
    order.name: order for order in (AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER)
}

ORDER_NAMES: Final[tuple[str, ...]] = tuple(_ORDERS)


def order_named(name: str) -> PositionOrder:
    """Return the position order configured as ``name``.

    Raises ValueError, listing the valid names, for an unknown name.
    """
    order = _ORDERS.get(name)
    if order is None:
        valid = ", ".join(repr(known) for known in ORDER_NAMES)
        raise ValueError(f"unknown position order {name!r}: expected one of {valid}")
    return order
