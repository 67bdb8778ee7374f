"""A helper thread whose failure fails the test that started it."""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["CheckedThread", "sigterm_and_read_stdout"]


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


def sigterm_and_read_stdout(popen: subprocess.Popen[bytes], timeout: float) -> bytes:
    """SIGTERM ``popen``, wait for it to exit, and return its stdout.

    For a process whose stderr a thread is collecting. Not ``communicate()``: that reads
    stderr too, so the last lines (often the very warning a test looks for) can end in its
    discarded return value rather than in the thread's list (CI, 2026-12-06: the GCS
    forged-kid warning missing twice). The processes this serves print only a short JSON
    summary on stdout, at exit, so waiting before reading it cannot fill the pipe."""
    popen.send_signal(signal.SIGTERM)
    popen.wait(timeout)
    assert popen.stdout is not None
    return popen.stdout.read()
