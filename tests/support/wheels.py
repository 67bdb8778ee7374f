"""The two wheels of the repository, built as a user would (`pip wheel`): seqgate's from
the root and the development tools' from devtools/, for the tests of what each carries."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

from tests.support.paths import REPO


class Wheels(NamedTuple):
    seqgate: Path
    devtools: Path
    output: str
    """What the builds printed (pip and the build backends), stdout and stderr."""


def build_wheels(directory: Path) -> Wheels:
    """Build both wheels into `directory` from a copy of the checkout (setuptools reuses a
    checkout's build/ directory, whose leftovers would be packed too)."""
    source = directory / "source"
    ignored = shutil.ignore_patterns(".git", ".venv", ".*cache", "build", "*.egg-info", "__py*")
    shutil.copytree(REPO, source, ignore=ignored)
    wheels = directory / "wheels"
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"]
    build = subprocess.run(
        [*pip_wheel, "--wheel-dir", str(wheels), str(source), str(source / "devtools")],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (seqgate,) = wheels.glob("seqgate-*.whl")
    (devtools,) = wheels.glob("seqgate_devtools-*.whl")
    return Wheels(seqgate, devtools, build.stdout + build.stderr)
