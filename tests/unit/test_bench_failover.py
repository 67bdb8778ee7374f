"""`seqgate bench --failover`: its pure parts (the stage against a real broker is in
tests/kafka/test_bench_failover.py)."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest
from seqgate_devtools.bench.failover import FailoverSettings
from seqgate_devtools.bench.failover_group import WorkerLog, WorkerPlan
from seqgate_devtools.bench.failover_report import (
    Move,
    Scenario,
    ScenarioResult,
    Serving,
    choose_victim,
    failover_json,
    failover_table,
    failover_targets,
    log_entry,
    moves_after,
    parse_identity_counts,
    serving_of,
    standby_caught_up,
)

from seqgate.runtime.kafka_settings import KafkaSettings

KILL_AT = 1_000.0


def _serving_line(partition: int, assigned_at: float, serving_at: float, **extra: object) -> str:
    """A "partition serving" line as the worker's JSON formatter writes it."""
    fields = {
        "ts": serving_at,
        "level": "info",
        "logger": "seqgate.streams.worker.takeover",
        "msg": "partition serving",
        "partition": partition,
        "assigned_at": assigned_at,
        "serving_at": serving_at,
        "restore_s": 0.25,
        "restored": 40,
        "standby": True,
        **extra,
    }
    return json.dumps(fields)


def _servings(*lines: str) -> list[Serving]:
    found = [serving_of(entry) for entry in map(log_entry, lines) if entry is not None]
    return [serving for serving in found if serving is not None]


# ---- the log lines -------------------------------------------------------------------------------


def test_a_serving_line_gives_its_fields() -> None:
    (serving,) = _servings(_serving_line(3, 1_006.5, 1_007.0))
    assert serving == Serving(3, 1_006.5, 1_007.0, 0.25, 40, True)


def test_the_contracts_message_field_is_read_too() -> None:
    line = _serving_line(1, 1.0, 2.0, standby=False)
    entry = json.loads(line)
    entry["message"] = entry.pop("msg")
    (serving,) = _servings(json.dumps(entry))
    assert serving.partition == 1 and serving.standby is False


def test_other_lines_and_noise_are_not_serving_lines() -> None:
    assert log_entry("%3|1700000000.000|FAIL|rdkafka#producer-1| connection refused") is None
    assert log_entry('{"msg": "partition serv') is None  # cut short by a SIGKILL
    assert log_entry("[1, 2]") is None
    assert serving_of({"msg": "assigned", "partition": 2, "restored": 10}) is None


def test_a_serving_line_without_its_instants_is_an_error() -> None:
    with pytest.raises(ValueError, match="without its fields"):
        serving_of({"msg": "partition serving", "partition": 2})


def test_standby_caught_up_collects_the_partitions() -> None:
    entries: list[dict[str, object]] = [
        {"msg": "standby added", "partition": 0},
        {"msg": "standby caught up", "partition": 4, "offset": 12},
        {"message": "standby caught up", "partition": 5},
        {"msg": "standby caught up"},  # no partition: ignored
    ]
    assert standby_caught_up(entries) == {4, 5}


def test_the_worker_log_is_read_as_it_grows(tmp_path: Path) -> None:
    path = tmp_path / "stderr.jsonl"
    log = WorkerLog(path)
    assert log.read() == []  # not written yet
    first = _serving_line(0, 1.0, 2.0)
    path.write_text(first + "\n" + first[:20])  # the second line is still being written
    assert len(log.read()) == 1
    with path.open("a") as file:
        file.write(first[20:] + "\nnot json\n")
    assert [e["partition"] for e in log.read()] == [0, 0]


# ---- the figures ---------------------------------------------------------------------------------


def test_detection_takeover_and_total_are_timed_from_the_kill() -> None:
    servings = _servings(_serving_line(2, 1_006.2, 1_006.9))
    move = moves_after(servings, {2}, KILL_AT)[2]
    assert move.detection_s == pytest.approx(6.2)
    assert move.takeover_s == pytest.approx(0.7)
    assert move.total_s == pytest.approx(6.9)
    assert move.restored == 40 and move.standby is True


