"""What each wheel carries: seqgate's runtime wheel holds one import name, `seqgate`,
typed, with its data files, and nothing of the development tools (the bench, the
development broker and cluster, the peers' sources, the demo); the development tools'
wheel holds those, and adds its three commands to `seqgate` by entry points."""

from __future__ import annotations

import configparser
import re
import zipfile
from pathlib import Path

import pytest

from tests.support.wheels import Wheels

pytestmark = pytest.mark.slow

# Any of these in a file name of seqgate's wheel is a development tool that leaked in.
DEVELOPMENT_MARKS = ("devtools", "bench", "broker", "peer", "demo", ".java", "pom.xml", "log4j")


def _names(wheel: Path) -> list[str]:
    return zipfile.ZipFile(wheel).namelist()


def _entry_points(wheel: Path) -> configparser.ConfigParser:
    archive = zipfile.ZipFile(wheel)
    (path,) = [name for name in archive.namelist() if name.endswith(".dist-info/entry_points.txt")]
    parser = configparser.ConfigParser()
    parser.read_string(archive.read(path).decode())
    return parser


def test_the_runtime_wheel_holds_the_seqgate_package_typed_with_its_data(wheels: Wheels) -> None:
    names = _names(wheels.seqgate)
    top_level = {name.split("/")[0] for name in names if not name.startswith("seqgate-")}
    assert top_level == {"seqgate"}
    assert "seqgate/py.typed" in names
    assert "seqgate/schemas/object_event.avsc" in names
    assert "seqgate/__main__.py" in names  # python -m seqgate
    assert not [name for name in names if name.startswith("seqgate/tests")]


def test_the_runtime_wheel_carries_no_development_tool(wheels: Wheels) -> None:
    names = _names(wheels.seqgate)
    leaked = [name for name in names if any(mark in name for mark in DEVELOPMENT_MARKS)]
    assert leaked == []
    assert len(names) > 150  # the check looked at the product itself
    commands = _entry_points(wheels.seqgate)
    assert dict(commands["console_scripts"]) == {"seqgate": "seqgate.cli:main"}
    assert not commands.has_section("seqgate.commands")


def test_the_devtools_wheel_holds_the_tools_their_data_and_their_commands(wheels: Wheels) -> None:
    names = _names(wheels.devtools)
    top_level = {name.split("/")[0] for name in names if ".dist-info/" not in name}
    assert top_level == {"seqgate_devtools"}
    peers = "seqgate_devtools/bench/peers/"
    for data in (
        "seqgate_devtools/broker/pom.xml",
        "seqgate_devtools/broker/log4j2.xml",
        f"{peers}kafka_streams_peer/pom.xml",
        f"{peers}kafka_streams_peer/src/main/java/seqgate/peer/kstreams/SequencerPeer.java",
        f"{peers}quix_peer/app.py",
        "seqgate_devtools/cli/bench.py",
        "seqgate_devtools/demo.py",
    ):
        assert data in names, data
    added = dict(_entry_points(wheels.devtools)["seqgate.commands"])
    assert added == {
        "bench": "seqgate_devtools.cli.bench:bench",
        "broker": "seqgate_devtools.cli.broker:broker",
        "demo": "seqgate_devtools.cli.demo:demo",
    }


def test_the_builds_print_no_warning_and_the_wheel_carries_its_licence(wheels: Wheels) -> None:
    """Current packaging metadata (an SPDX licence expression and its file): setuptools warns
    about nothing, and the licence travels in the wheel."""
    assert not re.search(r"(?i)deprecat|warning", wheels.output), wheels.output[-3000:]
    names = _names(wheels.seqgate)
    assert "seqgate-0.1.0.dist-info/licenses/LICENSE" in names
    metadata = zipfile.ZipFile(wheels.seqgate).read("seqgate-0.1.0.dist-info/METADATA").decode()
    assert "License-Expression: Apache-2.0" in metadata.splitlines()
