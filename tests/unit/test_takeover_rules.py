"""rules/takeover.py and the takeover mark's format (runtime/topics.py): whose transaction a
new owner ends, and whether a fenced worker was fenced by a takeover; and the format of a
restore's progress report."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from seqgate.runtime.topics import (
    fence_stamp,
    fenced_group,
    owner_stamp,
    owners_group,
    read_fence_stamp,
    read_owner_stamp,
    read_restore_stamp,
    restore_stamp,
)
from seqgate.streams.rules.takeover import previous_owners, taken_over_by
from seqgate.streams.tools.standby_status import RestoreProgress


def test_previous_owners_are_read_from_the_committed_offsets_metadata() -> None:
    committed = {0: "a", 1: "a", 2: "b", 3: "c"}
    assert previous_owners(committed, me="b") == {"a": {0, 1}, "c": {3}}


def test_a_worker_never_fences_itself_nor_a_name_nobody_wrote() -> None:
    # Never committed (None), or committed by a tool without a name (reset: "").
    assert previous_owners({0: "b", 1: None, 2: ""}, me="b") == {}


def test_a_mark_counts_only_when_made_after_the_fenced_producer_started() -> None:
    assert taken_over_by((10_000, "b"), producer_since_s=9.0) == "b"
    assert taken_over_by((10_000, "b"), producer_since_s=10.0) == "b"
    assert taken_over_by((10_000, "b"), producer_since_s=10.001) is None
    assert taken_over_by(None, producer_since_s=0.0) is None


@given(st.integers(min_value=0, max_value=2**53), st.text(min_size=1).filter(lambda t: t.strip()))
def test_the_mark_reads_back_what_was_written(at_ms: int, by: str) -> None:
    assert read_fence_stamp(fence_stamp(at_ms, by)) == (at_ms, by)


def test_anything_else_in_the_metadata_is_no_mark() -> None:
    for metadata in (None, "", "standby@123", "fenced@", "fenced@12", "fenced@x:b", "fenced@1:"):
        assert read_fence_stamp(metadata) is None


def test_the_fenced_group_names_application_and_instance() -> None:
    assert fenced_group("app", "w0") == "app-fenced-w0"


# ---- a restore's progress report (runtime/topics.py, tools/standby_status.py) --------------


@given(
    st.integers(min_value=0, max_value=2**53),
    st.text(min_size=1).filter(lambda t: t.strip()),
    st.integers(min_value=0, max_value=2**40),
)
def test_a_restore_report_reads_back_what_was_written(at_ms: int, who: str, left: int) -> None:
    assert read_restore_stamp(restore_stamp(at_ms, who, left)) == (at_ms, who, left)
    # A finished restore is no restore under way.
    assert read_restore_stamp(restore_stamp(at_ms, who, left, done=True)) is None


def test_anything_else_is_no_restore_report() -> None:
    for metadata in (None, "", "standby@1", "restoring@1:w1", "restoring@x:w1:3", "restoring@1::3"):
        assert read_restore_stamp(metadata) is None


def test_a_restore_report_says_who_and_how_much_is_left() -> None:
    assert RestoreProgress("w1", 2, 412_000).describe() == "w1(412,000 left)"


def test_an_owner_stamp_reads_back_what_was_written() -> None:
    assert read_owner_stamp(owner_stamp(1_700, "w1")) == (1_700, "w1")
    for metadata in (None, "", "w1", "owner@", "owner@x:w1", "owner@1:", "fenced@1:w1"):
        assert read_owner_stamp(metadata) is None
    assert owners_group("app") == "app-owners"
