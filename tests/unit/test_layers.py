"""The layer contract of pyproject.toml ([tool.importlinter]) holds: `lint-imports` keeps it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def test_every_import_follows_the_layers() -> None:
    # PYTHONPATH: the checkout under test, not whichever seqgate the interpreter has installed.
    paths = [str(REPO), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
