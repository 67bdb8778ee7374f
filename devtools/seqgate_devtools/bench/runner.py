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
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from seqgate.connectors.publish.publisher import Topics
from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import (
    TopicSpec,
    changelog_topic,
    create_topics,
    pipeline_topics,
)
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.streams.worker.cadence import DEFAULT_COMMIT_EVERY, DEFAULT_COMMIT_INTERVAL_MS
from seqgate_devtools.bench.bridge_stage import bridge_publish, raw_produce
from seqgate_devtools.bench.latency import LatencyPlan, LatencyResult, measure_latency
from seqgate_devtools.bench.machine import environment, profile_top
from seqgate_devtools.bench.pairs import (
    WARMUP,
    Pair,
    measure_pairs,
    median_pair,
    round_application_id,
    round_outbox_topic,
)
from seqgate_devtools.bench.peers.comparison import PeerComparison
from seqgate_devtools.bench.produce import (
    DeliveryErrors,
    bridge_like_producer,
    produce_waiting,
)
from seqgate_devtools.bench.reference_sqlite import ReferenceResult, run_reference
from seqgate_devtools.bench.report import BenchFigures, LatencySummary, Throughput, spread
from seqgate_devtools.bench.restore_stage import (
    WORKER_RESTORE_CONFIG,
    Changelog,
    Restored,
    raw_consume,
    restore_all,
)
from seqgate_devtools.bench.stage_process import (
    finish_stage_process,
    run_stage,
    run_stage_process,
    stage_timeout,
)
from seqgate_devtools.bench.workload import (
    Workload,
    WorkloadSpec,
    build_workload,
    identity_key,
    make_event,
)

_WARMUP_EVENTS = 50
_CALIBRATION_MIN, _CALIBRATION_MAX = 2_000, 150_000


def _fresh_event(obj: int) -> tuple[bytes, bytes]:
    """The first write of object `obj` (beyond the workload's objects: always accepted)."""
    return identity_key(obj), OBJECT_EVENT.encode(make_event(obj, 1))


@dataclass(frozen=True, slots=True)
class BenchSettings:
    spec: WorkloadSpec
    commit_every: int = DEFAULT_COMMIT_EVERY
    commit_interval_ms: int = DEFAULT_COMMIT_INTERVAL_MS
    batch_size: int = 500
    sqlite_events: int = 50_000
    bridge_events: int = 200_000
    latency_seconds: float = 20.0
    rss_budget_mb: int = 512
    profile: bool = False
    keep_topics: bool = False
    rounds: int = 3
    peers: tuple[str, ...] = ()  # seqgate_devtools.bench.peers.catalog names
    warmup: bool = True  # one (limit, Worker) round first, not reported
    engine: str = "compiled"  # the Worker's record step (worker/compiled_step.py)


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
    from seqgate_devtools.broker import KAFKA_VERSION, running_broker

    progress("no broker given: starting a private one (first run downloads Kafka via Maven)")
    with running_broker(progress=progress) as handle:
        yield KafkaSettings(handle.bootstrap_servers), KAFKA_VERSION


@dataclass(frozen=True, slots=True)
class _Pipeline:
    """The topics and application id of one Worker pipeline."""

    application_id: str
    input_topic: str
    outbox_topic: str
    rejected_topic: str

    @classmethod
    def named(cls, stem: str, application_id: str) -> _Pipeline:
        return cls(application_id, f"{stem}-in", f"{stem}-outbox", f"{stem}-rejected")

    def topics(self, partitions: int) -> list[TopicSpec]:
        return pipeline_topics(
            input_topic=self.input_topic,
            outbox_topic=self.outbox_topic,
            rejected_topic=self.rejected_topic,
            application_id=self.application_id,
            partitions=partitions,
        )


