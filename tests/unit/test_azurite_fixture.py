"""The Azurite fixture's refusals: without npm, or when npm fails, skip here, fail in CI."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.azurite import azurite_blob


@pytest.fixture
def bare_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache and a PATH with nothing but what the test puts in `bin`."""
    tools = tmp_path / "bin"
    tools.mkdir()
    monkeypatch.setenv("SEQGATE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.delenv("CI", raising=False)
    return tools


def _failing_npm(tools: Path) -> None:
    npm = tools / "npm"
    npm.write_text("#!/bin/sh\necho 'npm error 404 Not Found - azurite' >&2\nexit 1\n")
    npm.chmod(0o755)


def _outcome() -> BaseException:
    """What entering the fixture raised (a skip or a failure are BaseExceptions)."""
    try:
        with azurite_blob():
            pass
    except BaseException as raised:
        return raised
    raise AssertionError("azurite_blob() started without npm")


def test_without_npm_it_skips_saying_so(bare_path: Path) -> None:
    outcome = _outcome()
    assert isinstance(outcome, pytest.skip.Exception)
    assert "npm is not on the PATH" in str(outcome)


def test_without_npm_in_ci_it_fails_saying_so(
    bare_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CI", "true")
    outcome = _outcome()
    assert isinstance(outcome, pytest.fail.Exception)
    assert "npm is not on the PATH" in str(outcome)


def test_a_failed_install_fails_in_ci_with_npms_words(
    bare_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _failing_npm(bare_path)
    monkeypatch.setenv("CI", "1")
    outcome = _outcome()
    assert isinstance(outcome, pytest.fail.Exception)
    assert "exited 1: npm error 404" in str(outcome)


def test_a_failed_install_skips_outside_ci(bare_path: Path) -> None:
    _failing_npm(bare_path)
    outcome = _outcome()
    assert isinstance(outcome, pytest.skip.Exception)
    assert "exited 1: npm error 404" in str(outcome)
