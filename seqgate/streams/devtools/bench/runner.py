"""Running every stage of `seqgate bench` in one go, against one broker.

Order: build the workload; create fresh topics; pre-load the input (not
measured); the pass-through limit and the Worker on that input, each in its
own process; the guide's SQLite reference; the changelog restore against a raw
consume; the bridge against a raw produce; the latency at half the measured
processor throughput; optionally a cProfile run of the Worker. Progress goes
to stderr; the caller prints the table and writes the report and the chart.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import pstats
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import confluent_kafka
from confluent_kafka import KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient

from seqgate.connectors.publish.publisher import Topics
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.streams.devtools.bench.bridge_stage import bridge_publish, raw_produce
from seqgate.streams.devtools.bench.latency import measure_latency
from seqgate.streams.devtools.bench.pairs import measure_pairs, median_pair, round_application_id
from seqgate.streams.devtools.bench.reference_sqlite import run_reference
from seqgate.streams.devtools.bench.report import BenchFigures, LatencySummary, Throughput, spread
from seqgate.streams.devtools.bench.restore_stage import (
    WORKER_RESTORE_CONFIG,
    raw_consume,
    restore_all,
)
from seqgate.streams.devtools.bench.workload import (
    Workload,
    WorkloadSpec,
    build_workload,
    identity_key,
    make_event,
)
from seqgate.streams.runtime.kafka_clients import client_config
from seqgate.streams.runtime.kafka_settings import KafkaSettings
from seqgate.streams.runtime.topics import (
    TopicSpec,
    changelog_topic,
    create_topics,
    pipeline_topics,
)

Echo = Callable[[str], None]

_WARMUP_EVENTS = 50
_PROFILE_TOP = 15


@dataclass(frozen=True, slots=True)
class BenchSettings:
    spec: WorkloadSpec
    commit_every: int = 2000
    commit_interval_ms: int = 100
    batch_size: int = 500
    sqlite_events: int = 50_000
    bridge_events: int = 200_000
    latency_seconds: float = 20.0
    rss_budget_mb: int = 512
    profile: bool = False
    keep_topics: bool = False
    rounds: int = 3


@dataclass(frozen=True, slots=True)
class BenchRun:
    figures: BenchFigures
    latencies_ms: list[float]


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def broker(kafka: KafkaSettings | None) -> Iterator[tuple[KafkaSettings, str | None]]:
    """(where Kafka is, its version when we started the broker ourselves)."""
    if kafka:
        yield kafka, None
        return
    from seqgate.streams.devtools.broker import KAFKA_VERSION, running_broker

    progress("no broker given: starting a private one (first run downloads Kafka via Maven)")
    with running_broker(progress=progress) as handle:
        yield KafkaSettings(handle.bootstrap_servers), KAFKA_VERSION


class _Names:
    def __init__(self) -> None:
        prefix = f"seqgate-bench-{uuid.uuid4().hex[:8]}"
        self.app = f"{prefix}-app"
        self.input = f"{prefix}-in"
        self.outbox = f"{prefix}-outbox"
        self.rejected = f"{prefix}-rejected"
        self.limit_out = f"{prefix}-limit-out"
        self.lat_app = f"{prefix}-lat"
        self.lat_input = f"{prefix}-lat-in"
        self.lat_outbox = f"{prefix}-lat-outbox"
        self.lat_rejected = f"{prefix}-lat-rejected"
        self.bridge = f"{prefix}-bridge"
        self.bridge_rejected = f"{prefix}-bridge-rejected"
        self.raw = f"{prefix}-raw"
        self.profile_app = f"{prefix}-prof"

    def specs(self, partitions: int, rounds: int) -> list[TopicSpec]:
        specs = pipeline_topics(
            input_topic=self.input,
            outbox_topic=self.outbox,
            rejected_topic=self.rejected,
            application_id=self.app,
            partitions=partitions,
        ) + pipeline_topics(
            input_topic=self.lat_input,
            outbox_topic=self.lat_outbox,
            rejected_topic=self.lat_rejected,
            application_id=self.lat_app,
            partitions=partitions,
        )
        extra = [self.limit_out, self.bridge, self.bridge_rejected, self.raw]
        specs += [TopicSpec(name, partitions) for name in extra]
        # The profile run and the later rounds write into the same outbox, with
        # changelogs of their own.
        apps = [self.profile_app] + [round_application_id(self.app, r) for r in range(1, rounds)]
        specs += [TopicSpec(changelog_topic(app), partitions, compacted=True) for app in apps]
        return specs


def preload(kafka: KafkaSettings, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    """Produce the pre-serialized input (keyed, murmur2, like the bridge) and wait for acks."""
    errors: list[str] = []

    def on_delivery(error: KafkaError | None, _message: Message) -> None:
        if error is not None:
            errors.append(error.str())

    producer = Producer(
        client_config(
            kafka,
            **{
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 20,
                "partitioner": "murmur2_random",
            },
        )
    )
    next_report = time.monotonic() + 2.0
    for index, (key, value) in enumerate(records):
        while True:
            try:
                producer.produce(topic, key=key, value=value, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.05)
        if time.monotonic() >= next_report:
            next_report = time.monotonic() + 2.0
            progress(f"pre-loading input: {index:,}/{len(records):,}")
    remaining = producer.flush(300)
    if remaining or errors:
        raise RuntimeError(f"pre-load failed: {remaining} unacknowledged, {errors[:3]}")


def run_stage_process(spec: dict[str, Any]) -> subprocess.Popen[bytes]:
    """Start `seqgate.streams.devtools.bench.subproc` with `spec`; stdin stays open (closing it
    stops an
    open-ended stage). The Kafka settings go in the child's environment, not on its
    command line, where other users could read a password."""
    kafka: KafkaSettings = spec["kafka"]
    public = {name: value for name, value in spec.items() if name != "kafka"}
    return subprocess.Popen(
        [sys.executable, "-m", "seqgate.streams.devtools.bench.subproc", json.dumps(public)],
        env={**os.environ, **kafka.environment()},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )


def stage_timeout(events: int) -> float:
    """How long one measured stage over `events` events may take."""
    return 600 + events / 200


def run_stage(stage: dict[str, Any], timeout: float) -> dict[str, Any]:
    """Run one stage process to its end; its JSON result."""
    return finish_stage_process(run_stage_process(stage), timeout)


def finish_stage_process(process: subprocess.Popen[bytes], timeout: float) -> dict[str, Any]:
    try:
        out, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise RuntimeError(f"a benchmark stage did not finish within {timeout:.0f} s") from None
    if process.returncode != 0:
        raise RuntimeError(f"a benchmark stage failed (exit {process.returncode})")
    result: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    return result


def environment(kafka_version: str | None) -> dict[str, Any]:
    mem_kib = 0
    with contextlib.suppress(OSError), open("/proc/meminfo") as meminfo:
        for line in meminfo:
            if line.startswith("MemTotal:"):
                mem_kib = int(line.split()[1])
    return {
        "nproc": os.cpu_count(),
        "ram_gib": round(mem_kib / 2**20, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "confluent_kafka": confluent_kafka.version(),
        "librdkafka": confluent_kafka.libversion()[0],
        "kafka": kafka_version or "external broker",
        "sqlite": sqlite3.sqlite_version,
    }


def profile_top(path: Path, top: int = _PROFILE_TOP) -> list[dict[str, Any]]:
    stats = pstats.Stats(str(path))
    entries: list[dict[str, Any]] = []
    raw: dict[tuple[str, int, str], tuple[int, int, float, float, Any]] = stats.stats  # type: ignore[attr-defined]
    for (filename, line, function), (cc, nc, tt, ct, _) in raw.items():
        name = f"{Path(filename).name}:{line}({function})" if line else function
        calls = str(nc) if cc == nc else f"{nc}/{cc}"
        entries.append(
            {
                "function": name,
                "ncalls": calls,
                "tottime_s": round(tt, 3),
                "cumtime_s": round(ct, 3),
            }
        )
    entries.sort(key=lambda entry: -entry["tottime_s"])
    return entries[:top]


def run_bench(settings: BenchSettings, kafka: KafkaSettings, kafka_version: str | None) -> BenchRun:
    spec = settings.spec
    started = time.monotonic()
    progress(f"building the workload: {spec.events:,} events over {spec.identities:,} identities")
    workload = build_workload(spec)
    n = len(workload)
    names = _Names()
    admin = AdminClient(client_config(kafka))
    create_topics(admin, names.specs(spec.partitions, settings.rounds))
    try:
        with tempfile.TemporaryDirectory(prefix="seqgate-bench-") as tmp:
            figures, latencies = _measure(settings, kafka, workload, names, Path(tmp))
    finally:
        if not settings.keep_topics:
            topics = [s.name for s in names.specs(spec.partitions, settings.rounds)]
            for future in admin.delete_topics(topics, request_timeout=30).values():
                with contextlib.suppress(Exception):
                    future.result()
    figures.environment = environment(kafka_version)
    figures.settings["total_seconds"] = round(time.monotonic() - started, 1)
    progress(f"done in {time.monotonic() - started:.0f} s ({n:,} events)")
    return BenchRun(figures, latencies)


def _measure(
    settings: BenchSettings, kafka: KafkaSettings, workload: Workload, names: _Names, tmp: Path
) -> tuple[BenchFigures, list[float]]:
    spec = settings.spec
    n = len(workload)
    progress(f"pre-loading {n:,} records into {names.input} (not measured)")
    preload(kafka, names.input, workload.records)
    common = {
        "kafka": kafka,
        "commit_every": settings.commit_every,
        "commit_interval_ms": settings.commit_interval_ms,
        "batch_size": settings.batch_size,
        "input_topic": names.input,
        "outbox_topic": names.outbox,
        "rejected_topic": names.rejected,
    }
    timeout = stage_timeout(n)
    pairs = measure_pairs(
        lambda stage: run_stage(stage, timeout),
        common,
        application_id=names.app,
        limit_output_topic=names.limit_out,
        expect=n,
        rounds=settings.rounds,
        state_root=tmp,
        progress=progress,
    )
    for pair in pairs:
        counters = {k: v for k, v in pair.worker_result["counters"].items() if v}
        if counters != {k: v for k, v in pairs[0].worker_result["counters"].items() if v}:
            raise RuntimeError(f"the rounds' workers decided differently: {counters}")
    chosen = median_pair(pairs)
    limit, processor = chosen.limit, chosen.processor
    limit_result, worker = chosen.limit_result, chosen.worker_result

    sqlite_n = min(n, settings.sqlite_events)
    progress(f"sqlite reference: {sqlite_n:,} events, one transaction each")
    reference = run_reference(
        (value for _, value in workload.records[:sqlite_n]),
        tmp / "reference.sqlite",
        progress=lambda done: (
            progress(f"sqlite reference: {done:,}/{sqlite_n:,}") if done % 20_000 == 0 else None
        ),
    )
    expected_ref = workload.expected(sqlite_n)
    if reference.outcomes.get("queued", 0) != expected_ref["accepted"]:
        raise RuntimeError(f"the SQLite reference decided {reference.outcomes}, not {expected_ref}")

    progress("restore: raw consume of the changelog, then restore_partition into fresh stores")
    changelog = changelog_topic(names.app)
    raw_changelog = raw_consume(kafka, changelog, spec.partitions)
    restored = restore_all(kafka, changelog, spec.partitions, tmp / "restore", names.input)
    restored_default = restore_all(
        kafka,
        changelog,
        spec.partitions,
        tmp / "restore-default",
        names.input,
        WORKER_RESTORE_CONFIG,
    )

    bridge_n = min(n, settings.bridge_events)
    progress(f"bridge: building {bridge_n:,} raw S3 notifications (not measured)")
    notifications = [workload.notification(i) for i in range(bridge_n)]
    keyed = [(workload.records[i][0], notifications[i]) for i in range(bridge_n)]
    progress("bridge: raw produce, then normalize + EventPublisher")
    raw = raw_produce(kafka, names.raw, keyed)
    bridge = bridge_publish(
        kafka, Topics(events=names.bridge, rejected=names.bridge_rejected), notifications
    )
    del notifications, keyed

    rate = max(1.0, processor.rate / 2)
    count = max(1, min(n, int(rate * settings.latency_seconds)))
    warmup = [
        (identity_key(spec.identities + i), OBJECT_EVENT.encode(make_event(spec.identities + i, 1)))
        for i in range(_WARMUP_EVENTS)
    ]
    progress(f"latency: starting a Worker on {names.lat_input}")
    lat_process = run_stage_process(
        {
            **common,
            "mode": "worker",
            "application_id": names.lat_app,
            "expect": 0,
            "input_topic": names.lat_input,
            "outbox_topic": names.lat_outbox,
            "rejected_topic": names.lat_rejected,
            "state_dir": str(tmp / "latency"),
        },
    )
    try:
        latency = measure_latency(
            kafka,
            names.lat_input,
            names.lat_outbox,
            warmup=warmup,
            records=workload.records[:count],
            expected_accepted=workload.expected(count)["accepted"],
            rate=rate,
            progress=progress,
        )
    finally:
        # End of input stops the open-ended worker: it commits and exits.
        assert lat_process.stdin is not None
        lat_process.stdin.close()
        lat_process.stdin = None
    latency_worker = finish_stage_process(lat_process, 120)

    profile: list[dict[str, Any]] = []
    if settings.profile:
        progress("profile: the Worker again under cProfile (not timed)")
        path = tmp / "worker.prof"
        process = run_stage_process(
            {
                **common,
                "mode": "worker",
                "application_id": names.profile_app,
                "expect": n,
                "state_dir": str(tmp / "profile"),
                "profile": str(path),
            },
        )
        finish_stage_process(process, timeout * 3)
        profile = profile_top(path)

    figures = BenchFigures(
        workload=workload.summary(),
        settings={
            "commit_every": settings.commit_every,
            "commit_interval_ms": settings.commit_interval_ms,
            "batch_size": settings.batch_size,
            "sqlite_events": sqlite_n,
            "bridge_events": bridge_n,
            "latency_seconds": settings.latency_seconds,
            "limit_commits": limit_result["commits"],
            "processor_commits": worker["commits"],
            "processor_aborts": worker["aborts"],
        },
        limit=limit,
        processor=processor,
        processor_peak_rss_bytes=max(int(pair.worker_result["peak_rss_bytes"]) for pair in pairs),
        processor_outcomes={k: v for k, v in worker["counters"].items() if v},
        sqlite=Throughput(reference.events, reference.seconds),
        latency=LatencySummary.of(
            latency.offered_rate,
            latency.achieved_rate,
            latency.expected_visible,
            latency.latencies_ms,
        ),
        restore=Throughput(restored.records, restored.seconds),
        restored_watermarks=restored.watermarks,
        restore_worker_config=Throughput(restored_default.records, restored_default.seconds),
        raw_changelog=Throughput(raw_changelog.records, raw_changelog.seconds),
        bridge=Throughput(bridge.records, bridge.seconds),
        raw_produce=Throughput(raw.records, raw.seconds),
        rss_budget_bytes=settings.rss_budget_mb * 2**20,
        profile=profile,
        latency_commit_ms=spread(latency_worker["commit_ms"]),
        latency_gc_ms=spread(latency.bench_gc_pauses_ms),
        rounds=[pair.as_dict() for pair in pairs],
    )
    return figures, latency.latencies_ms
