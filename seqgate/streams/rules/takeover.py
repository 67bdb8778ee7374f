"""Whose open transaction a new owner ends when partitions arrive, and how a fenced worker
tells that takeover from a second process with its instance id (worker/handover.py).

A worker killed inside its commit leaves its input offsets pending in the group until its
transaction ends; the broker ends it only at the transaction timeout. The new owner ends it
at once by fencing the previous owner's transactional.id. The previous owner is the worker
that committed the partition's offsets last: each worker names itself in the metadata of
the offsets it commits, and the instance id gives the transactional.id. Only offsets still
pending are a reason to fence: a worker that gave a partition away committed it first.
"""

from __future__ import annotations

from collections.abc import Mapping


def previous_owners(last_committer: Mapping[int, str | None], me: str) -> dict[str, set[int]]:
    """Instance id -> the partitions it committed last, for the newly assigned partitions
    (`last_committer`: partition -> the metadata of its committed offset), leaving out this
    worker and partitions whose offsets name nobody (never committed, or committed by a
    tool such as `seqgate reset`)."""
    owners: dict[str, set[int]] = {}
    for partition, name in last_committer.items():
        if name and name != me:
            owners.setdefault(name, set()).add(partition)
    return owners


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
