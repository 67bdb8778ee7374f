"""The worker's rule for reconciled events (docs/reconcile.md), through the real decider
with its state in a dict: a compare-and-set on the watermark that never moves it."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.schemas.codec import WATERMARK
from seqgate.schemas.listing import ListedObject
from seqgate.schemas.ordering import AWS_SEQUENCER_ORDER
from seqgate.schemas.outcomes import Outcome
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.reconciled import (
    NO_WATERMARK,
    absent_event,
    is_reconciled,
    present_event,
    reconciled_state,
)
from seqgate.schemas.records import ObjectEvent, Watermark
from seqgate.streams.rules.decider import InputPosition, Verdict, decide_record
from seqgate.streams.rules.policy import Policy, UndecidableEvent
from seqgate.streams.state.keys import watermark_key
from tests.support.events import event

IDENTITY = "s3://bucket/k"
POLICY = Policy.build("aws", ["created", "removed"])


class Table:
    """One partition's state as the worker keeps it, decided record by record."""

    def __init__(self) -> None:
        self.state: dict[bytes, bytes] = {}
        self.offset = 0
        self.outbox: list[ObjectEvent] = []

    def get(self, key: bytes) -> bytes | None:
        return self.state.get(key)

    def decide(self, item: ObjectEvent, policy: Policy = POLICY) -> Outcome:
        verdict: Verdict = decide_record(
            self, item, IDENTITY, InputPosition(0, self.offset, 1_000), policy
        )
        self.offset += 1
        for key, value in verdict.changes.items():
            assert value is not None
            self.state[key] = value
        if verdict.outbox is not None:
            self.outbox.append(verdict.outbox.event)
        return verdict.outcome

    def watermark(self) -> Watermark | None:
        raw = self.state.get(watermark_key(IDENTITY))
        return None if raw is None else WATERMARK.decode(raw)


def listed(etag: str = "e1", modified: int = 1_700_000_000_000) -> ListedObject:
    return ListedObject("k", None, etag, modified, 5)


def repair(position: str | None, etag: str = "e1") -> ObjectEvent:
    return present_event("s3", "bucket", listed(etag), position)


def test_a_repair_of_an_object_without_a_watermark_is_accepted_once() -> None:
    table = Table()
    first = repair(None)
    assert is_reconciled(first) and first.position == NO_WATERMARK
    assert reconciled_state(first.id) == "present"
    assert table.decide(first) is Outcome.ACCEPTED
    assert table.watermark() == Watermark(NO_WATERMARK, first.id, 0, 0)
    assert table.decide(first) is Outcome.DUPLICATE
    assert table.outbox == [first]


def test_a_repair_against_the_current_watermark_keeps_its_position() -> None:
    table = Table()
    assert table.decide(event("k", "0a")) is Outcome.ACCEPTED
    fix = repair("0a")
    assert table.decide(fix) is Outcome.ACCEPTED
    mark = table.watermark()
    assert mark is not None and (mark.position, mark.event_id) == ("0a", fix.id)
    assert table.decide(event("k", "0b")) is Outcome.ACCEPTED  # a later write still wins


def test_a_notification_first_makes_the_repair_stale() -> None:
    """Listed at v1 (its notification lost), then v2 written and notified before the
    repair is decided: v2 stays, whichever came first."""
    table = Table()
    table.decide(event("k", "0a"))
    fix = repair("0a")
    assert table.decide(event("k", "0b")) is Outcome.ACCEPTED
    assert table.decide(fix) is Outcome.STALE
    mark = table.watermark()
    assert mark is not None and mark.position == "0b"


def test_a_repair_made_before_any_watermark_is_stale_once_there_is_one() -> None:
    table = Table()
    table.decide(event("k", "0a"))
    assert table.decide(repair(None)) is Outcome.STALE


def test_a_repair_expecting_a_watermark_that_is_not_there_is_stale() -> None:
    assert Table().decide(repair("0a")) is Outcome.STALE


def test_a_gone_repair_is_a_removed_event_decided_the_same_way() -> None:
    table = Table()
    created = event("k", "0a")
    table.decide(created)
    gone = absent_event("s3", "bucket", "k", "0a", created.id)
    assert gone.kind == "removed" and reconciled_state(gone.id) == "absent"
    assert table.decide(gone) is Outcome.ACCEPTED
    assert table.decide(gone) is Outcome.DUPLICATE
    assert Table().decide(gone, Policy.build("aws", ["created"])) is Outcome.FILTERED


def test_a_repair_without_a_position_or_with_a_bad_one_is_refused() -> None:
    for position, reason in ((None, RejectReason.MISSING_POSITION), ("xyz", None)):
        with pytest.raises(UndecidableEvent) as raised:
            Table().decide(dataclasses.replace(repair(None), position=position))
        if reason is not None:
            assert raised.value.reason is reason


def test_a_notification_with_the_reconcile_origin_prefix_only_is_what_makes_it_one() -> None:
    table = Table()
    table.decide(event("k", "0a"))
    plain = dataclasses.replace(repair("0a"), origin="sqs:q:1")
    assert table.decide(plain) is Outcome.DUPLICATE  # the ordinary rule: an equal position


POSITIONS = st.text("0123456789abcdef", min_size=1, max_size=4)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.booleans(), POSITIONS, st.sampled_from(["e1", "e2", "e3"])),
        min_size=1,
        max_size=30,
    )
)
def test_no_mix_of_notifications_and_repairs_moves_a_watermark_backwards(
    steps: list[tuple[bool, str, str]],
) -> None:
    """Repairs computed against whatever watermark was current at some earlier step."""
    table = Table()
    seen: list[str | None] = [None]
    highest: str | None = None
    for is_repair, position, etag in steps:
        if is_repair:
            expected = seen[int(position, 16) % len(seen)]
            table.decide(repair(expected, etag))
        else:
            table.decide(event("k", position))
        mark = table.watermark()
        current = None if mark is None else mark.position
        if highest is not None:
            assert current is not None
            assert AWS_SEQUENCER_ORDER.compare(current, highest) >= 0
        highest = current
        seen.append(current)
