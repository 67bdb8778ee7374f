"""A watchdog that stops a broker when the Python process that started it dies.

It is a separate small Python process (so it survives a SIGKILL of its parent) that blocks
reading its stdin, a pipe only the parent holds: EOF means the parent died and the broker is
killed; an ``x`` byte means the broker was stopped normally and the watchdog just exits.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys

__all__ = ["disarm_watchdog", "spawn_watchdog"]

_WATCHDOG_SOURCE = """\
import os, signal, sys, time
pid = int(sys.argv[1])
if sys.stdin.buffer.read(1) == b"x":
    sys.exit(0)
def gone():
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
    return stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X")
for sig, wait in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
    try:
        os.killpg(pid, sig)
    except OSError:
        sys.exit(0)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if gone():
            sys.exit(0)
        time.sleep(0.2)
"""


def spawn_watchdog(pid: int) -> subprocess.Popen[bytes]:
    """A helper that kills broker ``pid`` when this process exits without disarming it.

    It blocks reading its stdin (a pipe only this process holds): EOF means this process died,
    a ``x`` byte means the broker was stopped normally.
    """
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG_SOURCE, str(pid)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def disarm_watchdog(watchdog: subprocess.Popen[bytes] | None) -> None:
    """Tell the watchdog the broker was stopped normally and wait for it to exit."""
    if watchdog is None:
        return
    with contextlib.suppress(OSError, ValueError):
        if watchdog.stdin is not None:
            watchdog.stdin.write(b"x")
            watchdog.stdin.close()
    try:
        watchdog.wait(timeout=10)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()
