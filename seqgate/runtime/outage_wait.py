"""What a `TransactionalSession` (runtime/session.py) asks about a write outage.

The worker's outage (streams/worker/outage.py) answers it; the session only needs the two
questions, and keeping them here leaves session.py the steps of a transaction.
"""

from __future__ import annotations

from typing import Protocol


class OutageWait(Protocol):
    """Whether a transactional call that overran its bound is explained by the cluster
    (worker/outage.py): True while the metadata shows it cannot take writes."""

    def waiting(self) -> bool: ...

    def stopping(self) -> bool: ...
