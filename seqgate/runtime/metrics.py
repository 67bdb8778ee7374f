"""Prometheus metrics and liveness/readiness endpoints of the worker and the bridges.

Every worker or bridge owns a :class:`prometheus_client.CollectorRegistry` of its
own (never the global one: tests run several workers in one process). A small
:class:`MetricsServer` thread serves ``/metrics``, ``/healthz`` and ``/readyz``, so
a scrape never blocks the transactional loop; the loop only increments counters
and sets gauges.

* ``/healthz`` (alive): 200 while the loop turns (it has come round within the
  liveness timeout) and has not stopped; 503 otherwise.
* ``/readyz`` (ready): 200 once the worker has joined its group and restored the
  partitions it was given (for a bridge: once its producer reaches Kafka); 503
  before, while restoring, after losing its partitions and once stopping.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from confluent_kafka import Consumer, KafkaException, TopicPartition
from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector

from seqgate.schemas.outcomes import Outcome

log = logging.getLogger(__name__)

__all__ = [
    "BridgeMetrics",
    "HealthState",
    "MetricsServer",
    "TallyCollector",
    "WorkerMetrics",
]

# Commit step durations: a commit is tens of milliseconds on a healthy broker.
_COMMIT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_TAKEOVER_BUCKETS = (0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 300.0)


class HealthState:
    """Whether the owner is alive (its loop turns) and ready (it can do its work)."""

    def __init__(self, alive_timeout_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.alive_timeout_s = alive_timeout_s
        self._clock = clock
        self._last_beat = clock()
        self._ready = False
        self._not_ready_because = "starting"
        self._stopped = False

    def beat(self) -> None:
        """The loop came round."""
        self._last_beat = self._clock()

    def set_ready(self, ready: bool, because: str = "") -> None:
        self._ready = ready
        self._not_ready_because = because

    def stop(self) -> None:
        self._stopped = True
        self._ready = False
        self._not_ready_because = "stopped"

    def alive(self) -> tuple[bool, str]:
        if self._stopped:
            return False, "stopped"
        silent = self._clock() - self._last_beat
        if silent > self.alive_timeout_s:
            return False, f"the loop has not turned for {silent:.0f}s"
        return True, "alive"

    def ready(self) -> tuple[bool, str]:
        if self._ready and not self._stopped:
            return True, "ready"
        return False, self._not_ready_because or "not ready"


class MetricsServer:
    """``/metrics``, ``/healthz`` and ``/readyz`` from a daemon thread (port 0: a free one)."""

    def __init__(
        self,
        registry: CollectorRegistry,
        health: HealthState,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        ready_check: Callable[[], tuple[bool, str]] | None = None,
    ) -> None:
        check = ready_check or health.ready

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.split("?", 1)[0]
                if path == "/metrics":
                    self._send(200, generate_latest(registry), CONTENT_TYPE_LATEST)
                elif path in ("/healthz", "/readyz"):
                    ok, why = health.alive() if path == "/healthz" else check()
                    self._send(200 if ok else 503, (why + "\n").encode(), "text/plain")
                else:
                    self._send(404, b"not found\n", "text/plain")

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                return None  # scrapes are not worth a log line

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self.host = host
        self.port = int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="seqgate-metrics", daemon=True
        )
        self._thread.start()
        log.info("metrics served", extra={"address": f"http://{host}:{self.port}/metrics"})

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(5)


Tally = dict[tuple[int, Outcome, str | None, str | None], int]
"""Decisions of one transaction counted by (input partition, outcome, event kind,
reject reason): what the worker reports per commit instead of one object per record."""


class _ServedMetrics:
    """A registry of its own, the health it reports and the server that serves both."""

    def __init__(self, alive_timeout_s: float) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.health = HealthState(alive_timeout_s)
        self.server: MetricsServer | None = None

    def serve(
        self,
        host: str,
        port: int,
        ready_check: Callable[[], tuple[bool, str]] | None = None,
    ) -> MetricsServer:
        self.server = MetricsServer(self.registry, self.health, host, port, ready_check=ready_check)
        return self.server

    def close(self) -> None:
        self.health.stop()
        if self.server is not None:
            self.server.close()
            self.server = None


class WorkerMetrics(_ServedMetrics):
    """The worker's metrics, in a registry of its own; counted only for committed work."""

    def __init__(self, instance_id: str, *, alive_timeout_s: float = 120.0) -> None:
        super().__init__(alive_timeout_s)
        r = self.registry
        self.decisions = Counter(
            "seqgate_worker_decisions",
            "Committed decisions per input partition, outcome and event kind.",
            ["partition", "outcome", "kind"],
            registry=r,
        )
        self.rejected = Counter(
            "seqgate_worker_rejected",
            "Committed rejected records by reason code.",
            ["reason"],
            registry=r,
        )
        self.commit_seconds = Histogram(
            "seqgate_worker_commit_seconds",
            "Duration of the commit step (changelog, flush, send offsets, commit_transaction).",
            buckets=_COMMIT_BUCKETS,
            registry=r,
        )
        self.commits = Counter(
            "seqgate_worker_transaction_commits", "Committed transactions.", registry=r
        )
        self.compiled = Counter(
            "seqgate_worker_compiled_records",
            "Committed input records decided by the compiled core (--engine compiled); the"
            " Python step decided the others (docs/processor.md#engines).",
            registry=r,
        )
        self.aborts = Counter(
            "seqgate_worker_transaction_aborts", "Aborted transactions.", registry=r
        )
        self.producer_renewals = Counter(
            "seqgate_worker_producer_renewals",
            "Transactional producers replaced in place (fenced past the transaction"
            " timeout, or hung).",
            registry=r,
        )
        self.lag = Gauge(
            "seqgate_worker_consumer_lag",
            "Readable input records not yet committed, per assigned partition"
            " (last stable offset minus committed offset).",
            ["partition"],
            registry=r,
        )
        self.assigned = Gauge(
            "seqgate_worker_assigned_partitions", "Input partitions assigned.", registry=r
        )
        self.restored = Counter(
            "seqgate_worker_restored_records",
            "Changelog records applied to the state stores by restores.",
            registry=r,
        )
        self.restoring = Gauge(
            "seqgate_worker_partitions_restoring",
            "Partitions whose state is being restored from the changelog.",
            registry=r,
        )
        self.state_rebuilds = Counter(
            "seqgate_worker_state_rebuilds",
            "Partition stores moved aside (or deleted) and rebuilt from the changelog, by reason"
            " (damaged, foreign, recreated, ahead, unrecorded).",
            ["partition", "reason"],
            registry=r,
        )
        self._failover_metrics(r)
        info = Gauge("seqgate_worker_info", "The worker instance.", ["instance_id"], registry=r)
        info.labels(instance_id).set(1)
        self._lag_at = 0.0
        self._restoring = 0

    def _failover_metrics(self, r: CollectorRegistry) -> None:
        """Standby replicas and takeovers (docs/processor.md, "Standby replicas")."""
        self.standby_partitions = Gauge(
            "seqgate_worker_standby_partitions",
            "Standby replicas kept (--standby-replicas): partitions of other workers whose"
            " changelog this worker follows into a local store.",
            registry=r,
        )
        self.standby_lag = Gauge(
            "seqgate_worker_standby_lag",
            "Changelog records a standby store has not applied yet, per partition (what a"
            " takeover of that partition would restore).",
            ["partition"],
            registry=r,
        )
        self.standby_records = Counter(
            "seqgate_worker_standby_records",
            "Changelog records applied to standby stores.",
            registry=r,
        )
        self.restore_remaining = Gauge(
            "seqgate_worker_restore_remaining",
            "Changelog records an assigned partition's restore has yet to read (an upper"
            " bound: compaction and transaction markers leave gaps); 0 once restored.",
            ["partition"],
            registry=r,
        )
        self.takeover_seconds = Histogram(
            "seqgate_worker_takeover_seconds",
            "From a partition's assignment to its first commit here (restore included).",
            buckets=_TAKEOVER_BUCKETS,
            registry=r,
        )

    # ---- the loop's reports

    def committed(self, tally: Tally, seconds: float, compiled: int = 0) -> None:
        self.commits.inc()
        self.compiled.inc(compiled)
        self.commit_seconds.observe(seconds)
        for (partition, outcome, kind, reason), count in tally.items():
            self.decisions.labels(str(partition), outcome.value, kind or "").inc(count)
            if outcome is Outcome.REJECTED:
                self.rejected.labels(reason or "").inc(count)

    def observe_lag(
        self, consumer: Consumer, committed: dict[int, int], *, force: bool = False
    ) -> None:
        """Set the lag gauges (at most once a second unless forced), with local calls only:
        the consumer's position and the partition ends its fetches last reported."""
        now = time.monotonic()
        if not force and now - self._lag_at < 1.0:
            return
        self._lag_at = now
        try:
            assignment = consumer.assignment()
            positions = consumer.position(assignment) if assignment else []
            for tp in positions:
                low, end = consumer.get_watermark_offsets(tp, cached=True)
                if end < 0:
                    continue  # no fetch answered yet
                # The position may pass transaction markers that no commit covers;
                # a partition never read is behind by everything in it.
                done = max(committed.get(tp.partition, -1), tp.offset, low)
                self.lag.labels(str(tp.partition)).set(max(0, end - done))
        except KafkaException as error:
            log.info("lag not measured", extra={"error": error.args[0].str()})

    def restore_started(self, partitions: int) -> None:
        """An assignment: not ready until its partitions are restored."""
        self._restoring += partitions
        self.restoring.set(self._restoring)
        if self._restoring:
            self.health.set_ready(False, f"restoring {self._restoring} partition(s)")
        else:
            self.health.set_ready(True)

    def restore_progress(self, partition: int) -> Callable[[int, int], None]:
        """The progress callback of one partition's restore (``restore_partition``)."""
        counted = 0
        remaining = self.restore_remaining.labels(str(partition))

        def progress(applied: int, total: int) -> None:
            nonlocal counted
            self.restored.inc(applied - counted)
            counted = applied
            remaining.set(max(0, total - applied))
            self.health.beat()  # a long restore is not a dead loop

        return progress

    def restore_done(self, partition: int) -> None:
        self.restore_remaining.labels(str(partition)).set(0)

    def restore_finished(self) -> None:
        self._restoring = max(0, self._restoring - 1)
        self.restoring.set(self._restoring)
        if not self._restoring:
            self.health.set_ready(True)

    def partitions_assigned(self, count: int) -> None:
        self.assigned.set(count)

    def forget_standby(self, partition: int) -> None:
        with contextlib.suppress(KeyError):
            self.standby_lag.remove(str(partition))

    def forget(self, partitions: Iterable[TopicPartition]) -> None:
        for tp in partitions:
            for gauge in (self.lag, self.restore_remaining):
                with contextlib.suppress(KeyError):
                    gauge.remove(str(tp.partition))


