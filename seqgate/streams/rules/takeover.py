"""Whose open transaction a new owner ends when partitions arrive, and how a fenced worker
tells that takeover from a second process with its instance id (worker/handover.py).

A worker killed inside its commit leaves its input offsets pending in the group until its
transaction ends; the broker ends it only at the transaction timeout. The new owner ends it
at once by fencing the previous owner's transactional.id, which is safe only for an owner
the group has dropped: a member that gave partitions away committed before it did. With
static membership a member's name is its instance id, which gives its transactional.id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def departed_owners(
    owners: Mapping[int, str], partitions: Iterable[int], members: set[str], me: str
) -> set[str]:
    """The previous owners of `partitions` (from the last stable description, `owners`:
    partition -> instance id) that are no longer members of the group."""
    previous = {owners[p] for p in partitions if p in owners}
    return previous - members - {me}


def taken_over_by(mark: tuple[int, str] | None, producer_since_s: float) -> str | None:
    """Who ended this worker's transaction at a takeover, from the mark in its fenced group
    (epoch milliseconds, new owner): only a mark made after the fenced producer started
    counts, an older one belongs to an earlier incarnation.

    The two times come from two machines' clocks. The mark follows the fenced producer's
    start by at least the session timeout (the group dropped the worker first), so clocks
    that differ by less than that do not change the answer."""
    if mark is None:
        return None
    at_ms, by = mark
    return by if at_ms >= producer_since_s * 1000 else None
