"""`seqgate bench --peer-torture`: one input, the Worker and every peer killed on one schedule.

Order: build the workload; create and pre-load the input (not measured); write the
ObjectEvent schema for the peers; then each system in turn through
`seqgate_devtools.bench.peers.torture.torture`. Topics are deleted at the end.
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.topics import TopicSpec, create_topics
from seqgate.schemas.avro_schemas import standalone_schema_json
from seqgate_devtools.bench.peers.catalog import peer_named
from seqgate_devtools.bench.peers.oracle import expected_accepted
from seqgate_devtools.bench.peers.stage import peers_unusable_reason
from seqgate_devtools.bench.peers.torture import (
    Kill,
    TortureResult,
    TortureRun,
    TortureSystem,
    kill_schedule,
    peer_system,
    torture,
    worker_system,
)
from seqgate_devtools.bench.runner import delete_topics, preload, progress
from seqgate_devtools.bench.stage_process import stage_timeout
from seqgate_devtools.bench.workload import WorkloadSpec, build_workload

__all__ = ["TortureReport", "run_peer_torture"]


@dataclass(frozen=True, slots=True)
class TortureReport:
    results: list[TortureResult]
    schedule: list[Kill]
    workload: dict[str, object]

    def as_json(self) -> dict[str, object]:
        return {
            "workload": self.workload,
            "kill_schedule": [
                {"share": kill.share, "delay_s": kill.delay_s} for kill in self.schedule
            ],
            "systems": [result.as_dict() for result in self.results],
        }


def run_peer_torture(
    kafka: KafkaSettings,
    spec: WorkloadSpec,
    peers: Sequence[str],
    *,
    kills: int,
    commit_interval_ms: int,
    keep_topics: bool = False,
) -> TortureReport:
    workload = build_workload(spec)
    prefix = f"seqgate-bench-{uuid.uuid4().hex[:8]}"
    input_topic = f"{prefix}-torture-in"
    admin = AdminClient(client_config(kafka))
    create_topics(admin, [TopicSpec(input_topic, spec.partitions, broker_time=True)])
    schedule = kill_schedule(spec.seed, kills)
    results: list[TortureResult] = []
    try:
        progress(f"torture: pre-loading {len(workload):,} records into {input_topic}")
        preload(kafka, input_topic, workload.records)
        with tempfile.TemporaryDirectory(prefix="seqgate-torture-") as tmp:
            workdir = Path(tmp)
            schema = workdir / "object_event.avsc"
            schema.write_text(standalone_schema_json("object_event.avsc"))
            run = TortureRun(
                kafka=kafka,
                input_topic=input_topic,
                partitions=spec.partitions,
                commit_interval_ms=commit_interval_ms,
                schema=schema,
                workdir=workdir,
                prefix=prefix,
                expected=expected_accepted(workload),
                schedule=schedule,
                timeout_s=stage_timeout(len(workload)),
                progress=progress,
            )
            for system in _systems(kafka, peers):
                if isinstance(system, TortureResult):
                    results.append(system)
                    continue
                progress(f"torture {system.framework}: {kills} kills, then to the end")
                results.append(torture(run, system))
                progress(f"torture {system.framework}: {_outcome(results[-1])}")
    finally:
        if not keep_topics:
            delete_topics(admin, prefix)
    return TortureReport(results, schedule, workload.summary())


def _systems(kafka: KafkaSettings, peers: Sequence[str]) -> list[TortureSystem | TortureResult]:
    systems: list[TortureSystem | TortureResult] = [worker_system()]
    unusable = peers_unusable_reason(kafka)
    for name in peers:
        kind = peer_named(name)
        system = peer_system(kind, progress) if unusable is None else unusable
        if isinstance(system, str):
            systems.append(TortureResult(kind.name, kind.framework, problem=f"not run: {system}"))
        else:
            systems.append(system)
    return systems


def _outcome(result: TortureResult) -> str:
    if result.verdict is None:
        return str(result.problem)
    verdict = result.verdict
    return (
        f"{result.kills} kills; missing {verdict.missing}, duplicated {verdict.duplicated},"
        f" unexpected {verdict.unexpected} of {verdict.expected:,}"
    )
