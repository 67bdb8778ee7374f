"""A pytest plugin for mutation runs only (``-p tests.support.mutmut_pytest9``, in pyproject.toml's
[tool.mutmut]): mutmut 3.7 records which test calls which function under ``Item._nodeid``,
which pytest 9 no longer has. mutmut 3.8 reads ``nodeid`` but needs click>=8.4, and
faust-streaming (the faust extra, installed into the same .venv) caps click below 8.4."""

from __future__ import annotations

from _pytest.nodes import Node


def _nodeid(node: Node) -> str:
    return node.nodeid


if not hasattr(Node, "_nodeid"):
    Node._nodeid = property(_nodeid)  # type: ignore[attr-defined]
