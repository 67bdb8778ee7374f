"""The topic commands run in process, without SEQGATE_* from the shell, and their error line."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping

import pytest
from click.testing import CliRunner, Result

from seqgate.cli import cli


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No SEQGATE_* from the caller's shell; root logging restored after the CLI ran."""
    for name in list(os.environ):
        if name.startswith("SEQGATE_"):
            monkeypatch.delenv(name)
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def invoke(args: list[str], env: Mapping[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, args, env=env, prog_name="seqgate")


def one_error_line(result: Result, code: int, *mentions: str) -> str:
    assert result.exit_code == code, (result.stdout, result.stderr, result.exception)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    for text in mentions:
        assert text in lines[0], f"{text!r} not in {lines[0]!r}"
    return lines[0]