def test_only_the_victims_partitions_after_the_kill_are_moves() -> None:
    servings = _servings(
        _serving_line(0, 990.0, 991.0),  # the survivor's own partition at the start
        _serving_line(3, 989.0, 990.0),  # a moved partition, once owned here before the kill
        _serving_line(3, 1_006.0, 1_006.5),
        _serving_line(3, 1_020.0, 1_021.0),  # moved again later: the first one counts
        _serving_line(4, 1_006.1, 1_006.4),
    )
    moves = moves_after(servings, {3, 4, 5}, KILL_AT)
    assert sorted(moves) == [3, 4]  # 5 has not served yet
    assert moves[3].total_s == pytest.approx(6.5)


def test_the_victim_owns_the_most_partitions_and_ties_are_repeatable() -> None:
    assert choose_victim({"w0": {0, 1}, "w1": {2, 3, 4, 5}}) == "w1"
    assert choose_victim({"w1": {3, 4, 5}, "w0": {0, 1, 2}}) == "w0"
    assert choose_victim({"w0": set(), "w1": {0}}) == "w1"
    with pytest.raises(ValueError, match="no members"):
        choose_victim({})


def _result(
    k: int, standby: int, mode: str, takeovers: list[float], total: float
) -> ScenarioResult:
    moves = tuple(
        Move(
            p,
            detection_s=total - t,
            takeover_s=t,
            total_s=total,
            restore_s=t / 2,
            restored=10,
            standby=standby > 0,
        )
        for p, t in enumerate(takeovers)
    )
    return ScenarioResult(
        Scenario(k, standby, mode), "w0", tuple(range(len(takeovers))), moves, 4.0, 1_999.0, 9_000
    )


def test_a_scenario_reports_median_and_max() -> None:
    result = _result(1_000, 0, "kill", [0.4, 1.0, 0.1], 7.0)
    assert result.spread("takeover_s") == {"median": 0.4, "max": 1.0}
    empty = _result(1_000, 0, "kill", [], 7.0)
    assert all(math.isnan(v) for v in empty.spread("total_s").values())


def test_the_targets_pass_and_miss() -> None:
    results = [
        _result(100_000, 1, "kill", [0.3, 0.4, 0.5], 6.5),
        _result(100_000, 1, "graceful", [0.2, 0.3, 0.3], 0.6),
        _result(1_000_000, 1, "kill", [0.6, 0.9], 7.0),
        _result(1_000_000, 1, "graceful", [0.5, 2.5], 6.5),
        _result(1_000_000, 0, "kill", [9.0], 15.0),  # no target without a standby
        _result(100_000, 1, "commit-kill", [1.1, 1.2], 7.0),
        _result(1_000_000, 1, "commit-kill", [12.0], 18.0),
    ]
    verdicts = {t.name: (t.verdict, round(t.measured, 3)) for t in failover_targets(results)}
    assert verdicts == {
        "takeover <= 2 s (max), K=100,000, S=1, kill": ("pass", 0.5),
        "takeover <= 2 s (max), K=1,000,000, S=1, kill": ("pass", 0.9),
        "takeover <= 2 s (max), K=100,000, S=1, commit-kill": ("pass", 1.2),
        "takeover <= 2 s (max), K=1,000,000, S=1, commit-kill": ("miss", 12.0),
        "takeover K=1,000,000 <= 1.5 x K=100,000 (max, S=1, kill)": ("miss", 1.8),
        "SIGTERM -> serving <= 2 s (max), K=100,000, S=1": ("pass", 0.6),
        "SIGTERM -> serving <= 2 s (max), K=1,000,000, S=1": ("miss", 6.5),
    }


def test_one_state_size_has_no_scaling_target_and_no_moves_is_a_miss() -> None:
    targets = failover_targets([_result(20_000, 1, "kill", [], 0.0)])
    assert [t.verdict for t in targets] == ["miss"]  # NaN measured: never a pass


