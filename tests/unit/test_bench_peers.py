"""`seqgate bench --peers`: the oracle, the summaries and the report rows (pure), the peers'
preparation refusing with a reason, and the process watcher on a stand-in program."""

from __future__ import annotations

import json
import math
import re
import sys
import time
import types
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
from seqgate_devtools.bench.chart import draw
from seqgate_devtools.bench.pairs import WARMUP, round_application_id, round_outbox_topic
from seqgate_devtools.bench.peers import catalog
from seqgate_devtools.bench.peers.comparison import parse_peer_names
from seqgate_devtools.bench.peers.oracle import (
    EventName,
    event_id_of_event,
    event_id_of_outbox,
    expected_accepted,
    judge,
)
from seqgate_devtools.bench.peers.process import Launch, SystemProcess
from seqgate_devtools.bench.peers.stage import PeerRound, PeerStage, peers_unusable_reason
from seqgate_devtools.bench.peers.summary import summarize
from seqgate_devtools.bench.peers.torture import TortureResult, kill_schedule, torture_table
from seqgate_devtools.bench.report import (
    BenchFigures,
    LatencySummary,
    Throughput,
    as_json,
    table,
)
from seqgate_devtools.bench.workload import (
    ACCEPTED,
    WorkloadSpec,
    build_workload,
    make_event,
)
from seqgate_devtools.errors import SystemExited

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD
from seqgate.schemas.records import OutboxRecord

# ---- oracle --------------------------------------------------------------------------------------


def test_the_expected_outbox_holds_each_accepted_write_once() -> None:
    workload = build_workload(WorkloadSpec(events=5_000, identities=500))
    expected = expected_accepted(workload)
    assert sum(expected.values()) == workload.expected()["accepted"] == len(expected)
    assert set(expected.values()) == {1}
    first = workload.outcomes.index(ACCEPTED)
    assert (workload.records[first][0], workload.event(first).id) in expected
    assert sum(expected_accepted(workload, 100).values()) == workload.expected(100)["accepted"]


def _names(*ids: str) -> Counter[EventName]:
    return Counter((b"k", event_id) for event_id in ids)


def test_the_oracle_tells_missing_duplicated_and_unexpected_apart() -> None:
    expected = _names("a", "b", "c")
    assert judge(expected, _names("a", "b", "c")).exact
    # The same count of records, but one lost behind one duplicated: not exact.
    verdict = judge(expected, _names("a", "a", "b"))
    assert (verdict.missing, verdict.duplicated, verdict.unexpected) == (1, 1, 0)
    assert not verdict.exact and verdict.found == verdict.expected == 3
    assert "missing c" in verdict.examples and "duplicated a" in verdict.examples
    verdict = judge(expected, _names("a", "b", "c", "stale-one"))
    assert (verdict.missing, verdict.duplicated, verdict.unexpected) == (0, 0, 1)
    assert verdict.as_dict()["exact"] is False


def test_the_oracle_reads_a_peers_record_and_the_workers_record() -> None:
    event = make_event(7, 3)
    assert event_id_of_event(OBJECT_EVENT.encode(event)) == event.id
    outbox = OutboxRecord(event=event, previous_position=None, input_partition=1, input_offset=9)
    assert event_id_of_outbox(OUTBOX_RECORD.encode(outbox)) == event.id


# ---- summaries and report ------------------------------------------------------------------------

_COUNTS = {"accepted": 7, "duplicate": 2, "stale": 1}


def _round(rate: float, *, exact: bool = True, counts: dict[str, int] | None = None) -> PeerRound:
    verdict = judge(_names("a"), _names("a") if exact else _names("a", "a"))
    return PeerRound(
        "quix",
        "Quix Streams",
        throughput=Throughput(int(rate), 1.0),
        peak_rss_bytes=200 * 2**20,
        counts=_COUNTS if counts is None else counts,
        verdict=verdict,
    )


def test_a_peer_is_compared_with_the_worker_of_its_own_round() -> None:
    rounds = [[_round(100)], [_round(50)], [_round(200)]]
    (summary,) = summarize(rounds, [200.0, 150.0, 200.0], _COUNTS)
    assert summary.worker_ratios == (2.0, 3.0, 1.0)
    assert summary.worker_ratio == 2.0  # the median of the rounds' ratios
    assert summary.rate == 100.0
    assert summary.correctness == "exact"


def test_a_wrong_peer_is_reported_wrong_not_fast() -> None:
    (wrong,) = summarize([[_round(900)], [_round(900, exact=False)]], [100.0, 100.0], _COUNTS)
    assert not wrong.exact and wrong.correctness.startswith("WRONG outbox")
    (miscounted,) = summarize([[_round(100, counts={"accepted": 7})]], [100.0], _COUNTS)
    assert miscounted.correctness == "outbox exact, counts differ"


def test_a_peer_that_did_not_run_says_why() -> None:
    missing = PeerRound("kafka-streams", "Kafka Streams", problem="not run: mvn not found")
    (summary,) = summarize([[missing]], [100.0], _COUNTS)
    assert summary.correctness == "not run: mvn not found"
    assert math.isnan(summary.rate)


