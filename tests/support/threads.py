"""A helper thread whose failure fails the test that started it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["CheckedThread"]


class CheckedThread:
    """Runs ``target(*args)`` in a daemon thread; :meth:`join` fails the test when the thread
    raised, or did not end in time (a bare ``threading.Thread`` would only print it)."""

    def __init__(self, target: Callable[..., Any], *args: Any, name: str) -> None:
        self.name = name
        self.error: BaseException | None = None
        self._target = target
        self._args = args
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> CheckedThread:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            self._target(*self._args)
        except BaseException as error:
            self.error = error

    def join(self, timeout: float) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"{self.name} did not finish within {timeout:.0f}s"
        if self.error is not None:
            raise AssertionError(f"{self.name} raised {self.error!r}") from self.error
