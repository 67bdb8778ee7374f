"""`seqgate bench --vary SETTING`: the Worker with one setting changed, side by side.

The default Worker and one Worker per `--vary` run in turn on the same
pre-loaded input, `--rounds` times in alternating order (fresh group,
changelog and state each time); each variant is reported as its best round
and as a ratio of the default's best round, measured in the same run. A
setting is written `producer.<librdkafka key>=<value>`,
`consumer.<librdkafka key>=<value>`, `batch-size=<records>`, `commit-every=<records>`,
`commit-interval-ms=<ms>`, `engine=python` (the
Worker's record step in Python alone, against the compiled default) or
`schema-registry=<URL>`: the Worker in registry mode, reading an input pre-loaded in
the Confluent wire format (the same events) and writing its outbox in it.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient

from seqgate.runtime.engines import ENGINES
from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.schema_registry import RegistrySettings, connect
from seqgate.runtime.topics import (
    TopicSpec,
    changelog_topic,
    create_topics,
    pipeline_topics,
)
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.wire import SINGLE_OBJECT_HEADER_LEN
from seqgate_devtools.bench.pairs import stage_throughput
from seqgate_devtools.bench.workload import WorkloadSpec, build_workload

DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class Variant:
    label: str
    spec_changes: dict[str, Any]  # merged into the Worker stage's spec

    @property
    def registry_url(self) -> str | None:
        url = self.spec_changes.get("schema_registry_url")
        return None if url is None else str(url)


# The Worker's own settings that --vary takes, by option name: the stage's spec key.
_WHOLE_NUMBER_SETTINGS = {
    "batch-size": "batch_size",
    "commit-every": "commit_every",
    "commit-interval-ms": "commit_interval_ms",
}


def parse_variant(text: str) -> Variant:
    """`producer.linger.ms=0`, `consumer.fetch.wait.max.ms=10`, `batch-size=2000`,
    `commit-every=10000` or `commit-interval-ms=200`.

    Raises ValueError naming the accepted forms."""
    name, sep, value = text.partition("=")
    if not sep or not value:
        raise ValueError(f"--vary {text!r}: expected SETTING=VALUE, e.g. producer.linger.ms=0")
    if name == "schema-registry":
        return Variant(text, {"schema_registry_url": value})
    if name == "engine":
        if value not in ENGINES:
            raise ValueError(f"--vary {text!r}: engine is one of {', '.join(ENGINES)}")
        return Variant(text, {"engine": value})
    spec_key = _WHOLE_NUMBER_SETTINGS.get(name)
    if spec_key is not None:
        if not value.isdigit() or int(value) < 1:
            raise ValueError(f"--vary {text!r}: {name} takes a positive whole number")
        return Variant(text, {spec_key: int(value)})
    client, dot, key = name.partition(".")
    if dot and key and client in ("producer", "consumer"):
        return Variant(text, {f"extra_{client}_config": {key: value}})
    raise ValueError(
        f"--vary {text!r}: expected producer.<key>=<value>, consumer.<key>=<value>"
        " (librdkafka settings), batch-size=<records>, commit-every=<records>,"
        " commit-interval-ms=<ms>, engine=python|compiled"
        " or schema-registry=<URL>"
    )


@dataclass(frozen=True, slots=True)
class VariantResult:
    label: str
    rates: list[float]  # events/s, one per round

    @property
    def best(self) -> float:
        return max(self.rates)


def compare_variants(
    variants: list[Variant],
    *,
    spec: WorkloadSpec,
    common: dict[str, Any],
    kafka: KafkaSettings,
    rounds: int,
    run_stage: Callable[[dict[str, Any]], dict[str, Any]],
    preload: Callable[[KafkaSettings, str, list[tuple[bytes, bytes]]], None],
    progress: Callable[[str], None],
    prefix: str,
) -> list[VariantResult]:
    """Run the default Worker and every variant `rounds` times, alternating."""
    every = [Variant(DEFAULT, {}), *variants]
    apps = [f"{prefix}-v{index}-r{r}" for index in range(len(every)) for r in range(rounds)]
    names = pipeline_topics(
        input_topic=f"{prefix}-in",
        outbox_topic=f"{prefix}-outbox",
        rejected_topic=f"{prefix}-rejected",
        application_id=apps[0],
        partitions=spec.partitions,
    ) + [TopicSpec(changelog_topic(app), spec.partitions, compacted=True) for app in apps[1:]]
    registered = {v.registry_url: f"{prefix}-sr{i}" for i, v in enumerate(every) if v.registry_url}
    for stem in registered.values():
        names += [TopicSpec(f"{stem}-{role}", spec.partitions) for role in _REGISTRY_TOPICS]
    admin = AdminClient(client_config(kafka))
    create_topics(admin, names)
    try:
        progress(f"building and pre-loading {spec.events:,} events (not measured)")
        workload = build_workload(spec)
        preload(kafka, f"{prefix}-in", workload.records)
        registry_specs: dict[str | None, dict[str, Any]] = {
            url: _preload_framed(url, stem, workload.records, kafka, preload)
            for url, stem in registered.items()
        }
        del workload
        rates: dict[str, list[float]] = {variant.label: [] for variant in every}
        first: dict[str, dict[str, int]] = {}  # the default's first round's outcome counts
        with tempfile.TemporaryDirectory(prefix="seqgate-bench-vary-") as tmp:
            for r in range(rounds):
                for index, variant in enumerate(every):
                    started = time.monotonic()
                    result = run_stage(
                        {
                            **common,
                            "input_topic": f"{prefix}-in",
                            "outbox_topic": f"{prefix}-outbox",
                            "rejected_topic": f"{prefix}-rejected",
                            "mode": "worker",
                            "application_id": f"{prefix}-v{index}-r{r}",
                            "expect": spec.events,
                            "state_dir": str(Path(tmp) / f"v{index}-r{r}"),
                            **variant.spec_changes,
                            **registry_specs.get(variant.registry_url, {}),
                        }
                    )
                    decided = {k: v for k, v in result["counters"].items() if v}
                    if decided != first.setdefault("counters", decided):
                        raise RuntimeError(
                            f"{variant.label} decided differently from {DEFAULT}: {decided}"
                            f" against {first['counters']}"
                        )
                    rate = stage_throughput(result).rate
                    rates[variant.label].append(rate)
                    progress(
                        f"round {r + 1}/{rounds}: {variant.label}: {rate:,.0f} events/s"
                        f" ({time.monotonic() - started:.0f} s)"
                    )
    finally:
        for future in admin.delete_topics([t.name for t in names], request_timeout=30).values():
            with contextlib.suppress(Exception):
                future.result()
    return [VariantResult(label, values) for label, values in rates.items()]


_REGISTRY_TOPICS = ("in", "outbox", "rejected")


def _preload_framed(
    url: str,
    stem: str,
    records: list[tuple[bytes, bytes]],
    kafka: KafkaSettings,
    preload: Callable[[KafkaSettings, str, list[tuple[bytes, bytes]]], None],
) -> dict[str, Any]:
    """Pre-load `records` (single-object) into `<stem>-in` in the Confluent wire format of
    the registry at `url`; the registry variant's topics and the input's schema id."""
    framing = connect(RegistrySettings(url))
    topic = f"{stem}-in"
    header = framing.header(OBJECT_EVENT, topic)
    framed = [(key, header + value[SINGLE_OBJECT_HEADER_LEN:]) for key, value in records]
    preload(kafka, topic, framed)
    return {
        "input_topic": topic,
        "outbox_topic": f"{stem}-outbox",
        "rejected_topic": f"{stem}-rejected",
        "input_schema_id": int.from_bytes(header[1:], "big"),
    }


def variants_table(results: list[VariantResult]) -> str:
    """One row per variant: best round, ratio to the default's best, every round."""
    default = next(result for result in results if result.label == DEFAULT)
    width = max(len(result.label) for result in results) + 2
    lines = [f"{'worker setting':<{width}}{'best ev/s':>12}{'vs default':>12}   every round"]
    for result in results:
        rounds = ", ".join(f"{rate:,.0f}" for rate in result.rates)
        lines.append(
            f"{result.label:<{width}}{result.best:>12,.0f}"
            f"{result.best / default.best:>11.2f}x   {rounds}"
        )
    return "\n".join(lines)
