"""Standby replicas' pure parts: placement (never on the owner, spread evenly), and reading
their reports back (seqgate.streams.tools.standby_status)."""

from __future__ import annotations

from collections import Counter

from hypothesis import given
from hypothesis import strategies as st

from seqgate.runtime.topics import STANDBY_STAMP
from seqgate.streams.rules.placement import standby_placement, standbys_of
from seqgate.streams.tools.standby_status import stamped_ms


def _assignment(members: int, partitions: int) -> dict[str, frozenset[int]]:
    owned: dict[str, set[int]] = {f"w{m}": set() for m in range(members)}
    for partition in range(partitions):
        owned[f"w{partition % members}"].add(partition)
    return {member: frozenset(parts) for member, parts in owned.items()}


def test_two_workers_keep_each_others_partitions() -> None:
    assignment = {"a": frozenset({0, 1, 2}), "b": frozenset({3, 4, 5})}
    assert standby_placement(assignment, 1) == {"a": {3, 4, 5}, "b": {0, 1, 2}}
    assert standbys_of("a", assignment, 1) == {3, 4, 5}


def test_no_standbys_without_replicas_or_without_another_member() -> None:
    assert standbys_of("a", {"a": frozenset({0, 1}), "b": frozenset({2})}, 0) == frozenset()
    assert standby_placement({"a": frozenset({0, 1, 2})}, 2) == {"a": frozenset()}


def test_a_member_not_in_the_group_keeps_nothing() -> None:
    assert standbys_of("c", {"a": frozenset({0}), "b": frozenset({1})}, 1) == frozenset()


def test_an_owners_partitions_are_dealt_over_the_other_members() -> None:
    # w0 owns 0, 3, 6; with 1 standby its copies go to w1, w2, w1 (not all to w1).
    placement = standby_placement(_assignment(3, 9), 1)
    holders = {p for p in (0, 3, 6) if p in placement["w1"]}
    assert holders and holders != {0, 3, 6}
    assert {p for p in (0, 3, 6) if p in placement["w2"]} == {0, 3, 6} - holders


@given(
    members=st.integers(min_value=1, max_value=7),
    partitions=st.integers(min_value=0, max_value=40),
    replicas=st.integers(min_value=0, max_value=4),
)
def test_each_partition_gets_its_copies_away_from_its_owner_and_evenly(
    members: int, partitions: int, replicas: int
) -> None:
    assignment = _assignment(members, partitions)
    placement = standby_placement(assignment, replicas)
    copies = min(replicas, members - 1)
    holders: Counter[int] = Counter()
    for member, kept in placement.items():
        assert not kept & assignment[member], "a standby on its own partition's owner"
        holders.update(kept)
    assert all(holders[p] == copies for p in range(partitions)), holders
    loads = [len(kept) for kept in placement.values()]
    # Evenly: with owners whose partition counts differ by one at most, the members' standby
    # counts differ by at most the copies of one partition.
    assert max(loads) - min(loads) <= max(1, copies), loads


def test_a_standbys_report_is_read_from_its_offsets_metadata() -> None:
    assert stamped_ms(f"{STANDBY_STAMP}1796663355749") == 1796663355749
    assert stamped_ms(None) is None
    assert stamped_ms("") is None
    assert stamped_ms("something else") is None
    assert stamped_ms(f"{STANDBY_STAMP}not-a-number") is None
