"""`seqgate bench`: its pure parts (one quick run end to end against a real broker is in
tests/kafka/test_bench.py)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from seqgate_devtools.bench.pairs import Pair, median_pair
from seqgate_devtools.bench.reference_sqlite import GuideEvent, connect, record_event
from seqgate_devtools.bench.report import (
    BenchFigures,
    LatencySummary,
    Throughput,
    as_json,
    percentile,
    ratios,
    table,
    targets,
)
from seqgate_devtools.bench.vary import VariantResult, parse_variant, variants_table
from seqgate_devtools.bench.workload import WorkloadSpec, build_workload

# ---- workload ------------------------------------------------------------------------------------


def test_workload_is_reproducible_by_seed() -> None:
    spec = WorkloadSpec(events=5_000, identities=500, seed=3)
    first, again = build_workload(spec), build_workload(spec)
    assert first.records == again.records
    other = build_workload(WorkloadSpec(events=5_000, identities=500, seed=4))
    assert other.records != first.records


def test_workload_rates_and_expected_outcomes() -> None:
    spec = WorkloadSpec(events=20_000, identities=2_000, redelivery_rate=0.2, reorder_rate=0.2)
    workload = build_workload(spec)
    summary = workload.summary()
    assert len(workload) == 20_000
    assert summary["redelivery_rate"] == pytest.approx(0.2, abs=0.01)
    assert summary["reorder_rate"] == pytest.approx(0.2, abs=0.02)
    assert len({key for key, _ in workload.records}) == 2_000  # every identity written
    expected = workload.expected()
    assert sum(expected.values()) == 20_000
    assert expected["accepted"] >= 2_000 and expected["duplicate"] > 0 and expected["stale"] > 0


def test_workload_without_redelivery_or_reordering_accepts_everything() -> None:
    workload = build_workload(
        WorkloadSpec(events=3_000, identities=300, redelivery_rate=0.0, reorder_rate=0.0)
    )
    assert workload.expected() == {"accepted": 3_000, "duplicate": 0, "stale": 0}


def test_workload_refuses_more_identities_than_writes() -> None:
    with pytest.raises(ValueError, match="identities"):
        WorkloadSpec(events=100, identities=90, redelivery_rate=0.2)


def test_bridge_notifications_normalize_to_the_same_events() -> None:
    from seqgate.connectors.parsers.normalize import normalize

    workload = build_workload(WorkloadSpec(events=1_000, identities=100))
    for delivery in (0, 500, 999):
        (event,) = normalize(workload.notification(delivery), "bench").events
        expected = workload.event(delivery)
        assert (event.bucket, event.key, event.position) == (
            expected.bucket,
            expected.key,
            expected.position,
        )


# ---- the guide's SQLite reference ---------------------------------------------------------------


def test_sqlite_reference_decides_the_guide_example(tmp_path: Path) -> None:
    db = connect(tmp_path / "events.sqlite")
    decisions = [
        record_event(
            db,
            GuideEvent.of(
                "example-input",
                "incoming/June report+final.csv",
                seq,
                "demo-version-1",
                "ObjectCreated:Put",
            ),
        )
        for seq in ("f", "000F", "e", "10")
    ]
    assert decisions == ["queued", "duplicate", "stale", "queued"]
    db.close()
    db = connect(tmp_path / "events.sqlite")  # committed state survives a reconnect
    again = GuideEvent.of("example-input", "incoming/June report+final.csv", "10", None, "x")
    assert record_event(db, again) == "duplicate"
    assert db.execute("SELECT count(*) FROM outbox").fetchone()[0] == 2


# ---- report --------------------------------------------------------------------------------------


def _figures(**overrides: object) -> BenchFigures:
    values: dict[str, object] = {
        "workload": {
            "events": 1000,
            "identities": 100,
            "expected": {"accepted": 700, "duplicate": 200, "stale": 100},
        },
        "settings": {"commit_interval_ms": 100},
        "limit": Throughput(1000, 1.0),
        "processor": Throughput(800, 1.0),
        "processor_peak_rss_bytes": 100 * 2**20,
        "processor_outcomes": {"accepted": 700, "duplicate": 200, "stale": 100},
        "sqlite": Throughput(100, 10.0),
        "latency": LatencySummary.of(250.0, 249.0, 3, [120.0, 140.0, 150.0]),
        "restore": Throughput(500, 1.0),
        "restored_watermarks": 100,
        "raw_changelog": Throughput(500, 2.0),
        "bridge": Throughput(400, 1.0),
        "raw_produce": Throughput(1000, 1.0),
        "rss_budget_bytes": 512 * 2**20,
    }
    values.update(overrides)
    return BenchFigures(**values)  # type: ignore[arg-type]


def _pair(limit_rate: float, processor_rate: float) -> Pair:
    return Pair(Throughput(int(limit_rate), 1.0), Throughput(int(processor_rate), 1.0), {}, {})


def test_the_median_ratio_pair_is_reported_with_every_round() -> None:
    pairs = [_pair(100, 90), _pair(60, 60), _pair(120, 60)]  # 0.9x, 1.0x, 0.5x
    assert median_pair(pairs) is pairs[0]
    assert median_pair(pairs[1:]) is pairs[2]  # even count: the lower middle
    shown = table(_figures(rounds=[pair.as_dict() for pair in pairs]))
    assert "90/100 = 0.90x, 60/60 = 1.00x, 60/120 = 0.50x" in shown
    assert "every round" not in table(_figures(rounds=[pairs[0].as_dict()]))


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50
    assert percentile(values, 99) == 99
    assert percentile(values, 100) == 100
    assert percentile([7.0], 99) == 7
    assert math.isnan(percentile([], 50))


def test_ratios() -> None:
    r = ratios(_figures())
    assert r["processor/limit"] == pytest.approx(0.8)
    assert r["processor/sqlite"] == pytest.approx(80.0)
    assert r["restore/raw"] == pytest.approx(2.0)
    assert r["bridge/raw"] == pytest.approx(0.4)


def test_target_verdicts() -> None:
    verdicts = {t.name: t.verdict for t in targets(_figures())}
    assert verdicts == {
        "processor >= 0.8 x limit": "pass",  # exactly at the bound
        "processor >= 15 x sqlite": "pass",
        "p99 <= commit interval + 50 ms": "pass",  # 150 <= 150
        "restore >= 0.5 x raw consume": "pass",
        "bridge >= 0.5 x raw produce": "miss",  # 0.4
        "worker peak RSS bounded (100 identities)": "pass",
    }
    slow = _figures(
        latency=LatencySummary.of(1.0, 1.0, 2, [100.0, 250.0]),
        processor=Throughput(100, 1.0),
        processor_peak_rss_bytes=600 * 2**20,
    )
    missed = {t.name for t in targets(slow) if not t.passed}
    assert "p99 <= commit interval + 50 ms" in missed
    assert "processor >= 0.8 x limit" in missed
    assert "worker peak RSS bounded (100 identities)" in missed


def test_an_unsustained_offered_load_is_flagged_not_judged() -> None:
    """Its latencies are a growing queue's: neither pass nor miss, and the table says so."""
    queued = LatencySummary.of(
        500.0, 300.0, 3, [120.0, 150.0, 180.0], capacity_rate=1000.0, drain_s=4.2, sustained=False
    )
    figures = _figures(latency=queued)
    verdict = {t.name: t.verdict for t in targets(figures)}["p99 <= commit interval + 50 ms"]
    assert verdict == "load not sustained"
    text = table(figures)
    assert "NO: a queue's latency, not the product's" in text
    assert "half of 1,000 ev/s calibrated in place; outbox drained 4.20 s" in text
    steady = _figures(latency=LatencySummary.of(500.0, 499.0, 3, [120.0], capacity_rate=1e3))
    assert "offered load sustained" in table(steady) and "yes" in table(steady)
    assert as_json(figures)["latency"]["sustained"] is False


