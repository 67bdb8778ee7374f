"""The worker's rule for reconciled events (docs/reconcile.md), through the real decider
with its state in a dict: a compare-and-set on the object's latest accepted event, which
never touches a watermark."""

from __future__ import annotations

import dataclasses

from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.schemas.codec import WATERMARK
from seqgate.schemas.listing import ListedObject
from seqgate.schemas.ordering import AWS_SEQUENCER_ORDER
from seqgate.schemas.outcomes import Outcome
from seqgate.schemas.reconciled import (
    absent_event,
    expectation,
    is_reconciled,
    present_event,
    reconciled_state,
)
from seqgate.schemas.records import ObjectEvent, Watermark
from seqgate.streams.rules.decider import InputPosition, Verdict, decide_record, latest_accepted
from seqgate.streams.rules.policy import Policy
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
            self, item, IDENTITY, InputPosition(0, self.offset, 1_000 + self.offset), policy
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

    def latest(self) -> str | None:
        return latest_accepted(self, IDENTITY)


def listed(etag: str = "e1", modified: int = 1_700_000_000_000) -> ListedObject:
    return ListedObject("k", None, etag, modified, 5)


def repair(latest: str | None, etag: str = "e1") -> ObjectEvent:
    return present_event("s3", "bucket", listed(etag), latest)


def test_a_repair_of_an_object_without_state_is_accepted_once() -> None:
    table = Table()
    first = repair(None)
    assert is_reconciled(first) and first.position is None
    assert reconciled_state(first.id) == "present"
    assert table.decide(first) is Outcome.ACCEPTED
    assert table.latest() == first.id and table.watermark() is None
    assert table.decide(first) is Outcome.DUPLICATE
    assert table.outbox == [first]


def test_a_repair_against_the_latest_event_leaves_the_watermark_alone() -> None:
    table = Table()
    notified = event("k", "0a")
    assert table.decide(notified) is Outcome.ACCEPTED
    before = table.watermark()
    fix = repair(notified.id)
    assert fix.position == expectation(notified.id)
    assert table.decide(fix) is Outcome.ACCEPTED
    assert table.watermark() == before and table.latest() == fix.id
    assert table.decide(event("k", "0b")) is Outcome.ACCEPTED  # a later write still wins
    assert table.latest() == event("k", "0b").id
    assert table.decide(fix) is Outcome.STALE  # the repair again, once it is superseded


def test_a_notification_first_makes_the_repair_stale() -> None:
    """Listed at v1 (its notification lost), then v2 written and notified before the
    repair is decided: v2 stays, whichever came first."""
    table = Table()
    notified = event("k", "0a")
    table.decide(notified)
    fix = repair(notified.id)
    assert table.decide(event("k", "0b")) is Outcome.ACCEPTED
    assert table.decide(fix) is Outcome.STALE
    assert table.latest() == event("k", "0b").id


def test_position_less_notifications_are_latest_too() -> None:
    """Events accepted by the dedupe rule (no position) are what a repair must not undo."""
    table = Table()
    first = event("k", "0a", position=None)
    assert table.decide(first) is Outcome.ACCEPTED and table.latest() == first.id
    fix = repair(first.id)
    newer = event("k", "0b", position=None)
    assert table.decide(newer) is Outcome.ACCEPTED
    assert table.decide(fix) is Outcome.STALE
    assert table.decide(repair(newer.id, "e2")) is Outcome.ACCEPTED


def test_a_repair_made_before_anything_was_accepted_is_stale_once_something_is() -> None:
    table = Table()
    table.decide(event("k", "0a"))
    assert table.decide(repair(None)) is Outcome.STALE


def test_a_repair_expecting_an_event_that_is_not_there_is_stale() -> None:
    assert Table().decide(repair("s3-someone-else")) is Outcome.STALE


def test_a_gone_repair_is_a_removed_event_decided_the_same_way() -> None:
    table = Table()
    created = event("k", "0a")
    table.decide(created)
    gone = absent_event("s3", "bucket", "k", created.id)
    assert gone.kind == "removed" and reconciled_state(gone.id) == "absent"
    assert table.decide(gone) is Outcome.ACCEPTED
    assert table.decide(gone) is Outcome.DUPLICATE
    assert Table().decide(gone, Policy.build("aws", ["created"])) is Outcome.FILTERED


def test_only_the_reconcile_origin_makes_an_event_a_repair() -> None:
    table = Table()
    notified = event("k", "0a")
    table.decide(notified)
    plain = dataclasses.replace(repair(notified.id), origin="sqs:q:1", position="0a")
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
def test_no_mix_of_notifications_and_repairs_moves_a_watermark_or_undoes_a_write(
    steps: list[tuple[bool, str, str]],
) -> None:
    """Repairs computed against whatever was latest at some earlier step: a repair is
    accepted only if nothing was accepted since, and never changes a watermark."""
    table = Table()
    seen: list[str | None] = [None]
    highest: str | None = None
    for is_repair, position, etag in steps:
        before = table.watermark()
        if is_repair:
            expected = seen[int(position, 16) % len(seen)]
            outcome = table.decide(repair(expected, etag))
            assert table.watermark() == before
            if outcome is Outcome.ACCEPTED:
                assert expected == seen[-1]
        else:
            table.decide(event("k", position))
        mark = table.watermark()
        current = None if mark is None else mark.position
        if highest is not None:
            assert current is not None
            assert AWS_SEQUENCER_ORDER.compare(current, highest) >= 0
        highest = current
        seen.append(table.latest())
