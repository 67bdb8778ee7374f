"""Running a measured stage (`seqgate_devtools.bench.subproc`) in its own process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

from seqgate.runtime.kafka_settings import KafkaSettings

__all__ = ["finish_stage_process", "run_stage", "run_stage_process", "stage_timeout"]


def run_stage_process(spec: dict[str, Any]) -> subprocess.Popen[bytes]:
    """Start `seqgate_devtools.bench.subproc` with `spec`; stdin stays open (closing it
    stops an
    open-ended stage). The Kafka settings go in the child's environment, not on its
    command line, where other users could read a password."""
    kafka: KafkaSettings = spec["kafka"]
    public = {name: value for name, value in spec.items() if name != "kafka"}
    return subprocess.Popen(
        [sys.executable, "-m", "seqgate_devtools.bench.subproc", json.dumps(public)],
        env={**os.environ, **kafka.environment()},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )


def stage_timeout(events: int) -> float:
    """How long one measured stage over `events` events may take."""
    return 600 + events / 200


def run_stage(stage: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run one stage process to its end; its JSON result."""
    return finish_stage_process(run_stage_process(stage), timeout)


def finish_stage_process(process: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise RuntimeError(f"a benchmark stage did not finish within {timeout:.0f} s") from None
    if process.returncode != 0:
        raise RuntimeError(f"a benchmark stage failed (exit {process.returncode})")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result
