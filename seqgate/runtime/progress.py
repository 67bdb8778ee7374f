"""Progress of long operator commands (`watermark`, `verify`, `reset`) on stderr.

A command that scans a partition shows nothing for the first few seconds: most
scans end before anyone wonders, and a line that flashes by is noise. After that,
on a terminal, one line is rewritten in place (records scanned, rate, ETA) at most
a few times a second; otherwise (a pipe, a log collector) a JSON object per line is
written every few seconds, so logs stay machine-readable. The formatting, rate and
ETA are pure functions; the clock is injected so tests need no sleeps.

Knobs (environment, for scripts and tests): ``SEQGATE_PROGRESS_AFTER_S`` (default 3:
quiet for operations shorter than this), ``SEQGATE_PROGRESS_EVERY_S`` (default 10:
the JSON lines' period) and ``SEQGATE_PROGRESS=off``.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TextIO

from seqgate.runtime.errors import UsageError

DEFAULT_AFTER_S = 3.0
DEFAULT_EVERY_S = 10.0
TERMINAL_EVERY_S = 0.25  # how often the terminal line is redrawn at most

AFTER_VARIABLE = "SEQGATE_PROGRESS_AFTER_S"
EVERY_VARIABLE = "SEQGATE_PROGRESS_EVERY_S"
SWITCH_VARIABLE = "SEQGATE_PROGRESS"


class Meter(Protocol):
    """What a scan reports to: the records it is going to read, and those it read."""

    def expect(self, records: int) -> None: ...

    def advance(self, records: int = 1) -> None: ...


class NoMeter:
    """A meter that reports nothing (library callers, tests of the scans themselves)."""

    def expect(self, records: int) -> None:
        pass

    def advance(self, records: int = 1) -> None:
        pass


# ---- pure logic ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Snapshot:
    operation: str
    done: int
    total: int | None  # None: not known (no ETA)
    elapsed_s: float

    def rate(self) -> float:
        """Records per second so far (0 before any time passed)."""
        return self.done / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def eta_s(self) -> float | None:
        """Seconds left at the rate so far; None without a total or a rate."""
        rate = self.rate()
        if self.total is None or rate <= 0:
            return None
        return max(self.total - self.done, 0) / rate

    def as_dict(self, *, finished: bool = False) -> dict[str, object]:
        eta = 0.0 if finished else self.eta_s()
        return {
            "progress": self.operation,
            "records": self.done,
            "total": self.total,
            "percent": percent(self.done, self.total),
            "rate_per_s": round(self.rate(), 1),
            "elapsed_s": round(self.elapsed_s, 1),
            "eta_s": None if eta is None else round(eta, 1),
            "finished": finished,
        }


def percent(done: int, total: int | None) -> float | None:
    if total is None or total <= 0:
        return None
    return round(min(100.0, 100.0 * done / total), 1)


def format_duration(seconds: float) -> str:
    """`42s`, `3m05s`, `2h04m`."""
    whole = math.ceil(seconds)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def format_count(count: float) -> str:
    """`950`, `12.3k`, `4.56M`."""
    if count < 1_000:
        return f"{count:.0f}"
    if count < 1_000_000:
        return f"{count / 1_000:.1f}k"
    return f"{count / 1_000_000:.2f}M"


def terminal_line(snapshot: Snapshot) -> str:
    """`verify: 120.0k/500.0k records (24.0%), 40.0k/s, ETA 10s`."""
    done = format_count(snapshot.done)
    scanned = done if snapshot.total is None else f"{done}/{format_count(snapshot.total)}"
    share = percent(snapshot.done, snapshot.total)
    line = f"{snapshot.operation}: {scanned} records"
    if share is not None:
        line += f" ({share:.1f}%)"
    line += f", {format_count(snapshot.rate())}/s"
    eta = snapshot.eta_s()
    if eta is not None:
        line += f", ETA {format_duration(eta)}"
    return line


def json_line(snapshot: Snapshot, *, finished: bool = False) -> str:
    return json.dumps(snapshot.as_dict(finished=finished), sort_keys=True)


# ---- the writer ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Pace:
    """When to write: nothing before `after_s`, then every `every_s` (None: never)."""

    after_s: float = DEFAULT_AFTER_S
    every_s: float = DEFAULT_EVERY_S
    enabled: bool = True

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Pace:
        env = os.environ if environ is None else environ
        switch = env.get(SWITCH_VARIABLE, "on").strip().lower()
        if switch not in ("on", "off"):
            raise UsageError(f"{SWITCH_VARIABLE}={switch!r}: expected on or off")
        return cls(
            after_s=_seconds(env, AFTER_VARIABLE, DEFAULT_AFTER_S),
            every_s=_seconds(env, EVERY_VARIABLE, DEFAULT_EVERY_S),
            enabled=switch == "on",
        )


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    text = env.get(name)
    if text is None or not text.strip():
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not math.isfinite(value) or value < 0:
        raise UsageError(f"{name}={text!r}: expected a number of seconds >= 0, such as 3")
    return value


class ProgressLine:
    """A Meter that writes progress to `stream` (stderr) as the module docstring says.

    Use as a context manager: leaving it ends the terminal line, or writes a final
    JSON line with `"finished": true` when any line was written.
    """

    def __init__(
        self,
        operation: str,
        *,
        stream: TextIO | None = None,
        tty: bool | None = None,
        pace: Pace | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.operation = operation
        self._stream = sys.stderr if stream is None else stream
        self._tty = self._stream.isatty() if tty is None else tty
        self._pace = Pace.from_environment() if pace is None else pace
        self._clock = clock
        self._started = clock()
        self._next_write = self._started + self._pace.after_s
        self.done = 0
        self.total: int | None = None
        self.written = 0  # lines (or terminal redraws) written

    def expect(self, records: int) -> None:
        self.total = (self.total or 0) + max(records, 0)

    def advance(self, records: int = 1) -> None:
        self.done += records
        if not self._pace.enabled:
            return
        now = self._clock()
        if now < self._next_write:
            return
        self._next_write = now + (TERMINAL_EVERY_S if self._tty else self._pace.every_s)
        self._write(self.snapshot(now), finished=False)

    def snapshot(self, now: float | None = None) -> Snapshot:
        at = self._clock() if now is None else now
        return Snapshot(self.operation, self.done, self.total, at - self._started)

    def clear(self) -> None:
        """Erase the terminal progress line, before the command prints a line of its own
        (on stdout or stderr); the next advance draws it again."""
        if self._tty and self.written:
            self._stream.write("\r\x1b[K")
            self._stream.flush()

    def say(self, line: str) -> None:
        """A line of the command's own (such as a partition done) on the progress stream."""
        self.clear()
        self._stream.write(line + "\n")
        self._stream.flush()

    def finish(self) -> None:
        if not self.written:
            return
        if self._tty:
            self._write(self.snapshot(), finished=True)
            self._stream.write("\n")
        else:
            self._write(self.snapshot(), finished=True)
        self._stream.flush()

    def _write(self, snapshot: Snapshot, *, finished: bool) -> None:
        if self._tty:
            # \r and clear-to-end: the line shrinks when the ETA gets shorter
            self._stream.write("\r" + terminal_line(snapshot) + "\x1b[K")
        else:
            self._stream.write(json_line(snapshot, finished=finished) + "\n")
        self._stream.flush()
        self.written += 1

    def __enter__(self) -> ProgressLine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()
