"""A worker whose transactional producer is lost replaces it in place (runtime/renewal.py).

The loss is made on purpose here: send_offsets_to_transaction blocks (a fault injected at
FaultPoint.SENDING_OFFSETS), as librdkafka's does when the group coordinator's node goes
away (issues 5456, 5511; that real hang is met on a cluster in
tests/torture/test_cluster_faults.py). The rest is real: the broker, the new producer whose
init_transactions fences the hung one and aborts its open transaction, the rewind, and
verify's exactly-once check.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from seqgate.runtime.faults import FaultPoint, HangAt
from seqgate.streams.tools.verify import verify
from tests.support.events import event
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    produce_events,
    verify_target,
    wait_for,
    worker_thread,
)

pytestmark = pytest.mark.kafka

RENEWED = "a new producer replaces the lost one"


def test_a_worker_whose_send_offsets_hangs_renews_its_producer_and_loses_nothing(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # --kafka-timeout 3 s: send_offsets is declared hung after 3 + 5 s.
    config = make_config(kafka_bootstrap, unique_name, tmp_path, kafka_timeout_s=3.0)
    events = [event(f"k{n % 150}.txt", str(10 + n)) for n in range(600)]
    produce_events(kafka_bootstrap, config.input_topic, events)
    release = threading.Event()
    hang = HangAt(FaultPoint.SENDING_OFFSETS, release)
    try:
        with (
            caplog.at_level(logging.WARNING, logger="seqgate.runtime.session"),
            worker_thread(config, faults=hang) as run,
        ):
            wait_for(caught_up(kafka_bootstrap, config), 90, "the worker's new producer")
            assert run.errors == [], run.errors
            renewals = run.worker.metrics.registry.get_sample_value(
                "seqgate_worker_producer_renewals_total"
            )
            assert renewals == 1
    finally:
        release.set()  # the hung call may end now: its producer was fenced long ago
    assert hang.hung == 1
    renewed = [r for r in caplog.records if RENEWED in r.getMessage()]
    assert len(renewed) == 1, [r.getMessage() for r in caplog.records]
    assert "hung past 8 s" in renewed[0].cause  # type: ignore[attr-defined]
    report = verify(verify_target(config))
    assert report.ok(), report.as_dict()
    assert report.totals()["inputs"] == 600