class _Names:
    def __init__(self) -> None:
        prefix = self.prefix = f"seqgate-bench-{uuid.uuid4().hex[:8]}"
        self.main = _Pipeline.named(prefix, f"{prefix}-app")
        self.latency = _Pipeline.named(f"{prefix}-lat", f"{prefix}-lat")
        self.limit_out = f"{prefix}-limit-out"
        self.bridge = f"{prefix}-bridge"
        self.bridge_rejected = f"{prefix}-bridge-rejected"
        self.raw = f"{prefix}-raw"
        self.profile_app = f"{prefix}-prof"

    def specs(self, partitions: int, rounds: int) -> list[TopicSpec]:
        specs = self.main.topics(partitions) + self.latency.topics(partitions)
        extra = [self.limit_out, self.bridge, self.bridge_rejected, self.raw]
        specs += [TopicSpec(name, partitions) for name in extra]
        # The later rounds write into outboxes of their own (the oracle reads them), the
        # profile run into the first one; each with a changelog of its own.
        outbox = self.main.outbox_topic
        later = [WARMUP, *range(1, rounds)]
        specs += [TopicSpec(round_outbox_topic(outbox, r), partitions) for r in later]
        app = self.main.application_id
        apps = [self.profile_app] + [round_application_id(app, r) for r in later]
        specs += [TopicSpec(changelog_topic(app), partitions, compacted=True) for app in apps]
        return specs


def preload(kafka: KafkaSettings, topic: str, records: list[tuple[bytes, bytes]]) -> None:
    """Produce the pre-serialized input (keyed, murmur2, like the bridge) and wait for acks."""
    delivery = DeliveryErrors()
    producer = bridge_like_producer(kafka, linger_ms=20)
    next_report = time.monotonic() + 2.0
    for index, (key, value) in enumerate(records):
        produce_waiting(producer, topic, key, value, delivery, poll_s=0.05)
        if time.monotonic() >= next_report:
            next_report = time.monotonic() + 2.0
            progress(f"pre-loading input: {index:,}/{len(records):,}")
    remaining = producer.flush(300)
    if remaining or delivery.errors:
        raise RuntimeError(f"pre-load failed: {remaining} unacknowledged, {delivery.errors[:3]}")


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
            figures, latencies = _measure(_Run(settings, kafka, workload, names, Path(tmp)))
    finally:
        if not settings.keep_topics:
            delete_topics(admin, names.prefix)
    figures.environment = environment(kafka_version)
    figures.settings["total_seconds"] = round(time.monotonic() - started, 1)
    progress(f"done in {time.monotonic() - started:.0f} s ({n:,} events)")
    return BenchRun(figures, latencies)


def delete_topics(admin: AdminClient, prefix: str) -> None:
    """Every topic of this run: the bench's own and those the peers' frameworks created
    (changelogs and repartition topics carry the peer's application id, or contain it)."""
    topics = [name for name in admin.list_topics(timeout=30).topics if prefix in name]
    if not topics:
        return
    for future in admin.delete_topics(topics, request_timeout=30).values():
        with contextlib.suppress(Exception):
            future.result()


