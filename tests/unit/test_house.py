"""The house rules of issue 16 that a machine can check: small modules, short functions.

No module over 500 lines; no function over 80 lines, except the CLI's option
declarations (functions of `seqgate.cli` or `seqgate_devtools.cli` named ``*_options`` that
only list options). The product (seqgate/) and the development tools (devtools/) alike.
The layer contract is checked by tests/unit/test_layers.py.
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.paths import REPO

PRODUCT = REPO / "seqgate"
DEVTOOLS = REPO / "devtools" / "seqgate_devtools"
MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80


def _modules() -> list[Path]:
    return sorted([*PRODUCT.rglob("*.py"), *DEVTOOLS.rglob("*.py")])


def _is_option_declaration(module: Path, function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    in_a_cli = module.parts[:2] == ("seqgate", "cli") or module.parts[:3] == (
        "devtools",
        "seqgate_devtools",
        "cli",
    )
    return in_a_cli and function.name.endswith("_options")


def long_functions(source: str, module: Path) -> list[str]:
    """The functions over the limit in `source`, the text of `module` (relative to the
    repository)."""
    tree = ast.parse(source)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        assert node.end_lineno is not None
        length = node.end_lineno - node.lineno + 1
        if length > MAX_FUNCTION_LINES and not _is_option_declaration(module, node):
            found.append(f"{module}:{node.lineno} {node.name} ({length} lines)")
    return found


def test_the_product_and_the_tools_are_where_the_checks_look() -> None:
    modules = _modules()
    assert len([path for path in modules if path.is_relative_to(PRODUCT)]) > 100
    assert len([path for path in modules if path.is_relative_to(DEVTOOLS)]) > 40


def test_no_module_is_over_500_lines() -> None:
    too_long = [
        f"{path.relative_to(REPO)} ({count} lines)"
        for path in _modules()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert not too_long, "split these modules: " + ", ".join(too_long)


def test_no_function_is_over_80_lines() -> None:
    too_long = [
        entry
        for path in _modules()
        for entry in long_functions(path.read_text(encoding="utf-8"), path.relative_to(REPO))
    ]
    assert not too_long, "split these functions: " + ", ".join(too_long)


def test_the_function_check_sees_a_long_function_and_exempts_only_cli_options() -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    short = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 1))
    source = (
        f"def long_options():\n{body}\n\n\ndef long_command():\n{body}\n\n\ndef fits():\n{short}\n"
    )
    in_cli = long_functions(source, Path("seqgate/cli/probe.py"))
    in_tools_cli = long_functions(source, Path("devtools/seqgate_devtools/cli/probe.py"))
    elsewhere = long_functions(source, Path("seqgate/streams/worker/probe.py"))
    assert [entry.split(" ")[1] for entry in in_cli] == ["long_command"]
    assert [entry.split(" ")[1] for entry in in_tools_cli] == ["long_command"]
    assert [entry.split(" ")[1] for entry in elsewhere] == ["long_options", "long_command"]
