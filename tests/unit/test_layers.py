"""The import contracts of pyproject.toml ([tool.importlinter]) hold (`lint-imports` keeps
them), and each can fail: a copy of the tree with one forbidden import per contract, each
aimed at that contract alone, breaks every one of them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

# One import per contract that the contract forbids, and the module it is added to.
BREAKS = {
    "the engine: development tools": ("seqgate/runtime/logs.py", "import seqgate.streams.worker"),
    "the bridge: development tools": (
        "seqgate/runtime/metrics.py",
        "import seqgate.connectors.publish",
    ),
    "the bridge does not use the engine": (
        "seqgate/connectors/publish/__init__.py",
        "import seqgate.streams.state",
    ),
    "the engine's rules do not use the bridge": (
        "seqgate/streams/rules/__init__.py",
        "import seqgate.connectors.parsers",
    ),
    "parsers and rules are pure": ("seqgate/connectors/parsers/__init__.py", "import boto3"),
    "webhook authentication does not depend": (
        "seqgate/connectors/auth/__init__.py",
        "import seqgate.connectors.sources",
    ),
}


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH: the tree under test, not whichever seqgate the interpreter has installed.
    paths = [str(root), str(root / "devtools")]
    paths += filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_every_import_follows_the_contracts() -> None:
    done = _lint_imports(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"Contracts: {len(BREAKS)} kept, 0 broken." in done.stdout


def test_each_contract_breaks_on_the_import_it_forbids(tmp_path: Path) -> None:
    ignored = shutil.ignore_patterns("__pycache__", "*.so", "peers")
    shutil.copytree(REPO / "seqgate", tmp_path / "seqgate", ignore=ignored)
    shutil.copytree(REPO / "devtools", tmp_path / "devtools", ignore=ignored)
    shutil.copy(REPO / "pyproject.toml", tmp_path)
    for module, line in BREAKS.values():
        path = tmp_path / module
        path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # noqa\n")
    done = _lint_imports(tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"Contracts: 0 kept, {len(BREAKS)} broken." in done.stdout, done.stdout
