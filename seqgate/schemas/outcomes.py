"""How an input ends: exactly one outcome each (docs/design.md §1.1).

Shared vocabulary: the rules decide outcomes, the runtime's metrics and the
accounting count them, the audit log writes them (`DecisionRecord.outcome`).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = ["OUTCOMES", "Outcome"]


class Outcome(StrEnum):
    ACCEPTED = "accepted"
    DUPLICATE = "duplicate"
    STALE = "stale"
    LATE = "late"
    FILTERED = "filtered"
    IGNORED = "ignored"
    REJECTED = "rejected"


OUTCOMES: Final[tuple[Outcome, ...]] = tuple(Outcome)
"""Every outcome, in the order of the conservation law."""
