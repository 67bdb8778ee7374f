"""`scripts/test.sh` (what `.ci/run` runs) refuses, in CI, the switch that would turn every
Kafka test into a skip and the run into a pass."""

from __future__ import annotations

import subprocess

from tests.support.environment import clean_env
from tests.support.paths import REPO


def test_ci_refuses_to_skip_the_kafka_tests() -> None:
    env = {**clean_env(), "CI": "true", "SEQGATE_ALLOW_NO_KAFKA": "1"}
    result = subprocess.run(
        ["bash", "scripts/test.sh"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "SEQGATE_ALLOW_NO_KAFKA=1 is refused in CI" in result.stderr
    assert "== ruff" not in result.stdout  # refused before anything is installed or run
