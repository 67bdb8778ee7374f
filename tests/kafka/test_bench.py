"""`seqgate bench`: its pure parts, and one quick run end to end against a real broker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

# ---- end to end ----------------------------------------------------------------------------------


@pytest.mark.kafka
@pytest.mark.slow
def test_quick_bench_end_to_end(kafka_bootstrap: str, tmp_path: Path) -> None:
    from seqgate_devtools.cli.bench import bench

    report, chart = tmp_path / "report.json", tmp_path / "chart.png"
    result = CliRunner().invoke(
        bench,
        [
            "--quick",
            "--bootstrap-servers",
            kafka_bootstrap,
            "--latency-seconds",
            "2",
            "--report",
            str(report),
            "--chart",
            str(chart),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    document = json.loads(report.read_text())
    for stage in ("limit", "processor", "sqlite", "restore", "raw_changelog", "bridge"):
        assert document["stages"][stage]["rate"] > 0, stage
    assert document["stages"]["raw_produce"]["rate"] > 0
    assert document["processor_outcomes_match_workload"] is True
    assert document["restored_watermarks"] == 2_000
    latency = document["latency"]
    assert latency["samples"] == latency["expected"] > 0
    assert latency["p50_ms"] <= latency["p99_ms"] <= latency["max_ms"]
    assert set(document["ratios"]) == {
        "processor/limit",
        "processor/sqlite",
        "restore/raw",
        "bridge/raw",
    }
    assert len(document["targets"]) == 6
    assert {t["verdict"] for t in document["targets"]} <= {"pass", "miss", "load not sustained"}
    assert latency["capacity_rate"] > 0 and latency["drain_s"] >= 0
    assert isinstance(latency["sustained"], bool)
    assert document["settings"]["warmup_round"] is True
    assert document["processor_peak_rss_bytes"] > 0
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "ratio processor/limit" in result.output
    # The measuring process does not collect while it stamps (its own pauses moved stamps).
    assert document["latency_gc_ms"] == {}
    assert "collector off while the bench stamps" in result.output


@pytest.mark.kafka
@pytest.mark.slow
def test_the_registry_variant_reads_and_writes_the_confluent_wire_format(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    """`--vary schema-registry=mock://...`: the Worker in registry mode on a Confluent-framed
    copy of the input, side by side with the default; it must decide exactly as the default
    (the variant run raises otherwise, e.g. when it rejects the framed input)."""
    from seqgate_devtools.cli.bench import bench

    report = tmp_path / "vary.json"
    result = CliRunner().invoke(
        bench,
        [
            "--bootstrap-servers",
            kafka_bootstrap,
            "--events",
            "4000",
            "--identities",
            "400",
            "--rounds",
            "1",
            "--vary",
            "schema-registry=mock://bench",
            "--report",
            str(report),
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    variants = {v["setting"]: v["rates"] for v in json.loads(report.read_text())["variants"]}
    assert set(variants) == {"default", "schema-registry=mock://bench"}
    assert all(rate > 0 for rates in variants.values() for rate in rates)
