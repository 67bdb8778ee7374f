"""Comparable version keys for the dispatcher's destinations: pure, no I/O.

A destination keeps, per object identity, the result of the newest outbox
record it has applied, and replaces it only with a strictly newer one, in a
single atomic statement (``... WHERE excluded.position_key > objects.position_key``).
SQL compares strings byte by byte, not with seqgate's position orders, so each
record carries a **version key**: an ASCII string whose bytewise order is the
order of the records of one identity.

* ``aws`` order (right-pad the shorter position with ``0``, compare
  case-insensitively): the canonical form itself (lowercase, trailing zeros
  removed). ``0`` is the smallest hex digit and a proper prefix sorts first in a
  bytewise comparison, so comparing canonical forms bytewise is the same as
  comparing them right-padded to any common width (and ASCII ``0-9`` sort
  before ``a-f``). No width limit.
* ``numeric`` order (the hex value): the canonical form (lowercase, no leading
  zeros) prefixed with its length as 8 hex digits. Between numbers without
  leading zeros, the longer is the larger, and equal lengths compare digit by
  digit, which is what ``<length><digits>`` gives bytewise. Equivalent to
  left-padding with zeros to a fixed width, but exact for any length below
  16**8 digits instead of failing above the chosen width.
* **dedupe-only sources** (positions absent or not trusted to order): the
  input offset, as 20 decimal digits. The worker accepts an identity's events
  in input-offset order and all events of one identity are in one input
  partition (the key's murmur2 hash), so for one identity the input offset is
  the order in which seqgate accepted its events: last accepted wins, which is
  what a consumer reading the outbox in order would keep. Offsets of different
  partitions are not comparable, so this holds only while the input topic's
  partition count is unchanged (changing it moves identities anyway, docs/design.md §2.1);
  a replay (``seqgate reset``) reproduces the same offsets and so the same keys.

* **reconciled events** (repairs of `seqgate reconcile`, docs/reconcile.md) of ordered
  sources have no position of their own: the worker accepted each while the object's
  watermark stayed at ``previous_position``, after everything before it. Their key is
  the key of that position (empty when there was none), then ``/``, then the input
  offset's key: ``/`` sorts below every hex digit, so the key is above the watermark's
  own key and below the key of any later position, and repairs of one watermark sort
  by input offset.

Keys are compared only between records of the same identity, whose source,
and therefore order and trust, is the same. Changing ``--ordering`` or
``--ordered-sources`` changes the keys of an identity's later records, which are
not comparable with those already stored: start a new table then.
"""

from __future__ import annotations

from typing import Final

from seqgate.schemas.ordering import PositionOrder
from seqgate.schemas.reconciled import is_reconciled
from seqgate.schemas.records import OutboxRecord
from seqgate.streams.errors import InvalidVersion
from seqgate.streams.rules.policy import Policy, Trust

__all__ = [
    "OFFSET_KEY_WIDTH",
    "offset_key",
    "position_key",
    "version_key",
]

_LENGTH_WIDTH: Final = 8
OFFSET_KEY_WIDTH: Final = 20
"""Decimal digits of an offset key: enough for any Kafka offset (a signed 64-bit integer)."""


def position_key(order: PositionOrder, position: str) -> str:
    """The key of ``position`` under ``order``: for positions ``a`` and ``b``,
    ``position_key(order, a) < position_key(order, b)`` (bytewise, as ASCII)
    exactly when ``order.compare(a, b) < 0``, and the keys are equal exactly
    when the positions are the same write.

    Raises InvalidVersion for a position that is not valid for ``order`` or an
    order this module does not know.
    """
    try:
        canonical = order.canonical(position)
    except ValueError as error:
        raise InvalidVersion(str(error)) from error
    if order.name == "aws":
        return canonical
    if order.name == "numeric":
        if len(canonical) >= 16**_LENGTH_WIDTH:
            raise InvalidVersion(
                f"numeric order: a position of {len(canonical)} digits is too long"
            )
        return f"{len(canonical):0{_LENGTH_WIDTH}x}{canonical}"
    raise InvalidVersion(f"no version key for position order {order.name!r}")


def offset_key(input_offset: int) -> str:
    """The key of a dedupe-only record: its input offset, zero-padded to 20 digits."""
    if input_offset < 0 or input_offset >= 10**OFFSET_KEY_WIDTH:
        raise InvalidVersion(f"input offset {input_offset} is not a Kafka offset")
    return f"{input_offset:0{OFFSET_KEY_WIDTH}d}"


def version_key(record: OutboxRecord, policy: Policy) -> str:
    """The version key of an outbox record, as the worker with ``policy`` ordered it.

    Ordered sources: the position's key under ``policy.order_for(source)``;
    dedupe-only sources: the input offset's key (see the module docstring).
    Raises InvalidVersion when an ordered source's record has no valid position.
    """
    event = record.event
    if policy.trust_for(event.source) is Trust.DEDUPE:
        return offset_key(record.input_offset)
    if is_reconciled(event):
        order = policy.order_for(event.source)
        previous = record.previous_position
        base = "" if previous is None else position_key(order, previous)
        return f"{base}/{offset_key(record.input_offset)}"
    if event.position is None:
        raise InvalidVersion(f"event {event.id} of ordered source {event.source} has no position")
    return position_key(policy.order_for(event.source), event.position)
