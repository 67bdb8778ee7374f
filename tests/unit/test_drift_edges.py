"""Every branch of seqgate.streams.tools.drift as a whole Finding: the drift, the reason
`seqgate reconcile` prints, the listed and committed states it carries and its repair."""

from __future__ import annotations

from seqgate.schemas.identity import event_identity
from seqgate.schemas.listing import ListedObject
from seqgate.schemas.reconciled import absent_event, absent_id, present_event, present_id
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.tools.drift import CommittedObject, Drift, Finding, compare
from tests.support.events import event

NOW = 1_800_000_000_000
GRACE = 300_000
OLD = NOW - 10 * GRACE
LEFT = "the accepted event s3-gone is no longer in the input topic"


def _listed(version: str | None = None, etag: str | None = "e1", at: int = OLD) -> ListedObject:
    return ListedObject("k", version, etag, at, 3)


def _state(event_id: str, item: ObjectEvent | None, written: int = OLD) -> CommittedObject:
    return CommittedObject("k", event_id, 0, 7, written, item)


def _one(listed: ListedObject | None, state: CommittedObject | None) -> Finding:
    committed = {} if state is None else {"k": state}
    listing = [] if listed is None else [listed]
    [finding] = compare("s3", "bucket", listing, committed, now_ms=NOW, grace_ms=GRACE)
    return finding


def _repair(listed: ListedObject, state: CommittedObject | None) -> ObjectEvent:
    return present_event("s3", "bucket", listed, None if state is None else state.event_id)


def test_listed_and_never_accepted() -> None:
    listed = _listed()
    assert _one(listed, None) == Finding(
        Drift.MISSING, "k", "no event of it was accepted", listed, None, _repair(listed, None)
    )


def test_listed_and_repaired_to_this_very_state() -> None:
    listed = _listed()
    state = _state(present_id(event_identity("s3", "bucket", "k"), listed), None)
    assert _one(listed, state) == Finding(
        Drift.IN_SYNC, "k", "a repair of this very state", listed, state
    )


def test_listed_after_a_repair_said_it_was_gone() -> None:
    listed = _listed()
    state = _state(absent_id("s3://bucket/k", "s3-old"), None)
    assert _one(listed, state) == Finding(
        Drift.MISSING,
        "k",
        "a repair said it was gone; it is back",
        listed,
        state,
        _repair(listed, state),
    )


def test_listed_after_a_repair_of_an_earlier_state() -> None:
    listed = _listed()
    state = _state(present_id("s3://bucket/k", _listed(etag="e0")), None)
    assert _one(listed, state) == Finding(
        Drift.BEHIND,
        "k",
        "a repair of an earlier state was accepted",
        listed,
        state,
        _repair(listed, state),
    )


def test_listed_whose_accepted_event_left_the_input() -> None:
    state = _state("s3-gone", None, written=OLD)
    modified = _listed(at=OLD + 1)
    assert _one(modified, state) == Finding(
        Drift.BEHIND,
        "k",
        "modified after its latest accepted event (s3-gone) was committed",
        modified,
        state,
        _repair(modified, state),
    )
    same = _listed(at=OLD)
    assert _one(same, state) == Finding(
        Drift.UNKNOWN,
        "k",
        LEFT,
        same,
        state,
    )


def test_listed_after_its_last_accepted_event_removed_it() -> None:
    removed = event("k", "0b", kind="removed")
    listed, state = _listed(), _state(removed.id, removed)
    assert _one(listed, state) == Finding(
        Drift.MISSING,
        "k",
        f"the last accepted event ({removed.id}) removed it",
        listed,
        state,
        _repair(listed, state),
    )


def test_listed_and_compared_by_version_id() -> None:
    notified = event("k", "0a", version_id="v1")
    state = _state(notified.id, notified)
    same = _listed(version="v1", etag="other")
    assert _one(same, state) == Finding(Drift.IN_SYNC, "k", "same version id", same, state)
    newer = _listed(version="v2")
    assert _one(newer, state) == Finding(
        Drift.BEHIND, "k", "version v2, accepted v1", newer, state, _repair(newer, state)
    )


def test_listed_and_compared_by_etag_when_one_side_has_no_version_id() -> None:
    notified = event("k", "0a", etag='"E1"')
    state = _state(notified.id, notified)
    same = _listed(version="v9", etag="e1")
    assert _one(same, state) == Finding(Drift.IN_SYNC, "k", "same ETag", same, state)
    other = _listed(etag="e2")
    assert _one(other, state) == Finding(
        Drift.BEHIND, "k", "ETag e2, accepted e1", other, state, _repair(other, state)
    )


def test_listed_with_nothing_to_compare() -> None:
    notified = event("k", "0a", etag=None)
    listed, state = _listed(etag=None), _state(notified.id, notified)
    why = f"the accepted event {notified.id} has neither a version id nor an ETag to compare"
    assert _one(listed, state) == Finding(Drift.UNKNOWN, "k", why, listed, state)


def test_unlisted_after_a_repair_said_it_was_gone() -> None:
    state = _state(absent_id("s3://bucket/k", "s3-old"), None)
    assert _one(None, state) == Finding(
        Drift.IN_SYNC, "k", "a repair said it was gone", None, state
    )


def test_unlisted_whose_accepted_event_left_the_input() -> None:
    state = _state("s3-gone", None)
    assert _one(None, state) == Finding(
        Drift.UNKNOWN,
        "k",
        LEFT,
        None,
        state,
    )


def test_unlisted_after_its_last_accepted_event_removed_it() -> None:
    removed = event("k", "0b", kind="removed")
    state = _state(removed.id, removed)
    assert _one(None, state) == Finding(
        Drift.IN_SYNC, "k", "the last accepted event removed it", None, state
    )


def test_unlisted_while_the_state_says_it_exists() -> None:
    notified = event("k", "0a")
    for state in (
        _state(notified.id, notified),
        _state(present_id("s3://bucket/k", _listed()), None),
    ):
        assert _one(None, state) == Finding(
            Drift.GONE,
            "k",
            f"not in the listing; the last accepted event ({state.event_id}) says it exists",
            None,
            state,
            absent_event("s3", "bucket", "k", state.event_id),
        )


def test_in_flight_keeps_the_reason_and_the_states_but_no_repair() -> None:
    recent = _listed(at=NOW - GRACE + 1)
    assert _one(recent, None) == Finding(
        Drift.IN_FLIGHT, "k", "no event of it was accepted", recent, None
    )
    notified = event("k", "0a")
    fresh = _state(notified.id, notified, written=NOW - GRACE + 1)
    why = f"not in the listing; the last accepted event ({notified.id}) says it exists"
    assert _one(None, fresh) == Finding(Drift.IN_FLIGHT, "k", why, None, fresh)
    settled = _state(notified.id, notified, written=NOW - GRACE)
    assert _one(None, settled).drift is Drift.GONE


def test_a_listed_change_in_flight_keeps_the_committed_state() -> None:
    notified = event("k", "0a", etag="e0")
    state = _state(notified.id, notified)
    recent = _listed(at=NOW - 1)
    assert _one(recent, state) == Finding(
        Drift.IN_FLIGHT, "k", "ETag e1, accepted e0", recent, state
    )
