"""Issue 5: the broker dies while the HTTP and SQS sources are receiving, then comes back.

A private broker (killed with SIGKILL, restarted on the same data and ports by
seqgate_devtools.broker.bounce) serves both bridges; the scenario, and what must hold
after it, is tests/support/bridge_outage.py (the cluster's variant, two of three nodes
down, is in tests/torture/test_cluster_faults.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from seqgate_devtools.broker.bounce import kill_broker, restart_broker

from tests.support.bridge_outage import Outage, bridges_through_outage
from tests.support.kafka_helpers import private_broker
from tests.support.moto_helpers import moto_server

pytestmark = [pytest.mark.kafka, pytest.mark.own_broker, pytest.mark.slow]


@pytest.fixture
def moto_endpoint() -> Iterator[str]:
    with moto_server() as endpoint:
        yield endpoint


def test_a_mid_run_broker_outage_loses_nothing_from_http_or_sqs(
    tmp_path: Path, unique_name: str, moto_endpoint: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with private_broker(tmp_path / "broker") as brokers:

        def restart() -> str:
            brokers.append(restart_broker(brokers[-1]))
            return brokers[-1].bootstrap_servers

        outage = Outage(
            "broker down",
            brokers[0].bootstrap_servers,
            begin=lambda: kill_broker(brokers[-1]),
            end=restart,
        )
        report = bridges_through_outage(outage, moto_endpoint, unique_name)
    with capsys.disabled():
        print(f"\n[bridge outage] {report}")
