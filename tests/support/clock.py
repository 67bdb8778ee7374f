"""A clock a test moves by hand: monotonic seconds, `clock.now += 5`."""

from __future__ import annotations


class ManualClock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now
