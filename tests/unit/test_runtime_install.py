"""The image's dependency set, without a Docker engine: seqgate installed with no extras
into a fresh venv (the real resolution from the package index, pip's cache reused) runs its
CLI, and carries neither matplotlib nor numpy; the bench's chart then asks for the extra
in one line, before any broker starts."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.slow

NEEDS_BENCH_EXTRA = "the chart needs the bench extra: pip install 'seqgate[bench]'"


@pytest.fixture(scope="module")
def runtime_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with `pip install <a copy of this tree>`: the runtime dependencies only."""
    root = tmp_path_factory.mktemp("runtime")
    # A copy: building in the checkout would leave build/ and egg-info behind.
    source = root / "source"
    ignored = shutil.ignore_patterns(".git", ".venv", ".*cache", "build", "*.egg-info", "__py*")
    shutil.copytree(REPO, source, ignore=ignored)
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", str(source)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    return venv


def run(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SEQGATE_", "KAFKA_"))}
    return subprocess.run(
        [str(venv / "bin" / "seqgate"), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_the_runtime_set_has_no_plotting_libraries(runtime_venv: Path) -> None:
    python = str(runtime_venv / "bin" / "python")
    probe = (
        "import importlib.util as u; print([m for m in ('matplotlib', 'numpy') if u.find_spec(m)])"
    )
    found = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=True)
    assert found.stdout.strip() == "[]"
    # ... while the runtime dependencies themselves are there, importable.
    imports = "import confluent_kafka, rocksdict, fastavro, msgspec, psycopg, aiohttp, boto3"
    subprocess.run([python, "-c", imports], check=True, timeout=120)


def test_the_cli_and_the_bench_help_run_without_the_bench_extra(
    runtime_venv: Path, tmp_path: Path
) -> None:
    for args in (["--help"], ["bench", "--help"], ["dispatch", "--help"], ["worker", "--help"]):
        done = run(runtime_venv, *args, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr[-2000:])


def test_a_chart_asked_for_without_the_extra_is_one_line_before_any_broker(
    runtime_venv: Path, tmp_path: Path
) -> None:
    done = run(runtime_venv, "bench", "--quick", "--chart", "x.png", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: --chart x.png: {NEEDS_BENCH_EXTRA}"]
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no broker's files, no report


def test_the_default_chart_does_not_stop_the_bench_without_the_extra(
    runtime_venv: Path, tmp_path: Path
) -> None:
    # Past the chart check, the bench goes on to its broker: here an address where none
    # answers, so it ends on that (exit 3), not on the chart.
    args = ("bench", "--quick", "--bootstrap-servers", "127.0.0.1:1", "--kafka-timeout", "1")
    done = run(runtime_venv, *args, cwd=tmp_path)
    assert done.returncode == 3, done.stderr[-2000:]
    assert NEEDS_BENCH_EXTRA not in done.stderr
