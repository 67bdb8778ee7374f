"""The broker's JVM as an operating-system process: finding it, signalling it, waiting for it.

A broker is recognized by its command line (``kafka.Kafka`` and the ``-Dseqgate.devbroker``
flag naming its data directory), so a pid that now belongs to another process is never
signalled.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

from seqgate_devtools.errors import BrokerError

__all__ = [
    "dir_flag",
    "is_broker_process",
    "reap",
    "signal_group",
    "terminate",
    "wait_gone",
]


def dir_flag(data_dir: Path) -> str:
    """The JVM flag that marks the broker started on ``data_dir``."""
    return f"-Dseqgate.devbroker={data_dir}"


def _proc_state(pid: int) -> str | None:
    """One-letter process state from /proc (``None`` if there is no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[0]


def _cmdline(pid: int) -> list[str] | None:
    proc = Path(f"/proc/{pid}")
    if proc.is_dir() or Path("/proc/self").is_dir():
        try:
            raw = (proc / "cmdline").read_bytes()
        except OSError:
            return None
        if _proc_state(pid) in (None, "Z", "X"):
            return None
        return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
    try:  # no /proc (macOS): ask ps
        out = subprocess.run(
            ["ps", "-o", "stat=,command=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    if not out or out.startswith("Z"):
        return None
    return out.split()[1:]


def reap(pid: int) -> None:
    """Collect the exit status if ``pid`` is a child of this process (no zombie left)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def is_broker_process(pid: int, data_dir: Path) -> bool:
    """True if ``pid`` is alive and is the dev broker started on ``data_dir``."""
    reap(pid)
    args = _cmdline(pid)
    return args is not None and "kafka.Kafka" in args and dir_flag(data_dir) in args


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group ``pid`` leads, else to ``pid`` alone."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        try:
            same_group = os.getpgid(pid) == pid
        except ProcessLookupError:
            return
        if same_group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def wait_gone(
    pid: int, data_dir: Path, process: subprocess.Popen[bytes] | None, timeout: float
) -> bool:
    """True once the broker has exited, False if it still runs after ``timeout`` s."""
    if process is not None:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    deadline = time.monotonic() + timeout
    while is_broker_process(pid, data_dir):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def terminate(
    pid: int, data_dir: Path, process: subprocess.Popen[bytes] | None, timeout: float
) -> None:
    """SIGTERM, up to ``timeout`` s for a clean exit, then SIGKILL."""
    alive = process.poll() is None if process is not None else is_broker_process(pid, data_dir)
    if not alive:
        reap(pid)
        return
    signal_group(pid, signal.SIGTERM)
    if wait_gone(pid, data_dir, process, timeout):
        return
    signal_group(pid, signal.SIGKILL)
    if not wait_gone(pid, data_dir, process, 15.0):
        raise BrokerError(f"broker process {pid} survived SIGKILL")
