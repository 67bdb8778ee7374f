"""`seqgate bench --failover` end to end, at a tiny size, on the session's real broker."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner

_SCENARIOS = {
    (0, "kill"): -9,
    (0, "commit-kill"): -9,
    (0, "graceful"): 0,
    (1, "kill"): -9,
    (1, "commit-kill"): -9,
    (1, "graceful"): 0,
}


@pytest.mark.kafka
@pytest.mark.slow
def test_quick_failover_times_every_moved_partition(kafka_bootstrap: str, tmp_path: Path) -> None:
    from seqgate_devtools.cli.bench import bench

    report = tmp_path / "failover.json"
    result = CliRunner().invoke(
        bench,
        [
            "--failover",
            "--quick",
            "--failover-identities",
            "2000",
            "--bootstrap-servers",
            kafka_bootstrap,
            "--report",
            str(report),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    document = json.loads(report.read_text())
    assert document["stage"] == "failover"
    assert document["environment"]["platform"]
    assert document["settings"]["identities"] == [2_000]
    scenarios = {(s["standby_replicas"], s["mode"]): s for s in document["scenarios"]}
    assert set(scenarios) == set(_SCENARIOS)
    for key, scenario in scenarios.items():
        assert scenario["identities"] == 2_000
        assert scenario["victim"] in ("w0", "w1"), key
        # SIGKILL, or a clean exit after SIGTERM (it committed and left).
        assert scenario["victim_exit"] == _SCENARIOS[key], key
        moved = sorted(move["partition"] for move in scenario["moves"])
        assert moved == scenario["victim_partitions"] and moved, key
        for move in scenario["moves"]:
            for figure in ("detection_s", "takeover_s", "total_s"):
                assert math.isfinite(move[figure]) and move[figure] >= 0, (key, move)
            assert move["total_s"] == pytest.approx(
                move["detection_s"] + move["takeover_s"], abs=0.01
            )
            # With a standby the survivor took over a warm copy; without one it restored.
            assert move["standby"] is (key[0] == 1), (key, move)
        for figure in ("detection_s", "takeover_s", "total_s"):
            spread = scenario[figure]
            assert 0 <= spread["median"] <= spread["max"], (key, figure)
        assert scenario["offered_events"] > 0 and scenario["offered_rate"] > 0
    names = [target["name"] for target in document["targets"]]
    assert names == [
        "takeover <= 2 s (max), K=2,000, S=1, kill",
        "takeover <= 2 s (max), K=2,000, S=1, commit-kill",
        "SIGTERM -> serving <= 2 s (max), K=2,000, S=1",
    ]
    assert {target["verdict"] for target in document["targets"]} <= {"pass", "miss"}
    assert "K=2,000 S=1 kill" in result.output and "target takeover" in result.output
