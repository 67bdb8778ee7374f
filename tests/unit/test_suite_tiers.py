"""The suite's own machinery: the tiers (tests/support/tier.py and their selection in
tests/conftest.py), the refusal to skip quietly under CI (tests/support/required.py), the
durations report (tests/support/durations.py) and the checked helper thread."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.support import durations
from tests.support.paths import REPO
from tests.support.required import unavailable
from tests.support.threads import CheckedThread
from tests.support.tier import TierError, sized, tier_of_run


def test_the_tier_is_fast_unless_the_variable_says_soak() -> None:
    assert tier_of_run({}) == "fast"
    assert tier_of_run({"SEQGATE_TEST_TIER": ""}) == "fast"
    assert tier_of_run({"SEQGATE_TEST_TIER": " soak "}) == "soak"
    with pytest.raises(TierError, match=r"SEQGATE_TEST_TIER='slow' is not a tier: use one of"):
        tier_of_run({"SEQGATE_TEST_TIER": "slow"})


def test_sized_gives_the_value_of_the_runs_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEQGATE_TEST_TIER", "soak")
    assert sized(fast=3, soak=200) == 200
    monkeypatch.setenv("SEQGATE_TEST_TIER", "fast")
    assert sized(fast=3, soak=200) == 3


def _pytest_in(folder: Path, tier: str, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest over a throwaway folder, with the project's conftest as a plugin."""
    options = ["-p", "no:cacheprovider", "-p", "tests.conftest", "-q", "--rootdir", str(folder)]
    return subprocess.run(
        [sys.executable, "-m", "pytest", *options, *args, str(folder)],
        cwd=REPO,
        env={"SEQGATE_TEST_TIER": tier, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture
def tiered_tests(tmp_path: Path) -> Path:
    """Three tests: one unmarked, one of both tiers, one of the soak tier only."""
    (tmp_path / "test_probe.py").write_text(
        textwrap.dedent(
            """
            import pytest

            def test_unmarked():
                pass

            @pytest.mark.tier("fast", "soak")
            def test_both():
                pass

            @pytest.mark.tier("soak")
            def test_soak_only():
                pass
            """
        )
    )
    return tmp_path


def test_each_tier_runs_its_tests_and_deselects_the_others(tiered_tests: Path) -> None:
    fast = _pytest_in(tiered_tests, "fast", "-rA")
    assert fast.returncode == 0, fast.stdout + fast.stderr
    assert "2 passed, 1 deselected" in fast.stdout
    assert "PASSED" in fast.stdout and "test_soak_only" not in fast.stdout.split("deselected")[0]
    soak = _pytest_in(tiered_tests, "soak", "-rA")
    assert soak.returncode == 0, soak.stdout + soak.stderr
    assert "2 passed, 1 deselected" in soak.stdout
    assert "test_unmarked" not in soak.stdout
    assert "skipped" not in fast.stdout + soak.stdout


def test_a_tier_that_does_not_exist_is_a_usage_error(tiered_tests: Path) -> None:
    done = _pytest_in(tiered_tests, "nightly")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "SEQGATE_TEST_TIER='nightly' is not a tier: use one of fast, soak" in done.stderr


def _outcome(what: str, why: str) -> BaseException:
    """What ``unavailable`` raised (a skip and a failure are BaseExceptions)."""
    try:
        unavailable(what, why)
    except BaseException as raised:
        return raised
    raise AssertionError("unavailable() returned")


def test_a_missing_tool_skips_outside_ci_and_fails_in_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    skipped = _outcome("iptables", "not installed")
    assert isinstance(skipped, pytest.skip.Exception)
    assert str(skipped) == "no iptables: not installed"
    for value in ("true", "1", "yes"):
        monkeypatch.setenv("CI", value)
        failed = _outcome("iptables", "gone")
        assert isinstance(failed, pytest.fail.Exception), value
        assert str(failed) == "iptables is required in CI: gone"
    monkeypatch.setenv("CI", "false")
    assert isinstance(_outcome("iptables", "gone"), pytest.skip.Exception)


def test_durations_reads_node_ids_of_modules_and_classes(tmp_path: Path) -> None:
    report = tmp_path / "report.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.kafka.test_devcluster.TestReplication" name="test_a"'
        ' time="14.1"/>'
        '<testcase classname="tests.unit.test_cli" name="test_b[x-1]" time="0.5"/>'
        '<testcase classname="tests.torture.test_crash" name="test_c" time="12"/>'
        "</testsuite></testsuites>"
    )
    assert durations.durations(report) == [
        (14.1, "tests/kafka/test_devcluster.py::TestReplication::test_a"),
        (12.0, "tests/torture/test_crash.py::test_c"),
        (0.5, "tests/unit/test_cli.py::test_b[x-1]"),
    ]


def test_durations_prints_the_slowest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report = tmp_path / "report.xml"
    report.write_text(
        '<testsuite><testcase classname="tests.torture.test_crash" name="test_c" time="12"/>'
        '<testcase classname="tests.unit.test_cli" name="test_b" time="0.5"/></testsuite>'
    )
    assert durations.main(["--top", "1", str(report)]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[1:] == [
        "     12.0 s  tests/torture/test_crash.py::test_c",
        "     12.5 s  in all (2 tests)",
    ]
    assert durations.main([str(tmp_path / "none.xml")]) == 2


def test_the_recorded_durations_name_tests_that_exist() -> None:
    recorded = durations.recorded()
    assert recorded, f"{durations.RECORD} is empty or missing"
    modules = {node.split("::")[0] for node in recorded}
    assert all((REPO / module).is_file() for module in modules), modules


def test_a_checked_thread_fails_the_test_when_it_raised() -> None:
    def boom() -> None:
        raise ValueError("the feeder broke")

    thread = CheckedThread(boom, name="the feeder").start()
    with pytest.raises(AssertionError, match=r"the feeder raised ValueError\('the feeder broke'\)"):
        thread.join(10)
    slow = CheckedThread(time.sleep, 5, name="the sleeper").start()
    with pytest.raises(AssertionError, match="the sleeper did not finish within 0s"):
        slow.join(0.1)
    done: list[int] = []
    CheckedThread(done.append, 1, name="fine").start().join(10)
    assert done == [1]


def test_the_summary_line_adds_up_every_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    unit, kafka = tmp_path / "unit.xml", tmp_path / "kafka.xml"
    unit.write_text(
        '<testsuite><testcase classname="tests.unit.test_a" name="test_1" time="1"/>'
        '<testcase classname="tests.unit.test_a" name="test_2" time="1"><skipped/></testcase>'
        "</testsuite>"
    )
    kafka.write_text(
        '<testsuite><testcase classname="tests.kafka.test_b" name="test_3" time="1">'
        '<failure message="no"/></testcase>'
        '<testcase classname="tests.kafka.test_b" name="test_4" time="1"><error/></testcase>'
        '<testcase classname="tests.kafka.test_b" name="test_5" time="1"/></testsuite>'
    )
    assert durations.main(["--summary", str(unit), str(kafka)]) == 0
    assert capsys.readouterr().out == "tests: 2 passed, 2 failed, 1 skipped\n"
