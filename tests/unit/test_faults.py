"""The fault injector the crash and zombie tests drive through SEQGATE_FAULT."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from seqgate.runtime.faults import (
    FaultInjector,
    FaultPoint,
    SignalAt,
    injector_from_env,
)


@pytest.fixture
def received() -> Iterator[list[int]]:
    """SIGUSR1 recorded instead of acted on: the injector's signal, observed in-process."""
    seen: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: seen.append(signum))
    try:
        yield seen
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_no_variable_means_no_faults() -> None:
    assert type(injector_from_env(None)) is FaultInjector
    assert type(injector_from_env("")) is FaultInjector


@pytest.mark.parametrize(
    ("value", "signum", "after"),
    [
        ("kill:before_commit", signal.SIGKILL, 0),
        ("kill:after_commit:3", signal.SIGKILL, 3),
        ("stop:before_commit:2", signal.SIGSTOP, 2),
    ],
)
def test_the_variable_names_a_signal_a_point_and_a_skip_count(
    value: str, signum: int, after: int
) -> None:
    injector = injector_from_env(value)
    assert isinstance(injector, SignalAt)
    assert (injector.point.value, injector.signum, injector.after) == (
        value.split(":")[1],
        signum,
        after,
    )
    assert injector.armed is None


@pytest.mark.parametrize(
    "value", ["kill", "term:before_commit", "kill:nowhere", "stop:before_commit:x", "kill:a:1:2"]
)
def test_a_malformed_variable_is_refused_with_the_format(value: str) -> None:
    with pytest.raises(ValueError, match=r"kill\|stop:<point>\[:<skip count>\]"):
        injector_from_env(value)


def test_the_signal_comes_after_the_skipped_reaches_at_that_point_only(
    received: list[int],
) -> None:
    injector = SignalAt(FaultPoint.BEFORE_COMMIT, signal.SIGUSR1, after=2)
    for _ in range(2):
        injector.reach(FaultPoint.BEFORE_COMMIT)
        injector.reach(FaultPoint.AFTER_COMMIT)
    assert received == []
    injector.reach(FaultPoint.AFTER_COMMIT)
    assert received == []
    injector.reach(FaultPoint.BEFORE_COMMIT)
    assert received == [signal.SIGUSR1]
    injector.reach(FaultPoint.BEFORE_COMMIT)  # a stopped process goes on, and stops again
    assert received == [signal.SIGUSR1] * 2


def test_an_armed_fault_counts_only_while_its_file_exists(
    received: list[int], tmp_path: Path
) -> None:
    arm = tmp_path / "arm"
    injector = injector_from_env("stop:before_commit:1", str(arm))
    assert isinstance(injector, SignalAt) and injector.armed == arm
    injector.signum = signal.SIGUSR1  # observed here instead of stopping the test
    for _ in range(3):
        injector.reach(FaultPoint.BEFORE_COMMIT)
    assert received == [] and injector.after == 1
    arm.touch()
    injector.reach(FaultPoint.BEFORE_COMMIT)
    assert received == []
    injector.reach(FaultPoint.BEFORE_COMMIT)
    assert received == [signal.SIGUSR1]
    arm.unlink()
    injector.reach(FaultPoint.BEFORE_COMMIT)
    assert received == [signal.SIGUSR1]