@dataclass(frozen=True, slots=True)
class _Run:
    """One run's stages over one workload; `_measure` calls them in order."""

    settings: BenchSettings
    kafka: KafkaSettings
    workload: Workload
    names: _Names
    tmp: Path

    @property
    def common(self) -> dict[str, Any]:
        """What every Worker and limit stage of the main pipeline is given."""
        return {
            "kafka": self.kafka,
            "commit_every": self.settings.commit_every,
            "commit_interval_ms": self.settings.commit_interval_ms,
            "engine": self.settings.engine,
            "batch_size": self.settings.batch_size,
            "input_topic": self.names.main.input_topic,
            "outbox_topic": self.names.main.outbox_topic,
            "rejected_topic": self.names.main.rejected_topic,
        }

    @property
    def timeout(self) -> float:
        return stage_timeout(len(self.workload))

    def preload(self) -> None:
        topic = self.names.main.input_topic
        progress(f"pre-loading {len(self.workload):,} records into {topic} (not measured)")
        preload(self.kafka, topic, self.workload.records)

    def peer_comparison(self) -> PeerComparison | None:
        if not self.settings.peers:
            return None
        return PeerComparison.start(
            self.settings.peers,
            kafka=self.kafka,
            workload=self.workload,
            input_topic=self.names.main.input_topic,
            commit_interval_ms=self.settings.commit_interval_ms,
            workdir=self.tmp / "peers",
            prefix=self.names.prefix,
            timeout_s=self.timeout,
            progress=progress,
        )

    def pairs(self, comparison: PeerComparison | None) -> list[Pair]:
        """The (limit, Worker, peers) rounds; the Worker's must all decide the same."""
        timeout = self.timeout
        pairs = measure_pairs(
            lambda stage: run_stage(stage, timeout),
            self.common,
            application_id=self.names.main.application_id,
            limit_output_topic=self.names.limit_out,
            expect=len(self.workload),
            rounds=self.settings.rounds,
            state_root=self.tmp,
            progress=progress,
            peers=comparison.run_round if comparison else None,
            warmup=self.settings.warmup,
        )
        for pair in pairs:
            counters = {k: v for k, v in pair.worker_result["counters"].items() if v}
            if counters != {k: v for k, v in pairs[0].worker_result["counters"].items() if v}:
                raise RuntimeError(f"the rounds' workers decided differently: {counters}")
        return pairs

    def sqlite_reference(self) -> tuple[int, ReferenceResult]:
        """(events, result) of the guide's SQLite reference on a prefix of the workload."""
        sqlite_n = min(len(self.workload), self.settings.sqlite_events)
        progress(f"sqlite reference: {sqlite_n:,} events, one transaction each")
        reference = run_reference(
            (value for _, value in self.workload.records[:sqlite_n]),
            self.tmp / "reference.sqlite",
            progress=lambda done: (
                progress(f"sqlite reference: {done:,}/{sqlite_n:,}") if done % 20_000 == 0 else None
            ),
        )
        expected = self.workload.expected(sqlite_n)
        if reference.outcomes.get("queued", 0) != expected["accepted"]:
            raise RuntimeError(f"the SQLite reference decided {reference.outcomes}, not {expected}")
        return sqlite_n, reference

    def restore(self) -> tuple[Throughput, Restored, Restored]:
        """(raw consume, restore, restore with the worker's fetch settings) of the changelog."""
        progress("restore: raw consume of the changelog, then restore_partition into fresh stores")
        changelog = Changelog(
            self.kafka,
            changelog_topic(self.names.main.application_id),
            self.settings.spec.partitions,
        )
        input_topic = self.names.main.input_topic
        raw = raw_consume(changelog)
        restored = restore_all(changelog, self.tmp / "restore", input_topic)
        worker_config = replace(changelog, extra=WORKER_RESTORE_CONFIG)
        restored_default = restore_all(worker_config, self.tmp / "restore-default", input_topic)
        return raw, restored, restored_default

    def bridge(self) -> tuple[int, Throughput, Throughput]:
        """(events, raw produce, bridge) over the first events as raw S3 notifications."""
        workload = self.workload
        bridge_n = min(len(workload), self.settings.bridge_events)
        progress(f"bridge: building {bridge_n:,} raw S3 notifications (not measured)")
        notifications = [workload.notification(i) for i in range(bridge_n)]
        keyed = [(workload.records[i][0], notifications[i]) for i in range(bridge_n)]
        progress("bridge: raw produce, then normalize + EventPublisher")
        raw = raw_produce(self.kafka, self.names.raw, keyed)
        topics = Topics(events=self.names.bridge, rejected=self.names.bridge_rejected)
        return (
            bridge_n,
            raw,
            bridge_publish(self.kafka, topics, notifications, self.settings.engine),
        )

    def latency(self, processor_rate: float) -> tuple[LatencyResult, dict[str, Any]]:
        """Latency through a Worker of its own, at half the rate it sustains in place
        (calibrated with a burst of about two seconds at the isolated `processor_rate`);
        (figures, its result)."""
        spec, workload, names = self.settings.spec, self.workload, self.names
        fresh = spec.identities  # objects beyond the workload's: every event accepted
        warmup = [_fresh_event(fresh + i) for i in range(_WARMUP_EVENTS)]
        burst = max(_CALIBRATION_MIN, min(_CALIBRATION_MAX, int(processor_rate * 2)))
        calibration = [_fresh_event(fresh + _WARMUP_EVENTS + i) for i in range(burst)]
        pipeline = names.latency
        progress(f"latency: starting a Worker on {pipeline.input_topic}")
        process = run_stage_process(
            {
                **self.common,
                "mode": "worker",
                "application_id": pipeline.application_id,
                "expect": 0,
                "input_topic": pipeline.input_topic,
                "outbox_topic": pipeline.outbox_topic,
                "rejected_topic": pipeline.rejected_topic,
                "state_dir": str(self.tmp / "latency"),
            },
        )
        try:
            plan = LatencyPlan(
                records=workload.records,
                expected_accepted=lambda count: workload.expected(count)["accepted"],
                calibration=calibration,
                seconds=self.settings.latency_seconds,
                commit_interval_ms=self.settings.commit_interval_ms,
            )
            latency = measure_latency(
                self.kafka,
                pipeline.input_topic,
                pipeline.outbox_topic,
                warmup=warmup,
                plan=plan,
                progress=progress,
            )
        finally:
            # End of input stops the open-ended worker: it commits and exits.
            assert process.stdin is not None
            process.stdin.close()
            process.stdin = None
        return latency, finish_stage_process(process, 120)

    def profile(self) -> list[dict[str, Any]]:
        """The top of a cProfile run of the Worker (empty unless asked for)."""
        if not self.settings.profile:
            return []
        progress("profile: the Worker again under cProfile (not timed)")
        path = self.tmp / "worker.prof"
        process = run_stage_process(
            {
                **self.common,
                "mode": "worker",
                "application_id": self.names.profile_app,
                "expect": len(self.workload),
                "state_dir": str(self.tmp / "profile"),
                "profile": str(path),
            },
        )
        finish_stage_process(process, self.timeout * 3)
        return profile_top(path)


