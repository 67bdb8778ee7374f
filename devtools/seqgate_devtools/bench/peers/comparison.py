"""`seqgate bench --peers`: the peers inside the bench's alternating rounds.

In each round, after the limit and the Worker, every named peer runs on the same
pre-loaded input into an outbox of its own (`<prefix>-peer-<name>-r<round>-out`). At
the end the Worker's first-round outbox is judged by the same oracle as the peers'.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.schemas.avro_schemas import standalone_schema_json
from seqgate_devtools.bench.peers.catalog import PeerKind, peer_named
from seqgate_devtools.bench.peers.oracle import (
    Verdict,
    event_id_of_outbox,
    expected_accepted,
    judge,
    read_outbox,
)
from seqgate_devtools.bench.peers.stage import PeerRound, PeerStage
from seqgate_devtools.bench.peers.summary import summarize
from seqgate_devtools.bench.workload import Workload

__all__ = ["PeerComparison", "parse_peer_names"]


def parse_peer_names(text: str) -> tuple[str, ...]:
    """`kafka-streams,quix,faust` -> the names, each checked; ValueError names a wrong one."""
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    for name in names:
        peer_named(name)
    if len(set(names)) != len(names):
        raise ValueError(f"a peer is named twice in {text!r}")
    return names


@dataclass
class PeerComparison:
    kinds: Sequence[PeerKind]
    stage: PeerStage
    prefix: str

    @classmethod
    def start(
        cls,
        names: Sequence[str],
        *,
        kafka: KafkaSettings,
        workload: Workload,
        input_topic: str,
        commit_interval_ms: int,
        workdir: Path,
        prefix: str,
        timeout_s: float,
        progress: Callable[[str], None],
    ) -> PeerComparison:
        workdir.mkdir(parents=True, exist_ok=True)
        schema = workdir / "object_event.avsc"
        schema.write_text(standalone_schema_json("object_event.avsc"))
        stage = PeerStage(
            kafka=kafka,
            input_topic=input_topic,
            partitions=workload.spec.partitions,
            commit_interval_ms=commit_interval_ms,
            schema=schema,
            workdir=workdir,
            expected=expected_accepted(workload),
            expected_counts=workload.expected(),
            timeout_s=timeout_s,
            progress=progress,
        )
        return cls([peer_named(name) for name in names], stage, prefix)

    def output_topics(self, rounds: int) -> list[str]:
        return [f"{self._stem(kind, index)}-out" for index in range(rounds) for kind in self.kinds]

    def _stem(self, kind: PeerKind, index: int) -> str:
        return f"{self.prefix}-peer-{kind.name}-r{index}"

    def run_round(self, index: int) -> list[PeerRound]:
        results = []
        for kind in self.kinds:
            self.stage.progress(f"peer {kind.framework}: round {index + 1}")
            result = self.stage.run(kind, self._stem(kind, index))
            if result.throughput is not None:
                self.stage.progress(
                    f"peer {kind.framework}: {result.throughput.rate:,.0f} events/s"
                    f" ({'exact' if result.verdict and result.verdict.exact else 'NOT exact'})"
                )
            else:
                self.stage.progress(f"peer {kind.framework}: {result.problem}")
            results.append(result)
        return results

    def worker_verdict(self, outbox_topic: str) -> Verdict:
        stage = self.stage
        found = read_outbox(stage.kafka, outbox_topic, stage.partitions, event_id_of_outbox)
        return judge(stage.expected, found)

    def summaries(
        self, rounds: Sequence[Sequence[PeerRound]], worker_rates: Sequence[float]
    ) -> list[dict[str, object]]:
        return [
            summary.as_dict()
            for summary in summarize(rounds, worker_rates, self.stage.expected_counts)
        ]
