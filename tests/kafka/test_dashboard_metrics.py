"""Every metric the Grafana dashboard (deploy/grafana/seqgate.json) queries is exported by a
real worker or a real HTTP bridge, so the dashboard cannot drift from the code."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

import pytest
from confluent_kafka import Producer

from seqgate.connectors.publish.filters import EventFilter
from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.streams.worker.processor import Worker
from tests.support import dashboard
from tests.support.http_bridge import MINIO_TOKEN, Topicset, http_bridge, put, scenario
from tests.support.kafka_helpers import caught_up, make_config, running, wait_for
from tests.support.metrics_scrape import get, samples


def exported(text: str) -> set[str]:
    return {name for name, _ in samples(text)}


def used_by_dashboard() -> set[str]:
    return {
        name
        for expr in dashboard.expressions(dashboard.load())
        for name in dashboard.metric_names(expr)
    }


@pytest.mark.kafka
def test_every_metric_of_the_dashboard_is_exported(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    used = used_by_dashboard()
    config = make_config(kafka_bootstrap, unique_name, tmp_path, metrics_port=0)
    config = dataclasses.replace(config, standby_replicas=1)
    # Two workers in the group: each keeps standbys of the other's partitions (the standby
    # series) and takes partitions over from it (the takeover ones). Which of them decides
    # the events below depends on the assignment, so the series are read from both.
    other = dataclasses.replace(config, instance_id="w1", state_dir=tmp_path / "w1")
    workers = [Worker(config), Worker(other)]
    urls = [metrics_url(worker) for worker in workers]
    with running(workers[0]) as run, running(workers[1]) as other_run:
        # The bridge publishes into the worker's input: one accepted event, one rejected record
        # and one failed authentication; an undecodable record gives the worker a rejection
        # of its own: every labelled series the dashboard reads then exists.
        topics = Topicset(kafka_bootstrap, config.input_topic, config.rejected_topic)
        from_bridge = bridge_series(topics)
        producer = Producer({"bootstrap.servers": kafka_bootstrap})
        producer.produce(config.input_topic, key=b"s3://b/garbage", value=b"not avro")
        assert producer.flush(30) == 0
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")

        def missing() -> set[str]:
            return used - from_bridge - set().union(*(exported(get(url)[1]) for url in urls))

        # The lag gauge is sampled by the loop, not counted with the commit: wait for it.
        with contextlib.suppress(AssertionError):
            wait_for(lambda: not missing(), 30, "the worker's series")
        assert not missing(), f"the dashboard queries metrics nothing exports: {missing()}"
    assert not run.errors, run.errors
    assert not other_run.errors, other_run.errors
    assert used >= {"seqgate_worker_decisions_total", "seqgate_bridge_records_total"}


def metrics_url(worker: Worker) -> str:
    server = worker.metrics.server
    assert server is not None
    return f"http://127.0.0.1:{server.port}/metrics"


def bridge_series(topics: Topicset) -> set[str]:
    texts: list[str] = []

    async def body() -> None:
        async with http_bridge(
            topics, HttpSettings(minio_token=MINIO_TOKEN), EventFilter()
        ) as server:
            assert (await server.post("s3", put("a.txt", "1")))[0] == 200
            assert (await server.post("s3", b'{"Records": ['))[0] == 200  # a rejected record
            assert (await server.post("minio", put("b.txt", "2")))[0] == 401
            async with server.session.get("/metrics") as response:
                assert response.status == 200
                texts.append(await response.text())

    scenario(body)
    return exported(texts[0])