def test_missing_latency_is_a_miss_and_json_has_no_nan() -> None:
    figures = _figures(latency=LatencySummary.of(1.0, 1.0, 5, []))
    verdict = {t.name: t.verdict for t in targets(figures)}["p99 <= commit interval + 50 ms"]
    assert verdict == "miss"
    document = json.loads(json.dumps(as_json(figures), allow_nan=False))
    assert document["latency"]["p99_ms"] is None


def test_table_shows_every_figure_ratio_and_target() -> None:
    text = table(_figures())
    for needle in (
        "limit",
        "processor (Worker)",
        "sqlite reference",
        "restore",
        "raw changelog consume",
        "bridge",
        "raw produce",
        "latency p50 / p99 / max",
        "worker peak RSS",
        "ratio processor/limit",
        "ratio processor/sqlite",
        "ratio restore/raw",
        "ratio bridge/raw",
        "target p99",
        "miss",
    ):
        assert needle in text


def test_the_bench_gc_row_says_when_the_collector_was_off() -> None:
    assert "collector off while the bench stamps" in table(_figures())
    paused = table(_figures(latency_gc_ms={"count": 3.0, "p50": 0.5, "p99": 2.0, "max": 2.0}))
    assert "3 collections in the measuring process" in paused
    assert "collector off" not in paused


