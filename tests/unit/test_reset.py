"""`seqgate reset` (issue 8, part 1): the pure planning, without a broker: option parsing, the
offsets plan, the state diff, the refusal message (against the real broker, with real
processes: tests/kafka/test_reset.py).
"""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from seqgate.cli import cli
from seqgate.streams.errors import ResetError
from seqgate.streams.tools.inspect import (
    GroupDescription,
    GroupMember,
)
from seqgate.streams.tools.reset_plan import (
    OffsetTarget,
    TargetKind,
    active_members_message,
    parse_datetime,
    parse_offsets,
    plan_offsets,
    state_diff,
    state_mode,
    target_from_options,
)

# ---- pure planning ---------------------------------------------------------------------------


def test_parse_offsets() -> None:
    assert parse_offsets("0:10, 2:0") == {0: 10, 2: 0}
    for bad in ("0=10", "a:1", "0:-1", "", "1:2,1:3"):
        with pytest.raises(ResetError, match="--to-offsets"):
            parse_offsets(bad)


def test_parse_datetime_defaults_to_utc() -> None:
    assert parse_datetime("2024-05-01T12:00:00Z") == 1714564800000
    assert parse_datetime("2024-05-01T12:00:00") == 1714564800000
    assert parse_datetime("2024-05-01T14:00:00+02:00") == 1714564800000
    with pytest.raises(ResetError, match="--to-datetime yesterday: not an ISO 8601"):
        parse_datetime("yesterday")


def test_exactly_one_target_and_an_explicit_state() -> None:
    with pytest.raises(ResetError, match="choose exactly one of"):
        target_from_options(False, None, None)
    with pytest.raises(ResetError, match=r"got --to-earliest, --to-offsets"):
        target_from_options(True, None, "0:1")
    assert target_from_options(True, None, None).kind is TargetKind.EARLIEST
    with pytest.raises(ResetError, match="--state is required"):
        state_mode(None)
    with pytest.raises(ResetError, match="--state keep: use --state empty or --state rebuild"):
        state_mode("keep")


def test_plan_offsets() -> None:
    partitions = [0, 1, 2]
    committed: dict[int, int | None] = {0: 50, 1: None, 2: 7}
    earliest, end = {0: 0, 1: 5, 2: 0}, {0: 60, 1: 9, 2: 7}
    plan = plan_offsets(OffsetTarget(TargetKind.EARLIEST), partitions, committed, earliest, end)
    assert [(p.partition, p.committed, p.new_offset) for p in plan] == [
        (0, 50, 0),
        (1, None, 5),
        (2, 7, 0),
    ]
    by_time = {0: 30, 1: -1, 2: 3}
    target = OffsetTarget(TargetKind.DATETIME, timestamp_ms=1)
    plan = plan_offsets(target, partitions, committed, earliest, end, by_time)
    assert [p.new_offset for p in plan] == [30, 9, 3]  # no record at or after: the end
    target = OffsetTarget(TargetKind.OFFSETS, offsets={1: 6})
    plan = plan_offsets(target, partitions, committed, earliest, end)
    assert [(p.partition, p.new_offset) for p in plan] == [(1, 6)]  # the others untouched
    with pytest.raises(ResetError, match=r"offset 4 of partition 1 is outside 5\.\.9"):
        plan_offsets(
            OffsetTarget(TargetKind.OFFSETS, offsets={1: 4}), partitions, committed, earliest, end
        )
    with pytest.raises(ResetError, match="the input has no partition 3"):
        plan_offsets(
            OffsetTarget(TargetKind.OFFSETS, offsets={3: 0}), partitions, committed, earliest, end
        )


def test_state_diff_writes_changes_and_tombstones_the_rest() -> None:
    current = {b"a": b"1", b"b": b"2", b"c": b"3"}
    wanted = {b"a": b"1", b"b": b"9", b"d": b"4"}
    assert state_diff(current, wanted) == {b"b": b"9", b"c": None, b"d": b"4"}
    assert state_diff(current, {}) == {b"a": None, b"b": None, b"c": None}
    assert list(state_diff({}, {b"z": b"1", b"a": b"2"})) == [b"a", b"z"]  # key order


def test_refusal_names_the_members_and_the_fix() -> None:
    member = GroupMember("w1-abc", "w1", "rdkafka", "/10.0.0.7", (0, 1))
    text = active_members_message(GroupDescription("app", "stable", (member,)))
    assert "w1 (client rdkafka, host /10.0.0.7)" in text
    assert "stop the workers first" in text and "--session-timeout-ms" in text


@pytest.mark.parametrize(
    ("args", "mentions"),
    [
        (["--to-earliest"], ["--state is required"]),
        (["--to-earliest", "--state", "keep"], ["--state keep"]),
        (["--state", "empty"], ["--to-earliest, --to-datetime, --to-offsets"]),
        (["--to-offsets", "0=5", "--state", "empty"], ["--to-offsets 0=5", "PARTITION:OFFSET"]),
        (["--to-datetime", "soon", "--state", "empty"], ["--to-datetime soon", "ISO 8601"]),
    ],
)
def test_option_errors_are_one_line(args: list[str], mentions: list[str]) -> None:
    # 127.0.0.1:1 answers nothing: the options are checked before any connection.
    result = CliRunner().invoke(
        cli, ["reset", "--bootstrap-servers", "127.0.0.1:1", *args], prog_name="seqgate"
    )
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    for text in mentions:
        assert text in lines[0]
