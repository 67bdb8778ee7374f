"""The image's dependency set, without a Docker engine: seqgate's runtime wheel installed
into a fresh venv (the real resolution from the package index, pip's cache reused) runs its
CLI, carries neither matplotlib nor numpy nor the development tools, and answers the
development commands with one line saying where they come from. With the development
tools' wheel beside it (without their chart extra), the bench runs and its chart asks for
the extra in one line, before any broker starts."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.wheels import Wheels

pytestmark = pytest.mark.slow

NEEDS_CHART_EXTRA = (
    "the chart needs the development tools' chart extra: pip install './devtools[chart]'"
)


def _venv(root: Path, *wheels: Path) -> Path:
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    install = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", *map(str, wheels)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    return venv


@pytest.fixture(scope="module")
def runtime_venv(tmp_path_factory: pytest.TempPathFactory, wheels: Wheels) -> Path:
    """seqgate's wheel alone: the runtime dependencies only."""
    return _venv(tmp_path_factory.mktemp("runtime"), wheels.seqgate)


@pytest.fixture(scope="module")
def devtools_venv(tmp_path_factory: pytest.TempPathFactory, wheels: Wheels) -> Path:
    """seqgate's wheel and the development tools' (no chart extra)."""
    return _venv(tmp_path_factory.mktemp("devtools"), wheels.seqgate, wheels.devtools)


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


def _found(venv: Path, *modules: str) -> list[str]:
    probe = "import importlib.util as u, sys; print(*[m for m in sys.argv[1:] if u.find_spec(m)])"
    python = str(venv / "bin" / "python")
    found = subprocess.run(
        [python, "-c", probe, *modules], capture_output=True, text=True, check=True
    )
    return found.stdout.split()


def test_the_runtime_set_has_no_plotting_library_nor_development_tool(runtime_venv: Path) -> None:
    assert _found(runtime_venv, "matplotlib", "numpy", "seqgate_devtools") == []
    # ... while the runtime dependencies themselves are there, importable.
    imports = "import confluent_kafka, rocksdict, fastavro, msgspec, psycopg, aiohttp, boto3"
    subprocess.run([str(runtime_venv / "bin" / "python"), "-c", imports], check=True, timeout=120)


def test_the_runtime_cli_runs_and_python_m_seqgate_is_the_same(
    runtime_venv: Path, tmp_path: Path
) -> None:
    for args in (["--help"], ["dispatch", "--help"], ["worker", "--help"]):
        done = run(runtime_venv, *args, cwd=tmp_path)
        assert done.returncode == 0, (args, done.stderr[-2000:])
    python = str(runtime_venv / "bin" / "python")
    by_module = subprocess.run(
        [python, "-m", "seqgate", "--version"], capture_output=True, text=True, check=False
    )
    assert by_module.returncode == 0, by_module.stderr
    assert by_module.stdout.split()[-1] == "0.1.0"


@pytest.mark.parametrize(
    "args",
    [("bench", "--quick"), ("bench", "--help"), ("broker", "up"), ("demo",)],
)
def test_a_development_command_without_the_tools_is_one_line_and_exit_2(
    runtime_venv: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    done = run(runtime_venv, *args, cwd=tmp_path)
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.splitlines() == [
        f"error: `seqgate {args[0]}` is one of the development tools (seqgate-devtools), which"
        " are not installed here; from a clone of the repository: pip install -e devtools"
    ]
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no broker's files, no report


def test_with_the_tools_the_cli_lists_and_runs_their_commands(
    devtools_venv: Path, tmp_path: Path
) -> None:
    listed = run(devtools_venv, "--help", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "Measure the processor against its limit" in listed.stdout
    assert "Not installed" not in listed.stdout
    for command in ("bench", "broker", "demo"):
        done = run(devtools_venv, command, "--help", cwd=tmp_path)
        assert done.returncode == 0, (command, done.stderr[-2000:])
    assert _found(devtools_venv, "matplotlib") == []


def test_a_chart_asked_for_without_the_extra_is_one_line_before_any_broker(
    devtools_venv: Path, tmp_path: Path
) -> None:
    done = run(devtools_venv, "bench", "--quick", "--chart", "x.png", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: --chart x.png: {NEEDS_CHART_EXTRA}"]
    assert done.stdout == ""
    assert list(tmp_path.iterdir()) == []  # no broker's files, no report


def test_the_default_chart_does_not_stop_the_bench_without_the_extra(
    devtools_venv: Path, tmp_path: Path
) -> None:
    # Past the chart check, the bench goes on to its broker: here an address where none
    # answers, so it ends on that (exit 3), not on the chart.
    args = ("bench", "--quick", "--bootstrap-servers", "127.0.0.1:1", "--kafka-timeout", "1")
    done = run(devtools_venv, *args, cwd=tmp_path)
    assert done.returncode == 3, done.stderr[-2000:]
    assert NEEDS_CHART_EXTRA not in done.stderr
