"""Prometheus metrics, /healthz and /readyz of the worker and the HTTP bridge (real broker)."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Producer
from seqgate_devtools.samples import s3_notification, s3_record, to_text

from seqgate.connectors.publish.filters import EventFilter
from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.worker.processor import Worker
from tests.support.events import s3_event
from tests.support.http_bridge import MINIO_AUTH, MINIO_TOKEN, Topicset, http_bridge, scenario
from tests.support.http_bridge import topics as topics  # the fixture
from tests.support.kafka_helpers import caught_up, make_config, produce_events, running, wait_for
from tests.support.metrics_scrape import Samples, get, samples


def total(found: Samples, name: str, **labels: str) -> float:
    return sum(
        value
        for (sample, sample_labels), value in found.items()
        if sample == name and all((k, v) in sample_labels for k, v in labels.items())
    )


# ---- the worker ----------------------------------------------------------------------------------


def removed(sequencer: str) -> ObjectEvent:
    return s3_event(sequencer, event_name="ObjectRemoved:DeleteMarkerCreated")


@pytest.mark.kafka
def test_worker_metrics_match_its_counters(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path, metrics_port=0)
    worker = Worker(config)
    server = worker.metrics.server
    assert server is not None
    base = f"http://127.0.0.1:{server.port}"
    # Constructed, not running: alive (just started) but not ready.
    assert get(f"{base}/healthz")[0] == 200
    assert get(f"{base}/readyz")[0] == 503

    with running(worker) as run:
        wait_for(lambda: get(f"{base}/readyz")[0] == 200, 60, "the worker to be ready")
        # accepted, duplicate, stale, filtered (removed is not admitted), and one
        # undecodable record (rejected).
        produce_events(
            kafka_bootstrap,
            config.input_topic,
            [s3_event("f"), s3_event("F"), s3_event("e"), s3_event("f1"), removed("f2")],
        )
        producer = Producer({"bootstrap.servers": kafka_bootstrap})
        producer.produce(config.input_topic, key=b"s3://b/garbage", value=b"not avro")
        assert producer.flush(30) == 0
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")

        def metrics_match() -> bool:
            found = samples(get(f"{base}/metrics")[1])
            totals = worker.counters.totals()
            return sum(totals.values()) == 6 and all(
                total(found, "seqgate_worker_decisions_total", outcome=outcome) == count
                for outcome, count in totals.items()
            )

        wait_for(metrics_match, 30, "the decision counters to match the worker's")
        found = samples(get(f"{base}/metrics")[1])
        assert worker.counters.totals() == {
            "accepted": 2,
            "duplicate": 1,
            "stale": 1,
            "late": 0,
            "filtered": 1,
            "ignored": 0,
            "rejected": 1,
        }
        for partition, counts in worker.counters.per_partition().items():
            for outcome, count in counts.items():
                assert count == total(
                    found,
                    "seqgate_worker_decisions_total",
                    partition=str(partition),
                    outcome=outcome,
                )
        assert total(found, "seqgate_worker_decisions_total", kind="created") == 4
        assert total(found, "seqgate_worker_decisions_total", kind="removed") == 1
        assert total(found, "seqgate_worker_rejected_total", reason="undecodable_event") == 1
        assert total(found, "seqgate_worker_commit_seconds_count") == worker.commits > 0
        assert total(found, "seqgate_worker_transaction_commits_total") == worker.commits
        assert total(found, "seqgate_worker_transaction_aborts_total") == 0
        assert total(found, "seqgate_worker_assigned_partitions") == 3
        assert total(found, "seqgate_worker_partitions_restoring") == 0

        def lag_is_zero() -> bool:
            lags = {
                labels: value
                for (name, labels), value in samples(get(f"{base}/metrics")[1]).items()
                if name == "seqgate_worker_consumer_lag"
            }
            return len(lags) == 3 and all(value == 0 for value in lags.values())

        wait_for(lag_is_zero, 30, "the lag of every partition to be 0")
        assert get(f"{base}/healthz")[0] == 200
    assert not run.errors, run.errors
    # Stopped: the endpoint is gone with the worker.
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{base}/healthz", timeout=5)


@pytest.mark.kafka
def test_restore_is_counted(kafka_bootstrap: str, unique_name: str, tmp_path: Path) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path, metrics_port=0)
    produce_events(
        kafka_bootstrap, config.input_topic, [s3_event("f", key=f"k{n}") for n in range(3)]
    )
    with running(Worker(config)):
        wait_for(caught_up(kafka_bootstrap, config), 60, "the first worker")
    # The same instance (static membership: it takes every partition back at once)
    # on an empty state directory restores the changelog: 3 watermarks.
    fresh = make_config(kafka_bootstrap, unique_name, tmp_path / "fresh", metrics_port=0)
    second = Worker(fresh)
    server = second.metrics.server
    assert server is not None
    with running(second):
        base = f"http://127.0.0.1:{server.port}"
        wait_for(lambda: get(f"{base}/readyz")[0] == 200, 60, "the second worker to be ready")
        found = samples(get(f"{base}/metrics")[1])
        assert total(found, "seqgate_worker_restored_records_total") == 3
        assert total(found, "seqgate_worker_partitions_restoring") == 0


# ---- the HTTP bridge -----------------------------------------------------------------------------


def put(key: str, sequencer: str) -> bytes:
    return to_text(s3_notification(s3_record(key=key, sequencer=sequencer))).encode()


@pytest.mark.kafka
def test_http_bridge_metrics_count_published_and_auth_failures(topics: Topicset) -> None:
    async def body() -> None:
        settings = HttpSettings(minio_token=MINIO_TOKEN)
        async with http_bridge(topics, settings, EventFilter()) as server:
            assert (await server.post("s3", put("a.txt", "1")))[0] == 200
            assert (await server.post("s3", b'{"Records": ['))[0] == 200  # a rejected record
            assert (await server.post("minio", put("b.txt", "2")))[0] == 401
            wrong = {"Authorization": "Bearer wrong"}
            assert (await server.post("minio", put("b.txt", "2"), wrong))[0] == 403
            assert (await server.post("minio", put("b.txt", "2"), MINIO_AUTH))[0] == 200
            async with server.session.get("/metrics") as response:
                assert response.status == 200
                found = samples(await response.text())
            async with server.session.get("/healthz") as response:
                assert response.status == 200
            async with server.session.get("/readyz") as response:
                assert response.status == 200
        assert total(found, "seqgate_bridge_records_total", outcome="published") == 2
        assert total(found, "seqgate_bridge_records_total", outcome="rejected") == 1
        assert total(found, "seqgate_bridge_rejected_total", reason="malformed_json") == 1
        assert total(found, "seqgate_bridge_auth_failures_total", route="minio") == 2
        assert total(found, "seqgate_bridge_auth_failures_total", route="s3") == 0
        assert total(found, "seqgate_bridge_messages_total") == 3

    scenario(body)
