"""`seqgate demo`, the README's main job, as a user runs it: its own broker, then nothing left."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.kafka_helpers import wait_for

pytestmark = [pytest.mark.kafka, pytest.mark.own_broker, pytest.mark.slow]


def kafka_pids(naming: Path) -> set[int]:
    """The live Kafka brokers whose command line names ``naming`` (their data directory is
    under it): the demo's own, not those other tests run meanwhile."""
    pids = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            status = (entry / "status").read_text()
        except OSError:
            continue
        named = str(naming).encode() in cmdline
        if b"kafka.Kafka" in cmdline and named and "State:\tZ" not in status:
            pids.add(int(entry.name))
    return pids


def test_demo_prints_the_guides_outcome_and_leaves_no_process(tmp_path: Path) -> None:
    env = {
        name: value
        for name, value in os.environ.items()
        if name not in ("KAFKA_BOOTSTRAP_SERVERS", "SEQGATE_BOOTSTRAP_SERVERS")
    }
    env["TMPDIR"] = str(tmp_path)  # where the demo's throwaway broker keeps its data
    stdout, stderr = tmp_path / "stdout", tmp_path / "stderr"
    with stdout.open("w") as out, stderr.open("w") as err:
        demo = subprocess.Popen(
            [sys.executable, "-m", "seqgate.cli", "demo"], env=env, stdout=out, stderr=err
        )
        try:
            # Its broker seen running proves the check below can see it.
            wait_for(
                lambda: bool(kafka_pids(tmp_path)) or demo.poll() is not None,
                180,
                "the demo's broker to start",
            )
            seen = kafka_pids(tmp_path)
            demo.wait(300)
        finally:
            if demo.poll() is None:
                demo.kill()
    completed = subprocess.CompletedProcess(
        demo.args, demo.returncode, stdout.read_text(), stderr.read_text()
    )
    assert completed.returncode == 0, completed.stderr
    assert seen, "the demo's broker was never seen running under its TMPDIR"
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
    assert kafka_pids(tmp_path) == set(), "the demo left a broker running"
