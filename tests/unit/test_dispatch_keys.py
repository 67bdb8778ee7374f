"""The dispatcher's version keys (seqgate.streams.dispatch.keys): bytewise order == position
order."""

from __future__ import annotations

import dataclasses
import functools
import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.schemas.ordering import AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER, PositionOrder
from seqgate.schemas.records import ObjectEvent, OutboxRecord
from seqgate.streams.dispatch.keys import offset_key, position_key, version_key
from seqgate.streams.errors import InvalidVersion
from seqgate.streams.rules.policy import Policy

ORDERS = [AWS_SEQUENCER_ORDER, NUMERIC_SEQUENCER_ORDER]

# Hex positions of any case, with leading and trailing zeros, from 1 to 60 digits.
hex_positions = st.builds(
    lambda zeros_before, body, zeros_after: "0" * zeros_before + body + "0" * zeros_after,
    st.integers(0, 4),
    st.text(alphabet="0123456789abcdefABCDEF", min_size=1, max_size=50),
    st.integers(0, 4),
)


def sign(value: int) -> int:
    return (value > 0) - (value < 0)


def key_compare(a: str, b: str) -> int:
    # Compare as a database would: bytes.
    ka, kb = a.encode("ascii"), b.encode("ascii")
    return (ka > kb) - (ka < kb)


@pytest.mark.parametrize("order", ORDERS, ids=lambda order: order.name)
@settings(max_examples=600)
@given(a=hex_positions, b=hex_positions)
def test_key_order_is_the_position_order(order: PositionOrder, a: str, b: str) -> None:
    ka, kb = position_key(order, a), position_key(order, b)
    assert key_compare(ka, kb) == sign(order.compare(a, b))
    assert (ka == kb) == (order.canonical(a) == order.canonical(b))


@pytest.mark.parametrize("order", ORDERS, ids=lambda order: order.name)
@given(positions=st.lists(hex_positions, min_size=2, max_size=30))
def test_sorting_by_key_sorts_by_position(order: PositionOrder, positions: list[str]) -> None:
    by_key = sorted(positions, key=lambda p: position_key(order, p).encode())
    for earlier, later in itertools.pairwise(by_key):
        assert order.compare(earlier, later) <= 0


@given(a=st.integers(0, 2**63 - 1), b=st.integers(0, 2**63 - 1))
def test_offset_key_order_is_the_offset_order(a: int, b: int) -> None:
    assert key_compare(offset_key(a), offset_key(b)) == sign(a - b)
    assert len(offset_key(a)) == 20


@pytest.mark.parametrize(
    ("order", "smaller", "larger"),
    [
        (NUMERIC_SEQUENCER_ORDER, "f", "10"),  # 15 < 16 (the guide's example)
        (NUMERIC_SEQUENCER_ORDER, "e", "000F"),
        (NUMERIC_SEQUENCER_ORDER, "FFFF", "10000"),
        (AWS_SEQUENCER_ORDER, "10", "f"),  # right-padded: "10" < "f0"
        (AWS_SEQUENCER_ORDER, "000F", "f"),
        (AWS_SEQUENCER_ORDER, "0062E99A88DC407460", "0062E99A88DC407461"),
        (AWS_SEQUENCER_ORDER, "0062E99A88DC4074", "0062E99A88DC40741"),
    ],
)
def test_examples(order: PositionOrder, smaller: str, larger: str) -> None:
    assert position_key(order, smaller) < position_key(order, larger)


def test_equal_writes_have_equal_keys() -> None:
    assert position_key(NUMERIC_SEQUENCER_ORDER, "000F") == position_key(
        NUMERIC_SEQUENCER_ORDER, "f"
    )
    assert position_key(AWS_SEQUENCER_ORDER, "F0") == position_key(AWS_SEQUENCER_ORDER, "f")
    assert position_key(NUMERIC_SEQUENCER_ORDER, "10") == "0000000210"
    assert position_key(AWS_SEQUENCER_ORDER, "00A0") == "00a"


@pytest.mark.parametrize("position", ["", "xyz", "12 ", "٣"])
@pytest.mark.parametrize("order", ORDERS, ids=lambda order: order.name)
def test_invalid_positions(order: PositionOrder, position: str) -> None:
    with pytest.raises(InvalidVersion, match="not valid"):
        position_key(order, position)


def test_negative_offset() -> None:
    with pytest.raises(InvalidVersion):
        offset_key(-1)


def record(source: str, position: str | None, offset: int) -> OutboxRecord:
    event = ObjectEvent(
        id=f"id-{offset}",
        source=source,
        bucket="b",
        key="k",
        kind="created",
        event_name="ObjectCreated:Put",
        position=position,
        version_id=None,
        size=None,
        etag=None,
        event_time=None,
        origin="test",
    )
    return OutboxRecord(event, None, 0, offset)


def test_version_key_follows_the_policy() -> None:
    numeric = Policy.build("numeric")
    aws = Policy.build("aws")
    assert version_key(record("s3", "10", 5), numeric) == position_key(
        NUMERIC_SEQUENCER_ORDER, "10"
    )
    assert version_key(record("s3", "10", 5), aws) == "1"
    # Dedupe-only sources (minio by default): the input offset, position or not.
    assert version_key(record("minio", "ff", 7), aws) == offset_key(7)
    assert version_key(record("box", None, 8), aws) == offset_key(8)
    # MinIO ordered by option: its own numeric order whatever --ordering says.
    minio_ordered = Policy.build("aws", ordered_sources=["s3", "minio"])
    assert version_key(record("minio", "10", 7), minio_ordered) == position_key(
        NUMERIC_SEQUENCER_ORDER, "10"
    )


def test_ordered_record_without_position() -> None:
    with pytest.raises(InvalidVersion, match="no position"):
        version_key(record("s3", None, 1), Policy.build("aws"))


@pytest.mark.parametrize("ordering", ["aws", "numeric"])
@settings(max_examples=300)
@given(
    positions=st.lists(hex_positions, min_size=1, max_size=6),
    repair_after=st.lists(st.integers(-1, 5), max_size=6),
)
def test_a_repair_sorts_after_its_watermark_and_before_any_later_position(
    ordering: str, positions: list[str], repair_after: list[int]
) -> None:
    """One object's outbox as the worker writes it: notifications in position order, and
    repairs (accepted while the watermark stayed where it was) after any of them, or
    before the first; the dispatcher must apply them in that order (docs/reconcile.md)."""
    policy = Policy.build(ordering)
    order = policy.order_for("s3")
    distinct = {order.canonical(position): position for position in positions}
    notified = sorted(distinct.values(), key=functools.cmp_to_key(order.compare))
    outbox: list[OutboxRecord] = []
    watermark: str | None = None
    for index in range(-1, len(notified)):
        if index >= 0:
            watermark = notified[index]
            outbox.append(record("s3", watermark, len(outbox) + 1))
        for _ in range(repair_after.count(index)):
            offset = len(outbox) + 1
            repair = dataclasses.replace(
                record("s3", "accepted-00", offset).event, origin="reconcile:b"
            )
            outbox.append(OutboxRecord(repair, watermark, 0, offset))
    keys = [version_key(item, policy) for item in outbox]
    assert all(key_compare(a, b) < 0 for a, b in itertools.pairwise(keys)), keys
