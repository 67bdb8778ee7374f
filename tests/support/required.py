"""What a test needs from the machine (a tool, a service, a permission) and cannot have here:
on a developer's machine the test is skipped with the reason; under CI (``$CI`` set and not
false) it fails with the reason, so that a CI run never passes by skipping it quietly."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

__all__ = ["in_ci", "unavailable"]


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def unavailable(what: str, reason: str) -> NoReturn:
    """Fail the calling test under CI, skip it elsewhere; both say ``what`` and why."""
    if in_ci():
        pytest.fail(f"{what} is required in CI: {reason}", pytrace=False)
    pytest.skip(f"no {what}: {reason}")
