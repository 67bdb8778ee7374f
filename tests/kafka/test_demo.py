"""`seqgate demo`, the README's main job, as a user runs it: its own broker, then nothing left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.kafka, pytest.mark.own_broker, pytest.mark.slow]


def kafka_pids() -> set[int]:
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            status = (entry / "status").read_text()
        except OSError:
            continue
        if b"kafka.Kafka" in cmdline and "State:\tZ" not in status:
            pids.add(int(entry.name))
    return pids


def test_demo_prints_the_guides_outcome_and_leaves_no_process() -> None:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("KAFKA_BOOTSTRAP_SERVERS", "SEQGATE_BOOTSTRAP_SERVERS")
    }
    before = kafka_pids()
    completed = subprocess.run(
        [sys.executable, "-m", "seqgate.streams.cli", "demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    numeric_start = lines.index(next(line for line in lines if "--ordering numeric" in line))
    aws_start = lines.index(next(line for line in lines if "--ordering aws" in line))
    numeric = [line for line in lines[numeric_start:aws_start] if not line.startswith(("(", "=="))]
    aws = [line for line in lines[aws_start:] if not line.startswith(("(", "=="))]
    assert numeric[:6] == [
        "f queued",
        "000F duplicate",
        "e stale",
        "10 queued",
        "10 duplicate",
        "outbox records: 2",
    ]
    assert aws[:6] == [
        "f queued",
        "000F stale",
        "e stale",
        "10 stale",
        "10 stale",
        "outbox records: 1",
    ]
    assert any(line.startswith("Why they differ: ") for line in lines)
    assert "incoming/June report+final.csv" in completed.stdout
    assert "Traceback" not in completed.stderr
    assert kafka_pids() - before == set(), "the demo left a broker running"