def _measure(run: _Run) -> tuple[BenchFigures, list[float]]:
    settings = run.settings
    run.preload()
    comparison = run.peer_comparison()
    pairs = run.pairs(comparison)
    chosen = median_pair(pairs)
    peers: list[dict[str, Any]] = []
    worker_verdict: dict[str, object] = {}
    if comparison is not None:
        peers = comparison.summaries(
            [pair.peers for pair in pairs], [pair.processor.rate for pair in pairs]
        )
        worker_verdict = comparison.worker_verdict(run.names.main.outbox_topic).as_dict()
    worker = chosen.worker_result
    sqlite_n, reference = run.sqlite_reference()
    raw_changelog, restored, restored_default = run.restore()
    bridge_n, raw, bridge = run.bridge()
    latency, latency_worker = run.latency(chosen.processor.rate)
    profile = run.profile()
    figures = BenchFigures(
        workload=run.workload.summary(),
        settings={
            "engine": settings.engine,
            "commit_every": settings.commit_every,
            "commit_interval_ms": settings.commit_interval_ms,
            "batch_size": settings.batch_size,
            "sqlite_events": sqlite_n,
            "bridge_events": bridge_n,
            "latency_seconds": settings.latency_seconds,
            "warmup_round": settings.warmup,
            "rounds": settings.rounds,
            "limit_commits": chosen.limit_result["commits"],
            "processor_commits": worker["commits"],
            "processor_aborts": worker["aborts"],
        },
        limit=chosen.limit,
        processor=chosen.processor,
        processor_peak_rss_bytes=max(int(pair.worker_result["peak_rss_bytes"]) for pair in pairs),
        processor_outcomes={k: v for k, v in worker["counters"].items() if v},
        sqlite=Throughput(reference.events, reference.seconds),
        latency=LatencySummary.of(
            latency.offered_rate,
            latency.achieved_rate,
            latency.expected_visible,
            latency.latencies_ms,
            capacity_rate=latency.capacity_rate,
            drain_s=latency.drain_s,
            sustained=latency.sustained,
        ),
        restore=restored.throughput,
        restored_watermarks=restored.watermarks,
        restore_worker_config=restored_default.throughput,
        raw_changelog=raw_changelog,
        bridge=bridge,
        raw_produce=raw,
        rss_budget_bytes=settings.rss_budget_mb * 2**20,
        profile=profile,
        latency_commit_ms=spread(latency_worker["commit_ms"]),
        latency_gc_ms=spread(latency.bench_gc_pauses_ms),
        rounds=[pair.as_dict() for pair in pairs],
        peers=peers,
        processor_verdict=worker_verdict,
    )
    return figures, latency.latencies_ms
