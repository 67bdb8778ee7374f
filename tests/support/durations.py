"""Per-test durations from the JUnit XML that ``scripts/test.sh`` and ``scripts/soak.sh``
write under ``build/test-reports/`` (pytest's ``--junitxml``: each test's setup, call and
teardown added up).

    python -m tests.support.durations build/test-reports/*.xml            # every test
    python -m tests.support.durations --top 20 build/test-reports/*.xml   # the 20 slowest
    python -m tests.support.durations --record build/test-reports/kafka.xml
    python -m tests.support.durations --summary build/test-reports/unit.xml …

Prints, slowest first, the seconds and the test's node id, then the total; docs/testing.md's
table of the most expensive tests is made with it. ``--record`` writes the seconds of the
broker tests into ``tests/durations.json``, from which tests/conftest.py orders the fast
tier's work for pytest-xdist, longest first (a test it does not list counts as
``UNKNOWN_S``). ``--summary`` prints only the closing line of several runs together:
``tests: N passed, N failed, N skipped`` (errors count as failed).
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

__all__ = ["RECORD", "UNKNOWN_S", "durations", "main", "outcomes", "recorded"]

ROOT = Path(__file__).resolve().parents[2]
RECORD = ROOT / "tests" / "durations.json"
UNKNOWN_S = 5.0  # a broker test not in the record yet


def _node_id(classname: str, name: str) -> str:
    """pytest's node id of a JUnit test case: its classname is the module's dotted path,
    then the classes the test is in (``tests.kafka.test_x.TestY`` → ``tests/kafka/test_x.py
    ::TestY``)."""
    parts = classname.split(".")
    for end in range(len(parts), 0, -1):
        module = "/".join(parts[:end]) + ".py"
        if (ROOT / module).is_file():
            return "::".join([module, *parts[end:], name])
    return "::".join([*parts, name])


def durations(report: Path) -> list[tuple[float, str]]:
    """(seconds, node id) of every test case in a JUnit XML report, slowest first."""
    found = []
    for case in ET.parse(report).getroot().iter("testcase"):
        node = _node_id(case.get("classname", ""), case.get("name", ""))
        found.append((float(case.get("time") or 0.0), node))
    return sorted(found, reverse=True)


def outcomes(report: Path) -> tuple[int, int, int]:
    """(passed, failed or errored, skipped) test cases of a JUnit XML report."""
    passed = failed = skipped = 0
    for case in ET.parse(report).getroot().iter("testcase"):
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped


def recorded() -> dict[str, float]:
    """The recorded seconds by node id (empty when there is no record)."""
    try:
        loaded = json.loads(RECORD.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in loaded.items()} if isinstance(loaded, dict) else {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=0, help="only the N slowest (0: all)")
    parser.add_argument(
        "--record", action="store_true", help=f"write the broker tests' seconds to {RECORD}"
    )
    parser.add_argument(
        "--summary", action="store_true", help="only the closing line: passed, failed, skipped"
    )
    args = parser.parse_args(argv)
    every: list[tuple[float, str]] = []
    for report in args.reports:
        if not report.is_file():
            print(f"durations: {report} does not exist", file=sys.stderr)
            return 2
        every.extend(durations(report))
    if args.summary:
        counts = [outcomes(report) for report in args.reports]
        passed, failed, skipped = (sum(column) for column in zip(*counts, strict=True))
        print(f"tests: {passed} passed, {failed} failed, {skipped} skipped")
        return 0
    every.sort(reverse=True)
    shown = every[: args.top] if args.top > 0 else every
    title = f"the {len(shown)} slowest of {len(every)} tests" if args.top else "every test"
    print(f"== {title} ({', '.join(str(r) for r in args.reports)})")
    for seconds, node in shown:
        print(f"{seconds:9.1f} s  {node}")
    print(f"{sum(s for s, _ in every):9.1f} s  in all ({len(every)} tests)")
    if args.record:
        kept = {node: round(s, 1) for s, node in every if not node.startswith("tests/unit/")}
        RECORD.write_text(json.dumps(dict(sorted(kept.items())), indent=0) + "\n")
        print(f"recorded {len(kept)} broker tests' seconds in {RECORD}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
