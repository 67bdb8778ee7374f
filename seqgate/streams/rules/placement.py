"""Where the standby replicas of each partition live (`--standby-replicas`).

A pure function of the group's assignment, so that every worker computes the same
placement from the same description of the group, without talking to the others:

* a partition's standbys are never on its owner (a copy on the same machine saves
  nothing when that machine is lost);
* the owner's partitions are dealt round-robin over the other members, in the order of
  their instance ids, so that each member keeps about as many standbys as the others
  (Kafka Streams' default standby assignor spreads them the same way, by client).

Members are named by their instance id (`group.instance.id`): stable across restarts, so a
restarted worker finds its standbys where it left them.
"""

from __future__ import annotations

from collections.abc import Mapping


def standby_placement(
    assignment: Mapping[str, frozenset[int] | set[int]], replicas: int
) -> dict[str, frozenset[int]]:
    """Member -> the partitions it keeps a standby of, for `replicas` standbys per partition.

    `assignment` maps each member's instance id to the partitions it owns. With fewer
    than `replicas + 1` members, each partition gets as many standbys as there are
    members other than its owner.
    """
    members = sorted(assignment)
    placement: dict[str, set[int]] = {member: set() for member in members}
    others = len(members) - 1
    copies = min(replicas, others)
    if copies <= 0:
        return {member: frozenset() for member in members}
    for index, owner in enumerate(members):
        for rank, partition in enumerate(sorted(assignment[owner])):
            for copy in range(copies):
                # The k-th partition's copies start at the (k mod others)-th next member, so
                # an owner's partitions do not all land on its neighbour.
                step = 1 + (rank + copy) % others
                placement[members[(index + step) % len(members)]].add(partition)
    return {member: frozenset(partitions) for member, partitions in placement.items()}


def standbys_of(
    member: str, assignment: Mapping[str, frozenset[int] | set[int]], replicas: int
) -> frozenset[int]:
    """The partitions `member` keeps a standby of: never one it owns, nor any while it is
    not (yet) in the group's assignment."""
    if member not in assignment or replicas <= 0:
        return frozenset()
    owned = frozenset(assignment[member])
    return standby_placement(assignment, replicas)[member] - owned