def test_the_table_and_the_json_carry_every_scenario_and_target() -> None:
    results = [
        _result(20_000, 0, "kill", [1.5, 2.0], 8.0),
        _result(20_000, 1, "kill", [0.2, 0.3], 6.4),
    ]
    text = failover_table(results)
    assert "K=20,000 S=0 kill" in text and "K=20,000 S=1 kill" in text
    assert "target takeover <= 2 s (max), K=20,000, S=1, kill  pass" in text
    document = failover_json(results, {"identities": [20_000]}, {"platform": "Linux"})
    json.dumps(document, allow_nan=False)  # NaN written as null
    assert document["environment"]["platform"] == "Linux"
    scenario = document["scenarios"][1]
    assert scenario["takeover_s"] == {"median": 0.25, "max": 0.3}
    assert {"detection_s", "takeover_s", "total_s", "restored", "standby"} <= set(
        scenario["moves"][0]
    )
    assert document["targets"][0]["verdict"] == "pass"


# ---- settings ------------------------------------------------------------------------------------


def test_identity_counts_parse_and_refuse() -> None:
    assert parse_identity_counts("100000,1_000_000") == (100_000, 1_000_000)
    assert parse_identity_counts(" 2000 ") == (2_000,)
    for text in ("", "0", "10k", "-5"):
        with pytest.raises(ValueError, match="--failover-identities"):
            parse_identity_counts(text)


def test_every_state_size_runs_six_scenarios() -> None:
    settings = FailoverSettings(identities=(100, 1_000))
    names = [scenario.name for scenario in settings.scenarios()]
    assert names[:6] == [
        "K=100 S=0 kill",
        "K=100 S=0 commit-kill",
        "K=100 S=0 graceful",
        "K=100 S=1 kill",
        "K=100 S=1 commit-kill",
        "K=100 S=1 graceful",
    ]
    assert len(names) == 12
    assert settings.takeover_timeout_s(1_000_000) > settings.session_timeout_ms / 1000


def test_the_workers_get_their_own_state_and_the_standby_flag(tmp_path: Path) -> None:
    plan = WorkerPlan(KafkaSettings("127.0.0.1:9092"), "app", "in", "out", "rej", 1, 6_000, 10_000)
    command = plan.command("w1", tmp_path / "w1" / "state")
    assert command[command.index("--state-dir") + 1] == str(tmp_path / "w1" / "state")
    assert command[command.index("--standby-replicas") + 1] == "1"
    assert command[command.index("--instance-id") + 1] == "w1"
    assert command[command.index("--session-timeout-ms") + 1] == "6000"
    assert command[command.index("--log-level") + 1] == "info"
    assert command[command.index("--membership") + 1] == "static"
    # The client.id names a dynamic member (no group.instance.id) in the group's description.
    assert command[command.index("-X") + 1] == "client.id=w1"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--failover", "--peer-torture"], "--failover runs alone"),
        (["--failover", "--vary", "batch-size=10"], "--failover runs alone"),
        (["--failover-identities", "2000"], "is an option of --failover"),
        (["--failover", "--failover-identities", "2k"], "give counts like"),
    ],
)
def test_the_command_refuses_what_failover_cannot_do(args: list[str], message: str) -> None:
    """Refused before any broker is started or reached."""
    from click.testing import CliRunner
    from seqgate_devtools.cli.bench import bench

    result = CliRunner().invoke(bench, [*args, "--bootstrap-servers", "127.0.0.1:1"])
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_the_survivors_own_stopped_partitions_are_reported() -> None:
    kept = _result(20_000, 1, "kill", [0.2, 0.3], 6.4)
    stopped = dataclasses.replace(kept, own_stopped=(Move(3, 6.0, 0.4, 6.4, 0.01, 0, True),))
    assert "  0  " in failover_table([kept])
    assert "1 (0.40 s)" in failover_table([stopped])
    document = failover_json([stopped], {}, {})
    assert [m["partition"] for m in document["scenarios"][0]["own_stopped"]] == [3]


def test_the_workers_get_the_rebalance_protocol(tmp_path: Path) -> None:
    plan = WorkerPlan(
        KafkaSettings("127.0.0.1:9092"),
        "app",
        "in",
        "out",
        "rej",
        1,
        6_000,
        10_000,
        rebalance="eager",
    )
    command = plan.command("w1", tmp_path / "w1" / "state")
    assert command[command.index("--rebalance") + 1] == "eager"