def _figures_with_peers(tmp_path: Path) -> BenchFigures:
    ran = summarize([[_round(100)], [_round(120)]], [150.0, 150.0], _COUNTS)[0].as_dict()
    not_run = summarize(
        [[PeerRound("faust", "faust-streaming", problem="not run: faust-streaming missing")]] * 2,
        [150.0, 150.0],
        _COUNTS,
    )[0].as_dict()
    return BenchFigures(
        workload={"events": 10, "identities": 2, "expected": _COUNTS},
        settings={"commit_interval_ms": 100},
        limit=Throughput(300, 1.0),
        processor=Throughput(150, 1.0),
        processor_peak_rss_bytes=2**20,
        processor_outcomes=dict(_COUNTS),
        sqlite=Throughput(1, 1.0),
        latency=LatencySummary.of(1.0, 1.0, 1, [10.0]),
        restore=Throughput(1, 1.0),
        restored_watermarks=2,
        raw_changelog=Throughput(1, 1.0),
        bridge=Throughput(1, 1.0),
        raw_produce=Throughput(1, 1.0),
        rss_budget_bytes=2**29,
        peers=[ran, not_run],
        processor_verdict=judge(_names("a"), _names("a")).as_dict(),
    )


def test_the_report_shows_every_peer_and_the_workers_oracle_verdict(tmp_path: Path) -> None:
    figures = _figures_with_peers(tmp_path)
    text = table(figures)
    assert re.search(r"processor outbox vs replay \(oracle\) +exact", text)
    assert "peer Quix Streams" in text and "processor/peer 1.38x" in text  # median of 1.5, 1.25
    assert "1.50x, 1.25x" in text
    assert "peer faust-streaming" in text and "not run: faust-streaming missing" in text
    document = json.loads(json.dumps(as_json(figures), allow_nan=False))
    assert [p["name"] for p in document["peers"]] == ["quix", "faust"]
    assert document["peers"][1]["rate"] is None
    assert document["processor_verdict"]["exact"] is True
    chart = tmp_path / "chart.png"
    draw(figures, [10.0], chart)
    assert chart.read_bytes()[:4] == b"\x89PNG"


# ---- names, preparation --------------------------------------------------------------------------


def test_peer_names_are_checked() -> None:
    assert parse_peer_names("kafka-streams, quix,faust") == ("kafka-streams", "quix", "faust")
    assert parse_peer_names("") == ()
    with pytest.raises(ValueError, match=r"unknown peer 'flink'.*kafka-streams, quix, faust"):
        parse_peer_names("quix,flink")
    with pytest.raises(ValueError, match="named twice"):
        parse_peer_names("quix,quix")


def test_the_warm_up_round_has_names_of_its_own() -> None:
    assert round_application_id("app", 0) == "app" and round_outbox_topic("out", 0) == "out"
    assert round_application_id("app", 2) == "app-r2"
    assert round_application_id("app", WARMUP) == "app-warmup"
    assert round_outbox_topic("out", WARMUP) == "out-warmup"


