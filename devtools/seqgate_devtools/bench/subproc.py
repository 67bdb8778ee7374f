"""A measured stage in its own process: the pass-through limit or the real Worker.

Run as ``python -m seqgate_devtools.bench.subproc '<json spec>'``. The process runs until
``expect`` input records are committed (``expect`` 0: until its stdin closes),
prints progress on stderr and one JSON line on stdout: the first-record and
last-commit instants (its monotonic clock), the records committed, the number
of commits, its peak RSS and, for the worker, the outcome counters. A separate
process keeps the stage's peak RSS its own and its CPU apart from the bench's.
"""

from __future__ import annotations

import cProfile
import json
import os
import resource
import sys
import threading
import time
from pathlib import Path
from typing import Any

from seqgate.runtime.kafka_settings import DEFAULT_TIMEOUT_S, KafkaSettings, build_settings
from seqgate.runtime.schema_registry import RegistrySettings, connect
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.streams.worker.processor import Worker, WorkerConfig
from seqgate_devtools.bench.limit import PassThroughConfig, StageClock, run_pass_through


class _Progress:
    def __init__(self, label: str, expect: int) -> None:
        self._label = label
        self._expect = expect
        self._next = time.monotonic() + 2.0

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if self._expect > 0 and now >= self._next:
            self._next = now + 2.0
            print(f"[bench] {self._label}: {done:,}/{self._expect:,} committed", file=sys.stderr)


class TimedWorker(Worker):
    """The real Worker, noting its first record and stopping after `expect` commits.

    It listens through overridden steps rather than `on_commit`, which would make
    the worker keep one decision object per record.
    """

    def __init__(
        self, config: WorkerConfig, clock: StageClock, expect: int, stop: threading.Event
    ) -> None:
        super().__init__(config)
        self.clock = clock
        self._expect = expect
        self._stop = stop
        self._progress = _Progress("processor", expect)
        self.commit_ms: list[float] = []  # each commit step's duration, for the latency stage

    def _begin(self) -> None:
        if self.clock.first_record is None:
            self.clock.first_record = time.monotonic()
        super()._begin()

    def _commit(self) -> None:
        started = time.monotonic()
        super()._commit()
        self.commit_ms.append((time.monotonic() - started) * 1000)
        clock = self.clock
        clock.committed = self.committed_records
        clock.commits = self.commits
        clock.last_commit = time.monotonic()
        self._progress(clock.committed)
        if self._expect > 0 and clock.committed >= self._expect:
            self._stop.set()


def stage_kafka() -> KafkaSettings:
    """The bench's Kafka settings, given in this process's environment."""
    return build_settings(
        os.environ["SEQGATE_BOOTSTRAP_SERVERS"],
        environ=os.environ,
        timeout_s=float(os.environ.get("SEQGATE_KAFKA_TIMEOUT", DEFAULT_TIMEOUT_S)),
    )


def worker_config(spec: dict[str, Any]) -> WorkerConfig:
    return WorkerConfig(
        kafka=stage_kafka(),
        state_dir=Path(spec["state_dir"]),
        application_id=spec["application_id"],
        instance_id="bench-0",
        input_topic=spec["input_topic"],
        outbox_topic=spec["outbox_topic"],
        rejected_topic=spec["rejected_topic"],
        commit_every=spec["commit_every"],
        commit_interval_ms=spec["commit_interval_ms"],
        batch_size=spec["batch_size"],
        extra_consumer_config=spec.get("extra_consumer_config", {}),
        extra_producer_config=spec.get("extra_producer_config", {}),
        framing=registry_framing(spec),
        engine=spec.get("engine", "compiled"),
    )


def registry_framing(spec: dict[str, Any]) -> Framing:
    """The stage's framing: through the registry of `schema_registry_url`, if any. A
    `mock://` registry lives in one process, so the input's schema is registered here
    first: the in-memory registry then gives it the id the bench framed the input with
    (checked, as it holds for a real registry too)."""
    url = spec.get("schema_registry_url")
    if url is None:
        return SINGLE_OBJECT
    framing = connect(RegistrySettings(url))
    header = framing.header(OBJECT_EVENT, spec["input_topic"])
    if int.from_bytes(header[1:], "big") != spec["input_schema_id"]:
        raise RuntimeError(
            f"the registry gave the input's schema id {int.from_bytes(header[1:], 'big')},"
            f" the bench framed it with {spec['input_schema_id']}"
        )
    return framing


def run(spec: dict[str, Any]) -> dict[str, Any]:
    stop = threading.Event()
    expect = int(spec["expect"])
    if expect <= 0:

        def stop_at_eof() -> None:
            sys.stdin.buffer.read()
            stop.set()

        threading.Thread(target=stop_at_eof, daemon=True).start()
    clock = StageClock()
    profiler = cProfile.Profile() if spec.get("profile") else None
    counters: dict[str, int] = {}
    aborts = 0
    commit_ms: list[float] = []
    if spec["mode"] == "limit":
        config = PassThroughConfig(
            kafka=stage_kafka(),
            input_topic=spec["input_topic"],
            output_topic=spec["output_topic"],
            group_id=spec["application_id"],
            transactional_id=f"{spec['application_id']}-limit",
            batch_size=spec["batch_size"],
            commit_every=spec["commit_every"],
            commit_interval_ms=spec["commit_interval_ms"],
        )
        run_pass_through(config, stop, expect, clock)
    else:
        worker = TimedWorker(worker_config(spec), clock, expect, stop)
        if profiler is not None:
            profiler.enable()
        try:
            worker.run(stop)
        finally:
            if profiler is not None:
                profiler.disable()
                profiler.dump_stats(spec["profile"])
        counters = worker.counters.totals()
        aborts = worker.aborts
        commit_ms = worker.commit_ms
    return {
        "first_record": clock.first_record,
        "last_commit": clock.last_commit,
        "committed": clock.committed,
        "commits": clock.commits,
        "aborts": aborts,
        "counters": counters,
        "commit_ms": [round(ms, 2) for ms in commit_ms],
        "peak_rss_bytes": peak_rss_bytes(),
    }


def peak_rss_bytes() -> int:
    """This process image's peak resident set (VmHWM).

    Not ``getrusage().ru_maxrss``: Linux keeps that across ``fork`` + ``exec``, so
    a stage started by the bench would report the bench's own size (it holds the
    whole pre-serialized workload) whenever that is the larger. VmHWM belongs to
    the address space, which ``exec`` replaces.
    """
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024  # kB
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # not Linux


def main(argv: list[str]) -> int:
    result = run(json.loads(argv[1]))
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