# ---- peak RSS ------------------------------------------------------------------------------------


def test_a_stage_reports_its_own_peak_rss_not_its_parents() -> None:
    """Linux carries ru_maxrss across fork + exec: a stage started by a bench that holds
    a large workload must still report only its own memory (VmHWM)."""
    ballast = bytearray(400 * 2**20)  # the bench's pre-serialized workload, in spirit
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # touch every page: resident
    probe = (
        "import resource; from seqgate_devtools.bench.subproc import peak_rss_bytes;"
        " print(peak_rss_bytes(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024)"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    ).stdout
    own, inherited = (int(value) for value in out.split())
    assert inherited >= 400 * 2**20  # what the bench used to report
    assert own < 200 * 2**20
    del ballast


# ---- --vary --------------------------------------------------------------------------------------


def test_settings_to_vary_are_parsed_or_refused_with_the_forms() -> None:
    assert parse_variant("producer.linger.ms=0").spec_changes == {
        "extra_producer_config": {"linger.ms": "0"}
    }
    assert parse_variant("consumer.fetch.wait.max.ms=10").spec_changes == {
        "extra_consumer_config": {"fetch.wait.max.ms": "10"}
    }
    assert parse_variant("batch-size=2000").spec_changes == {"batch_size": 2000}
    assert parse_variant("commit-every=10000").spec_changes == {"commit_every": 10000}
    assert parse_variant("commit-interval-ms=200").spec_changes == {"commit_interval_ms": 200}
    registry = parse_variant("schema-registry=mock://bench")
    assert registry.spec_changes == {"schema_registry_url": "mock://bench"}
    assert registry.registry_url == "mock://bench"
    assert parse_variant("batch-size=2000").registry_url is None
    for bad in (
        "linger.ms=0",
        "producer.linger.ms",
        "batch-size=0",
        "commit-every=x",
        "commit-interval-ms=-5",
        "broker.x=1",
    ):
        with pytest.raises(
            ValueError,
            match=r"producer\.<key>=<value>|batch-size|positive whole number|SETTING=VALUE",
        ):
            parse_variant(bad)


def test_variants_are_reported_against_the_default_of_the_same_run() -> None:
    shown = variants_table(
        [VariantResult("default", [100.0, 80.0]), VariantResult("batch-size=2000", [90.0, 50.0])]
    )
    assert "0.90x" in shown and "1.00x" in shown and "90, 50" in shown
