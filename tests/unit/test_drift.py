"""`seqgate reconcile`'s pure comparison: a listing against the committed state."""

from __future__ import annotations

import dataclasses

import pytest

from seqgate.schemas.listing import ListedObject
from seqgate.schemas.reconciled import absent_event, expectation, present_event
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.tools.drift import CommittedObject, Drift, Finding, compare
from tests.support.events import event

NOW = 1_800_000_000_000
GRACE = 300_000
OLD = NOW - 10 * GRACE
# the encoding hazards the parsers test: spaces, '+', a literal %2B, unicode, '//', a '/' end
KEYS = ["plain.txt", "June report+final.csv", "a%2Bb", "café/ß.bin", "a//b", "dir/"]


def listed(
    key: str, etag: str | None = "e1", version: str | None = None, at: int = OLD
) -> ListedObject:
    return ListedObject(key, version, etag, at, 3)


def accepted(item: ObjectEvent, written: int = OLD, *, keep: bool = True) -> CommittedObject:
    return CommittedObject(item.key, item.id, 0, 7, written, item if keep else None)


def run(listing: list[ListedObject], state: list[CommittedObject]) -> list[Finding]:
    committed = {entry.key: entry for entry in state}
    return list(compare("s3", "bucket", listing, committed, now_ms=NOW, grace_ms=GRACE))


def drifts(findings: list[Finding]) -> list[tuple[str, Drift]]:
    return [(finding.key, finding.drift) for finding in findings]


@pytest.mark.parametrize("key", KEYS)
def test_an_object_never_accepted_is_missing_and_its_repair_expects_nothing(key: str) -> None:
    [finding] = run([listed(key)], [])
    assert finding.drift is Drift.MISSING
    assert finding.repair is not None
    assert finding.repair.key == key and finding.repair.position is None
    assert finding.repair.etag == "e1" and finding.repair.kind == "created"


@pytest.mark.parametrize("key", KEYS)
def test_the_same_etag_is_in_sync_another_is_behind(key: str) -> None:
    notified = event(key, "0a", etag='"E1"')  # quoted and upper case: compared plain
    assert drifts(run([listed(key, "e1")], [accepted(notified)])) == [(key, Drift.IN_SYNC)]
    [behind] = run([listed(key, "e2")], [accepted(notified)])
    assert behind.drift is Drift.BEHIND
    assert behind.repair is not None and behind.repair.position == expectation(notified.id)


def test_a_versioned_bucket_compares_version_ids_before_etags() -> None:
    notified = event("k", "0a", version_id="v1", etag="e1")
    same_version = listed("k", "other", "v1")
    assert drifts(run([same_version], [accepted(notified)])) == [("k", Drift.IN_SYNC)]
    newer = listed("k", "e1", "v2")  # same content written again: a new version
    assert drifts(run([newer], [accepted(notified)])) == [("k", Drift.BEHIND)]


def test_an_accepted_object_the_listing_lacks_is_gone() -> None:
    notified = event("k", "0a")
    [gone] = run([], [accepted(notified)])
    assert gone.drift is Drift.GONE
    assert gone.repair == absent_event("s3", "bucket", "k", notified.id)
    removed = event("k", "0b", kind="removed")
    assert drifts(run([], [accepted(removed)])) == [("k", Drift.IN_SYNC)]
    assert drifts(run([listed("k")], [accepted(removed)])) == [("k", Drift.MISSING)]


def test_changes_within_the_grace_period_are_in_flight() -> None:
    recent = listed("new", at=NOW - GRACE + 1)
    assert drifts(run([recent], [])) == [("new", Drift.IN_FLIGHT)]
    assert drifts(run([listed("new", at=NOW - GRACE)], [])) == [("new", Drift.MISSING)]
    just_accepted = accepted(event("k", "0a"), written=NOW - 1)
    assert drifts(run([], [just_accepted])) == [("k", Drift.IN_FLIGHT)]
    in_sync_recent = listed("k", "abc", at=NOW)  # in sync stays in sync, however recent
    assert drifts(run([in_sync_recent], [just_accepted])) == [("k", Drift.IN_SYNC)]


def test_repairs_are_recognised_by_their_ids_without_the_input_topic() -> None:
    now_listed = listed("k", "e2")
    fix = present_event("s3", "bucket", now_listed, "s3-earlier")
    assert drifts(run([now_listed], [accepted(fix, keep=False)])) == [("k", Drift.IN_SYNC)]
    later = listed("k", "e3")
    assert drifts(run([later], [accepted(fix, keep=False)])) == [("k", Drift.BEHIND)]
    assert drifts(run([], [accepted(fix, keep=False)])) == [("k", Drift.GONE)]
    gone = absent_event("s3", "bucket", "k", "s3-x")
    assert drifts(run([], [accepted(gone, keep=False)])) == [("k", Drift.IN_SYNC)]
    assert drifts(run([later], [accepted(gone, keep=False)])) == [("k", Drift.MISSING)]


def test_what_cannot_be_compared_is_unknown_never_in_sync() -> None:
    aged_out = accepted(event("k", "0a"), written=OLD, keep=False)
    assert drifts(run([listed("k", at=OLD)], [aged_out])) == [("k", Drift.UNKNOWN)]
    [later] = run([listed("k", at=OLD + 1)], [aged_out])  # written after that commit
    assert later.drift is Drift.BEHIND and later.repair is not None
    assert drifts(run([], [aged_out])) == [("k", Drift.UNKNOWN)]
    bare = dataclasses.replace(event("k", "0a"), etag=None)
    assert drifts(run([listed("k")], [accepted(bare)])) == [("k", Drift.UNKNOWN)]


def test_listing_order_first_then_the_unlisted_in_key_order() -> None:
    state = [accepted(event(key, "0a")) for key in ("z", "b")]
    findings = run([listed("m"), listed("a")], state)
    assert [finding.key for finding in findings] == ["m", "a", "b", "z"]


def test_repair_ids_depend_on_the_listed_state_only() -> None:
    one = present_event("s3", "bucket", listed("k"), None)
    assert one == present_event("s3", "bucket", listed("k"), None)
    assert one.id != present_event("s3", "bucket", listed("k", at=OLD + 1), None).id
    assert one.id != present_event("s3", "bucket", listed("k", "e2"), None).id
    assert one.id != present_event("s3", "other", listed("k"), None).id
    assert one.event_time == "2027-01-15T07:10:00.000Z"  # OLD, in ms, as UTC


def test_repairs_name_the_object_as_its_source_does() -> None:
    """--source supabase (a Supabase bucket listed through its S3 endpoint): the repair is
    keyed and decided under the identity Supabase's webhooks give the object."""
    from seqgate.schemas.identity import event_identity

    [finding] = list(
        compare("supabase", "avatars", [listed("u/1.png")], {}, now_ms=NOW, grace_ms=0)
    )
    assert finding.repair is not None and finding.repair.source == "supabase"
    repair = finding.repair
    assert event_identity(repair.source, repair.bucket, repair.key) == "supabase://avatars/u/1.png"
