"""The Grafana dashboard in deploy/grafana and the metric names its PromQL queries read."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support.paths import REPO

DASHBOARD = REPO / "deploy" / "grafana" / "seqgate.json"

_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_MATCHERS = re.compile(r"\{[^{}]*\}")
_RANGES = re.compile(r"\[[^\[\]]*\]")
_GROUPING = re.compile(
    r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)", re.IGNORECASE
)
# An identifier that does not continue a number (0.99, 1e3) or a duration (5m).
_IDENTIFIER = re.compile(r"(?<![\w.$])[a-zA-Z_:][a-zA-Z0-9_:]*")
_KEYWORDS = frozenset(
    {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan", "start", "end"}
)


def metric_names(expr: str) -> set[str]:
    """The series names a PromQL expression selects (functions, aggregations, label
    names, ranges and keywords left out): `_bucket`/`_sum`/`_count` stay as written."""
    text = _STRINGS.sub(" ", expr)
    text = _MATCHERS.sub(" ", text)
    text = _RANGES.sub(" ", text)
    text = _GROUPING.sub(" ", text)
    names = set()
    for match in _IDENTIFIER.finditer(text):
        if text[match.end() :].lstrip().startswith("("):
            continue  # a function or an aggregation
        if match.group().lower() in _KEYWORDS:
            continue
        names.add(match.group())
    return names


def load(path: Path = DASHBOARD) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside collapsed rows included."""
    for panel in dashboard.get("panels", []):
        yield panel
        yield from panel.get("panels", [])


def expressions(dashboard: dict[str, Any]) -> list[str]:
    """The PromQL expression of every panel's every target."""
    return [target["expr"] for panel in panels(dashboard) for target in panel.get("targets", [])]
