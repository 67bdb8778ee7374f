"""A restore under way, reported (worker/restore_report.py) and read back by `seqgate status`
(tools/standby_status.py, tools/inspect.py) through a real broker; and in `/metrics`."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from confluent_kafka.admin import AdminClient

from seqgate.runtime.kafka_clients import client_config
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.metrics import WorkerMetrics
from seqgate.streams.state.restore import restore_consumer_config
from seqgate.streams.tools.inspect import group_status
from seqgate.streams.tools.standby_status import FRESH_S, RestoreProgress, restores_under_way
from seqgate.streams.worker.config import WorkerConfig
from seqgate.streams.worker.restore_report import REPORT_EVERY_S, RestoreReport
from tests.support.kafka_helpers import make_config, wait_for

pytestmark = pytest.mark.kafka


def restoring(bootstrap: str, config: WorkerConfig) -> dict[int, RestoreProgress]:
    report = group_status(
        KafkaSettings(bootstrap), config.application_id, config.input_topic, config.changelog_topic
    )
    return {row.partition: row.restoring for row in report.partitions if row.restoring}


def under_way(config: WorkerConfig, **freshness: Any) -> dict[int, RestoreProgress]:
    admin = AdminClient(client_config(config.kafka))
    return restores_under_way(admin, config.application_id, config.changelog_topic, 30, **freshness)


def test_a_restore_under_way_is_shown_until_it_ends(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=3)
    consumer = Consumer(restore_consumer_config(config.kafka, config.application_id))
    metrics = WorkerMetrics("w1", alive_timeout_s=60)
    now = [100.0]
    report = RestoreReport(
        consumer,
        metrics,
        changelog_topic=config.changelog_topic,
        partition=1,
        instance_id="w1",
        clock=lambda: now[0],
    )

    def remaining() -> float:
        return metrics.restore_remaining.labels("1")._value.get()  # type: ignore[no-any-return]

    try:
        report.progress(100, 1_000)
        assert remaining() == 900
        expected = {1: RestoreProgress("w1", 1, 900)}
        wait_for(lambda: restoring(kafka_bootstrap, config) == expected, 30, "the first report")
        # Within the second: counted in /metrics, not reported again.
        report.progress(300, 1_000)
        assert remaining() == 700
        now[0] += REPORT_EVERY_S
        report.progress(600, 1_000)
        expected = {1: RestoreProgress("w1", 1, 400)}
        wait_for(lambda: restoring(kafka_bootstrap, config) == expected, 30, "the next report")
        # Older than a few seconds, a report is not shown (its worker may have died).
        later = int(time.time() * 1000) + int(FRESH_S * 1000) + 1_000
        assert not under_way(config, now_ms=later)
        report.finished()
        assert remaining() == 0
        # Shown however old it is, until the restore's end is reported.
        wait_for(lambda: not under_way(config, fresh_s=600), 30, "the end of the restore")
    finally:
        consumer.close()
