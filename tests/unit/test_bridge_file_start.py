"""`seqgate bridge file` without a broker: Kafka is checked before any input is read, so an
unreachable broker is one line and exit 3, and the file is never opened. Moved from
tests/kafka/test_bridge_file.py: no broker (issue 22)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.environment import clean_env
from tests.support.paths import REPO


def test_an_unreachable_broker_is_exit_3_before_any_input_is_read(tmp_path: Path) -> None:
    never_read = tmp_path / "never-read.jsonl"  # does not exist: reading it would be exit 2
    done = subprocess.run(
        [
            sys.executable, "-m", "seqgate.cli", "bridge", "file", str(never_read),
            "--bootstrap-servers", "127.0.0.1:1", "--kafka-timeout", "2",
        ],
        input=b"", capture_output=True, env=clean_env(), cwd=REPO, timeout=120, check=False,
    )  # fmt: skip
    lines = done.stderr.decode("utf-8", "replace").splitlines()
    assert done.returncode == 3
    assert len(lines) == 1 and lines[0].startswith("error: Kafka at 127.0.0.1:1: "), lines
    assert done.stdout == b""
