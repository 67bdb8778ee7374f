"""The JSON progress lines a command prints off a terminal (seqgate/runtime/progress.py)."""

from __future__ import annotations

import json
from typing import Any

AT_ONCE = {"SEQGATE_PROGRESS_AFTER_S": "0", "SEQGATE_PROGRESS_EVERY_S": "0"}
"""The environment that makes a command report from its first record on, a line each time."""


def progress_lines(stderr: str, operation: str) -> list[dict[str, Any]]:
    """The command's progress lines: all of `operation`, never going back, the last one
    (and only it) finished."""
    lines = [json.loads(line) for line in stderr.splitlines() if line.startswith("{")]
    assert lines, stderr
    assert {line["progress"] for line in lines} == {operation}
    done = [line["records"] for line in lines]
    assert done == sorted(done) and done[-1] > 0
    assert [line["finished"] for line in lines][-2:] == [False, True]
    return lines