class TallyCollector(Collector):
    """``seqgate_bridge_records_total{outcome}`` read from a source's tally at scrape time."""

    def __init__(self, tally: Callable[[], dict[str, int]]) -> None:
        self._tally = tally

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = CounterMetricFamily(
            "seqgate_bridge_records",
            "Records of acknowledged input messages by outcome.",
            labels=["outcome"],
        )
        counts = self._tally()
        for outcome in ("published", "filtered", "ignored", "rejected"):
            family.add_metric([outcome], counts.get(outcome, 0))
        yield family
        messages = CounterMetricFamily(
            "seqgate_bridge_messages", "Input messages acknowledged (published to Kafka)."
        )
        messages.add_metric([], counts.get("messages", 0))
        yield messages


class BridgeMetrics(_ServedMetrics):
    """A bridge's metrics: what became of the records, auth failures by route."""

    def __init__(self, tally: Callable[[], dict[str, int]], *, alive_timeout_s: float = 60.0):
        super().__init__(alive_timeout_s)
        r = self.registry
        r.register(TallyCollector(tally))
        self.rejected = Counter(
            "seqgate_bridge_rejected",
            "Rejected records of acknowledged messages by reason code.",
            ["reason"],
            registry=r,
        )
        self.ignored = Counter(
            "seqgate_bridge_ignored",
            "Ignored records (test events, handshakes) by reason code.",
            ["reason"],
            registry=r,
        )
        self.auth_failures = Counter(
            "seqgate_bridge_auth_failures",
            "Requests refused for failed authentication (401/403), by route.",
            ["route"],
            registry=r,
        )
        self.publish_failures = Counter(
            "seqgate_bridge_publish_failures",
            "Batches Kafka did not acknowledge (answered 503 or retried).",
            registry=r,
        )
