"""A spell of the same failure, told once: its first occurrence, then its end.

While Kafka cannot take writes (two of three nodes down, a broker restarting) every commit
of the worker and every request or batch of a bridge fails the same way, over and over: a
warning per failure would bury the one line that matters. A :class:`FailureSpell` logs the
first failure of a spell as a warning, the repeats at info level (hidden by default), and
one warning when the spell ends, with how long it lasted and how many failures it held.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["FailureSpell"]


@dataclass
class FailureSpell:
    """One kind of failure of one component: said when it begins and when it ends."""

    logger: logging.Logger
    failing: str  # the warning when the spell begins (and the info line of each repeat)
    recovered: str  # the warning when it ends
    clock: Callable[[], float] = time.monotonic
    began: float | None = None
    failures: int = 0

    @property
    def active(self) -> bool:
        return self.began is not None

    def failed(self, **extra: Any) -> None:
        self.failures += 1
        if self.began is None:
            self.began = self.clock()
            self.logger.warning(self.failing, extra=extra)
        else:
            self.logger.info(self.failing, extra={**extra, "failures": self.failures})

    def succeeded(self) -> None:
        """A success: a spell in progress is over (said once); nothing to say otherwise."""
        if self.began is None:
            return
        self.logger.warning(
            self.recovered,
            extra={"after_s": round(self.clock() - self.began, 1), "failures": self.failures},
        )
        self.began, self.failures = None, 0
