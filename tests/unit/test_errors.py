"""One root for the expected errors, a family per exit code, caught once by the `seqgate`
group: the classes docs/operations.md lists under "Errors" are in the family it names, and a
command that raises one ends with one `error:` line and the family's code."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest
from click.testing import CliRunner
from seqgate_devtools.errors import BrokerError

from seqgate.cli.app import SeqgateGroup
from seqgate.runtime.errors import (
    CommandFailed,
    KafkaUnreachable,
    SeqgateError,
    UsageError,
    WorkerFatalError,
)
from seqgate.streams.errors import PolicyError
from tests.support.paths import REPO

FAMILIES: dict[str, type[SeqgateError]] = {
    "CommandFailed": CommandFailed,
    "UsageError": UsageError,
    "KafkaUnreachable": KafkaUnreachable,
}
ROOTS = (REPO / "seqgate", REPO / "devtools" / "seqgate_devtools")
# Defined outside an errors.py, with the reason in seqgate/runtime/errors.py's docstring.
ELSEWHERE = {"seqgate.runtime.partition_reader": {"PartitionReadFailed"}}


def _module_name(path: Path) -> str:
    base = path.relative_to(REPO / "devtools" if path.is_relative_to(ROOTS[1]) else REPO)
    name = ".".join(base.with_suffix("").parts)
    return name.removesuffix(".__init__")


def defined_exceptions(path: Path) -> list[type[BaseException]]:
    """The public exception classes that the module at `path` defines (not imports)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = [node.name for node in tree.body if isinstance(node, ast.ClassDef)]
    if not names:
        return []
    module = importlib.import_module(_module_name(path))
    found = [getattr(module, name) for name in names]
    return [
        cls
        for cls in found
        if inspect.isclass(cls) and issubclass(cls, BaseException) and cls.__name__[0] != "_"
    ]


def _product_modules() -> list[Path]:
    return [
        path
        for root in ROOTS
        for path in sorted(root.rglob("*.py"))
        if "_peer" not in path.parent.name and path.name != "__main__.py"
    ]


def all_exceptions() -> dict[str, list[type[BaseException]]]:
    """{module: its exception classes}, for every module of seqgate and its tools."""
    return {_module_name(path): defined_exceptions(path) for path in _product_modules()}


MEMBERS: dict[str, type[SeqgateError]] = {
    cls.__name__: cls
    for classes in all_exceptions().values()
    for cls in classes
    if issubclass(cls, SeqgateError) and cls is not SeqgateError and cls not in FAMILIES.values()
}


def documented_members() -> dict[str, list[str]]:
    """{family: [class, ...]} from the "Errors" list of docs/operations.md."""
    text = (REPO / "docs" / "operations.md").read_text()
    section = text.split("### Errors", 1)[1].split("\n## ", 1)[0]
    members: dict[str, list[str]] = {}
    for item in re.split(r"\n\* ", section)[1:]:
        family, _, rest = item.partition(" ")
        names = re.findall(r"`(\w+)`", rest.split("—", 1)[1]) if "—" in rest else []
        members[family.strip("`")] = names
    return members


def test_every_exception_is_defined_in_its_packages_errors_module() -> None:
    stray = [
        f"{module}.{cls.__name__}"
        for module, classes in all_exceptions().items()
        for cls in classes
        if not module.endswith(".errors") and cls.__name__ not in ELSEWHERE.get(module, set())
    ]
    assert stray == []
    assert len(MEMBERS) > 20  # the scan sees the product's errors


def test_each_errors_module_names_every_class_it_defines() -> None:
    """Its docstring lists its members of the families and, with the reason, the
    exceptions left outside the root."""
    for module, classes in all_exceptions().items():
        if not module.endswith(".errors"):
            continue
        doc = importlib.import_module(module).__doc__ or ""
        unnamed = [cls.__name__ for cls in classes if f"`{cls.__name__}`" not in doc]
        assert unnamed == [], module


def test_each_family_has_its_exit_code() -> None:
    assert {name: family.exit_code for name, family in FAMILIES.items()} == {
        "CommandFailed": 1,
        "UsageError": 2,
        "KafkaUnreachable": 3,
    }


def test_the_documented_classes_are_in_their_family() -> None:
    documented = documented_members()
    named = {name for family in FAMILIES for name in documented[family]}
    raised_as_themselves = {family for family in documented if family in MEMBERS}
    assert named | raised_as_themselves == set(MEMBERS)
    for family, names in documented.items():
        if family in FAMILIES:
            for name in names:
                assert issubclass(MEMBERS[name], FAMILIES[family]), (name, family)


def probe(error: SeqgateError) -> SeqgateGroup:
    group = SeqgateGroup("probe")

    @group.command("fail")
    def fail() -> None:
        raise error

    return group


@pytest.mark.parametrize(
    ("error", "code"),
    [
        (WorkerFatalError("fenced: another worker took over"), 1),
        (PolicyError("admitted_kinds", "unknown kind 'x'"), 2),
        (KafkaUnreachable("Kafka at b:1: no broker answered"), 3),
    ],
)
def test_a_command_ends_with_one_line_and_the_family_code(error: SeqgateError, code: int) -> None:
    result = CliRunner().invoke(probe(error), ["fail"])
    assert result.exit_code == code, result.output
    assert result.stderr.splitlines() == [f"error: {error.args[0]}"]
    assert result.exception is None or isinstance(result.exception, SystemExit)


def test_detail_lines_follow_the_error_line() -> None:
    error = BrokerError("the broker did not start", "last log line 1\nlast log line 2")
    result = CliRunner().invoke(probe(error), ["fail"])
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "error: the broker did not start",
        "last log line 1",
        "last log line 2",
    ]
