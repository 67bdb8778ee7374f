"""Progress lines of long operator commands (seqgate/runtime/progress.py).

The clock is one the test moves by hand: no sleeps.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest

from seqgate.runtime.errors import UsageError
from seqgate.runtime.progress import (
    Pace,
    ProgressLine,
    Snapshot,
    format_count,
    format_duration,
    terminal_line,
)
from tests.support.clock import ManualClock

DEFAULT_PACE = Pace(after_s=3, every_s=10)


def line_for(tty: bool, pace: Pace = DEFAULT_PACE) -> tuple[ProgressLine, io.StringIO, ManualClock]:
    stream, clock = io.StringIO(), ManualClock(100.0)
    meter = ProgressLine("verify", stream=stream, tty=tty, pace=pace, clock=clock)
    return meter, stream, clock


def test_rate_and_eta() -> None:
    snapshot = Snapshot("verify", done=1_000, total=5_000, elapsed_s=4.0)
    assert snapshot.rate() == 250.0
    assert snapshot.eta_s() == 16.0
    assert Snapshot("verify", 1_000, None, 4.0).eta_s() is None  # no total, no ETA
    assert Snapshot("verify", 0, 10, 0.0).eta_s() is None  # no rate yet
    assert Snapshot("verify", 12, 10, 1.0).eta_s() == 0.0  # past an estimated total


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0.2, "1s"), (42, "42s"), (59.5, "1m00s"), (185, "3m05s"), (7_440, "2h04m")],
)
def test_durations(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown


@pytest.mark.parametrize(
    ("count", "shown"), [(950, "950"), (12_345, "12.3k"), (4_560_000, "4.56M")]
)
def test_counts(count: int, shown: str) -> None:
    assert format_count(count) == shown


def test_terminal_line() -> None:
    snapshot = Snapshot("verify", done=120_000, total=500_000, elapsed_s=3.0)
    assert terminal_line(snapshot) == ("verify: 120.0k/500.0k records (24.0%), 40.0k/s, ETA 10s")
    unknown = Snapshot("watermark", done=950, total=None, elapsed_s=1.0)
    assert terminal_line(unknown) == "watermark: 950 records, 950/s"


def test_quiet_when_the_operation_ends_within_the_delay() -> None:
    meter, stream, clock = line_for(tty=False)
    meter.expect(100)
    for _ in range(100):
        clock.now += 0.015625  # 1.6 s in all (binary fractions keep the sums exact)
        meter.advance()
    meter.finish()
    assert stream.getvalue() == ""


def test_json_lines_off_a_terminal_are_throttled() -> None:
    meter, stream, clock = line_for(tty=False)
    meter.expect(160)
    for _ in range(160):
        clock.now += 0.25  # 40 s in all: lines at 3 s, 13 s, 23 s, 33 s
        meter.advance()
    meter.finish()
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["records"] for line in lines] == [12, 52, 92, 132, 160]
    assert [line["finished"] for line in lines] == [False] * 4 + [True]
    first = lines[0]
    assert first["progress"] == "verify"
    assert (first["total"], first["percent"], first["rate_per_s"]) == (160, 7.5, 4.0)
    assert (first["elapsed_s"], first["eta_s"]) == (3.0, 37.0)
    assert lines[-1]["eta_s"] == 0.0


def test_the_last_json_line_says_finished_even_short_of_an_estimated_total() -> None:
    meter, stream, clock = line_for(tty=False, pace=Pace(after_s=0, every_s=10))
    meter.expect(100)
    clock.now += 1
    meter.advance(40)  # the rest was compacted away
    meter.finish()
    first, last = (json.loads(line) for line in stream.getvalue().splitlines())
    assert (first["finished"], first["eta_s"]) == (False, 1.5)
    assert (last["finished"], last["records"], last["eta_s"]) == (True, 40, 0.0)


def test_a_terminal_gets_one_line_rewritten_in_place() -> None:
    meter, stream, clock = line_for(tty=True)
    meter.expect(40)
    for _ in range(40):
        clock.now += 0.125  # 5 s: drawn at 3 s, then every 0.25 s (9 draws)
        meter.advance()
    meter.say("verified partition 1/1: 40 inputs, 0 problems")
    meter.finish()
    text = stream.getvalue()
    assert "{" not in text  # no JSON on a terminal
    assert text.count("\n") == 2  # the command's line, and the end of the progress line
    assert text.count("\r") == 9 + 1 + 1  # the draws, the clearing for say, the last draw
    assert "\r\x1b[Kverified partition 1/1" in text
    assert text.endswith("\rverify: 40/40 records (100.0%), 8/s, ETA 0s\x1b[K\n")


def test_a_command_line_on_a_quiet_terminal_is_printed_as_is() -> None:
    meter, stream, _ = line_for(tty=True)
    meter.say("verified partition 1/3: 4 inputs, 0 problems")
    meter.finish()
    assert stream.getvalue() == "verified partition 1/3: 4 inputs, 0 problems\n"


def test_pace_from_the_environment() -> None:
    assert Pace.from_environment({}) == Pace(after_s=3.0, every_s=10.0, enabled=True)
    pace = Pace.from_environment(
        {"SEQGATE_PROGRESS_AFTER_S": "0", "SEQGATE_PROGRESS_EVERY_S": "0.5"}
    )
    assert (pace.after_s, pace.every_s) == (0.0, 0.5)
    assert not Pace.from_environment({"SEQGATE_PROGRESS": "off"}).enabled


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("SEQGATE_PROGRESS_AFTER_S", "soon"),
        ("SEQGATE_PROGRESS_EVERY_S", "-1"),
        ("SEQGATE_PROGRESS_AFTER_S", "nan"),
        ("SEQGATE_PROGRESS", "yes"),
    ],
)
def test_a_bad_setting_is_one_usage_error_naming_it(name: str, value: str) -> None:
    with pytest.raises(UsageError, match=name):
        Pace.from_environment({name: value})


def test_off_writes_nothing() -> None:
    meter, stream, clock = line_for(tty=False, pace=Pace(after_s=0, every_s=0, enabled=False))
    for _ in range(10):
        clock.now += 5
        meter.advance()
    meter.finish()
    assert stream.getvalue() == ""


@pytest.mark.parametrize("command", [["watermark", "s3://a/b"], ["verify"]])
def test_a_bad_setting_ends_the_command_before_kafka_is_asked(command: list[str]) -> None:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("SEQGATE_")}
    environment["SEQGATE_PROGRESS_EVERY_S"] = "often"
    done = subprocess.run(
        [sys.executable, "-m", "seqgate.cli", *command],
        capture_output=True,
        text=True,
        env={**environment, "SEQGATE_BOOTSTRAP_SERVERS": "127.0.0.1:1"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        "error: SEQGATE_PROGRESS_EVERY_S='often': expected a number of seconds >= 0, such as 3"
    ]