def test_a_peer_without_its_toolchain_is_not_run_with_the_reason(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn, no java
    monkeypatch.setenv("SEQGATE_HOME", str(tmp_path / "home"))
    kind = catalog.peer_named("kafka-streams")
    with pytest.raises(catalog.PeerUnavailable, match="mvn not found on PATH"):
        kind.command(lambda _: None)


def test_a_secured_cluster_is_not_given_to_the_peers() -> None:
    assert peers_unusable_reason(KafkaSettings("h:1")) is None
    secured = KafkaSettings("h:1", {"security.protocol": "SASL_SSL"})
    assert "PLAINTEXT bootstrap address only" in str(peers_unusable_reason(secured))


# ---- the process watcher -------------------------------------------------------------------------

_STAND_IN = """
import json, signal, sys, time
def bye(*_):
    print(json.dumps({"accepted": 3, "duplicate": 1, "stale": 0}), flush=True)
    sys.exit(0)
signal.signal(signal.SIGTERM, bye)
print("not json", flush=True)
print(json.dumps({"first_record_ms": 1234.5}), flush=True)
print(json.dumps({"accepted": 1, "duplicate": 0, "stale": 0}), flush=True)
print("ready", file=sys.stderr, flush=True)
while True:
    time.sleep(0.05)
"""


def test_a_system_reports_its_first_record_counts_and_peak_rss(tmp_path: Path) -> None:
    log = tmp_path / "log"
    system = SystemProcess("stand-in", [sys.executable, "-c", _STAND_IN], log, {})
    deadline = time.monotonic() + 10
    while "ready" not in log.read_text() and time.monotonic() < deadline:
        system.check_alive()
        time.sleep(0.05)
    assert system.first_record_ms == 1234.5
    assert system.peak_rss_bytes > 1_000_000
    assert system.stop() == 0
    assert system.counts == {"accepted": 3, "duplicate": 1, "stale": 0}


def test_a_system_that_dies_is_reported_with_its_log(tmp_path: Path) -> None:
    script = "import sys; print('boom: no broker', file=sys.stderr); sys.exit(4)"
    system = SystemProcess("doomed", [sys.executable, "-c", script], tmp_path / "log", {})
    system._process.wait()
    with pytest.raises(SystemExited, match="doomed exited with 4: boom: no broker"):
        system.check_alive()


def test_a_peer_that_cannot_be_prepared_is_a_row_not_a_crash(tmp_path: Path) -> None:
    def refuse(kind: catalog.PeerKind, home: Path, progress: object) -> list[str]:
        raise catalog.PeerUnavailable("mvn not found on PATH (Maven builds the peer)")

    kind = catalog.PeerKind("kafka-streams", "Kafka Streams", tmp_path, refuse)
    stage = PeerStage(
        kafka=KafkaSettings("127.0.0.1:1"),  # never reached
        input_topic="in",
        partitions=1,
        commit_interval_ms=100,
        schema=tmp_path / "schema.avsc",
        workdir=tmp_path,
        expected=Counter(),
        expected_counts={},
        timeout_s=1.0,
        progress=lambda _: None,
    )
    result = stage.run(kind, "stem")
    assert result.problem == "not run: mvn not found on PATH (Maven builds the peer)"
    assert result.throughput is None and result.verdict is None
    secured = replace(stage, kafka=KafkaSettings("h:1", {"sasl.username": "u"}), _commands={})
    assert "PLAINTEXT bootstrap address only" in str(secured.run(kind, "stem").problem)


# ---- the torture's schedule and table ------------------------------------------------------------


def test_the_kill_schedule_is_the_seeds_and_lands_inside_the_input() -> None:
    schedule = kill_schedule(7, 6)
    assert schedule == kill_schedule(7, 6) and schedule != kill_schedule(8, 6)
    shares = [kill.share for kill in schedule]
    assert shares == sorted(shares) and all(0.05 <= share <= 0.85 for share in shares)
    assert all(0 <= kill.delay_s <= 0.3 for kill in schedule)


def test_the_torture_table_counts_every_system_and_shortens_a_failure() -> None:
    exact = TortureResult("worker", "seqgate Worker", 6, 10.0, judge(_names("a"), _names("a")))
    wrong = TortureResult(
        "faust", "faust-streaming", 6, 10.0, judge(_names("a", "b"), _names("a", "a", "c"))
    )
    failed = TortureResult(
        "quix",
        "Quix Streams",
        5,
        problem="failed: quix exited with 1:   File x | raise Y | quixstreams.Invalid: offset",
    )
    text = torture_table([exact, wrong, failed], kill_schedule(7, 2))
    lines = text.splitlines()
    assert re.match(r"seqgate Worker +6 +1 +1 +0 +0 +0 +exact$", lines[1])
    assert re.match(
        r"faust-streaming +6 +2 +3 +1 +1 +1 +missing b; duplicated a; unexpected c", lines[2]
    )
    assert lines[3].endswith("failed: quix exited with 1: quixstreams.Invalid: offset")
    assert lines[-1].startswith("kill -9 once this share of the input was committed, plus: ")
    assert failed.as_dict()["verdict"] is None and exact.as_dict()["kills"] == 6


def test_whatever_breaks_in_a_peers_round_is_its_problem_not_the_benchs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stage = PeerStage(
        kafka=KafkaSettings("127.0.0.1:1"),
        input_topic="in",
        partitions=1,
        commit_interval_ms=100,
        schema=tmp_path / "schema.avsc",
        workdir=tmp_path,
        expected=Counter(),
        expected_counts={},
        timeout_s=1.0,
        progress=lambda _: None,
    )

    def broken(kind: catalog.PeerKind, stem: str) -> PeerRound:
        raise OSError("outbox partition 3: Broker: Not leader for partition")

    monkeypatch.setattr(stage, "_run", broken)
    result = stage.run(catalog.peer_named("quix"), "stem")
    assert result.problem == "failed: OSError: outbox partition 3: Broker: Not leader for partition"
    assert result.throughput is None


def test_faust_is_looked_for_in_the_peers_interpreter_not_in_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """CI met a `faust` in sys.modules without `__spec__` (find_spec raised ValueError)."""
    stand_in = types.ModuleType("faust")
    stand_in.__spec__ = None
    monkeypatch.setitem(sys.modules, "faust", stand_in)
    words = catalog.peer_named("faust").command(lambda _: None)
    assert words[0] == sys.executable and words[1].endswith("faust_peer/app.py")


def test_a_systems_launch_is_named_by_its_stem(tmp_path: Path) -> None:
    launch = Launch.named(
        "bench-x-peer-quix-r0",
        bootstrap_servers="h:1",
        input_topic="in",
        workdir=tmp_path,
        commit_interval_ms=100,
        schema=tmp_path / "s.avsc",
    )
    assert launch.output_topic == "bench-x-peer-quix-r0-out"
    assert launch.application_id == "bench-x-peer-quix-r0-app"
    assert launch.state_dir == tmp_path / "bench-x-peer-quix-r0"
    args = launch.peer_args()
    assert args[args.index("--session-timeout-ms") + 1] == "10000"
    assert args[args.index("--output-topic") + 1] == launch.output_topic
