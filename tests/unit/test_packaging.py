"""The wheel installs one import name, `seqgate`, typed, with its data files."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.support.paths import REPO


def test_the_wheel_holds_only_the_seqgate_package_with_py_typed_and_its_data(
    tmp_path: Path,
) -> None:
    # Built from a copy: setuptools reuses a checkout's build/ directory, whose leftovers
    # would be packed too.
    source = tmp_path / "source"
    ignored = shutil.ignore_patterns(".git", ".venv", ".*cache", "build", "*.egg-info", "__py*")
    shutil.copytree(REPO, source, ignore=ignored)
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"]
    build = subprocess.run(
        [*pip_wheel, "--wheel-dir", str(tmp_path), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr[-3000:]
    (wheel,) = tmp_path.glob("seqgate-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {name.split("/")[0] for name in names if not name.startswith("seqgate-")}
    assert top_level == {"seqgate"}
    assert "seqgate/py.typed" in names
    assert "seqgate/schemas/object_event.avsc" in names
    assert "seqgate/streams/devtools/broker/pom.xml" in names
    assert not [name for name in names if name.startswith("seqgate/tests")]
