"""`fill_once`: the cache step behind the broker's jars, Apicurio and Azurite."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest
from seqgate_devtools.broker.files import fill_once


def _complete(target: Path, marker: Path) -> bool:
    return marker.is_file() and (target / "payload").is_file()


def _fill_counting(target: Path, marker: Path, log: Path, start: Any = None) -> None:
    """One process's call, after every process reached `start`; each fill appends a line
    to `log`."""
    if start is not None:
        start.wait(60)

    def fill(staging: Path) -> dict[str, Any]:
        with log.open("a") as out:
            out.write("filled\n")
        (staging / "payload").write_text("data")
        return {"version": 1}

    fill_once(target, marker, lambda: _complete(target, marker), fill)


def test_fills_once_and_writes_the_marker_last(tmp_path: Path) -> None:
    target, marker, log = tmp_path / "app", tmp_path / "app.complete", tmp_path / "log"
    _fill_counting(target, marker, log)
    _fill_counting(target, marker, log)
    assert log.read_text() == "filled\n"
    assert (target / "payload").read_text() == "data"
    assert json.loads(marker.read_text()) == {"version": 1}
    assert not (tmp_path / "app.partial").exists()


def test_a_failed_fill_leaves_no_marker_and_the_next_call_starts_over(tmp_path: Path) -> None:
    target, marker = tmp_path / "app", tmp_path / "app.complete"
    target.mkdir()
    (target / "stale").write_text("from an older version")
    marker.write_text('{"version": 0}')  # an older version's: not complete for this one

    def broken(staging: Path) -> dict[str, Any]:
        (staging / "half").write_text("half")
        raise RuntimeError("download interrupted")

    with pytest.raises(RuntimeError, match="download interrupted"):
        fill_once(target, marker, lambda: _complete(target, marker), broken)
    assert not marker.exists()
    _fill_counting(target, marker, tmp_path / "log")
    assert sorted(p.name for p in target.iterdir()) == ["payload"]  # nothing stale or half
    assert not (tmp_path / "app.partial").exists()


def test_concurrent_processes_fill_it_once(tmp_path: Path) -> None:
    target, marker, log = tmp_path / "app", tmp_path / "app.complete", tmp_path / "log"
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(4)  # all four find the cache empty at the same moment
    processes = [
        context.Process(target=_fill_counting, args=(target, marker, log, start)) for _ in range(4)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
    assert [process.exitcode for process in processes] == [0, 0, 0, 0]
    assert log.read_text() == "filled\n"
    assert _complete(target, marker)


def test_it_looks_again_under_the_lock(tmp_path: Path) -> None:
    """Another process filled the cache between the first look and the lock: no fill."""
    answers = iter([False, True])

    def must_not_fill(staging: Path) -> dict[str, Any]:
        raise AssertionError("filled a cache another process had completed")

    fill_once(tmp_path / "app", tmp_path / "app.complete", lambda: next(answers), must_not_fill)
