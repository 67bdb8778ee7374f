"""Torture (issue 14): a network partition outlasts the worker's transaction timeout.

A private broker serves one worker. While the worker holds a transaction open,
every packet to the broker's port is dropped (iptables, loopback only) for
longer than --transaction-timeout-ms, so the broker aborts the transaction on
its own. When the network heals, the worker must stop with one line that says
its transaction was aborted and names the setting; before, it said only
"Producer attempted a transactional operation in an invalid state". Restarted,
it finishes, and verify holds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.identity import event_identity
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.tools.verify import verify
from seqgate.streams.worker.processor import Worker, WorkerFatalError
from tests.support.events import event
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    private_broker,
    produce,
    running,
    verify_target,
    wait_for,
    worker_thread,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITION_S = 20.0
TRANSACTION_TIMEOUT_MS = 5_000


@contextlib.contextmanager
def cut_off(port: int) -> Iterator[None]:
    """Drop every packet sent to `port` on loopback until the block ends."""
    rule = ["INPUT", "-i", "lo", "-p", "tcp", "--dport", str(port), "-j", "DROP"]
    subprocess.run(["iptables", "-I", *rule], check=True, capture_output=True, timeout=30)
    try:
        yield
    finally:
        subprocess.run(["iptables", "-D", *rule], check=True, capture_output=True, timeout=30)


def iptables_usable() -> str | None:
    """Why iptables cannot be used here, or None."""
    if shutil.which("iptables") is None:
        return "iptables is not installed (scripts/test.sh installs it as root)"
    probe = subprocess.run(["iptables", "-L", "INPUT", "-n"], capture_output=True, timeout=30)
    if probe.returncode != 0:
        return f"iptables does not work here: {probe.stderr.decode(errors='replace').strip()}"
    return None


def test_a_partition_longer_than_the_transaction_timeout_is_named(
    unique_name: str, tmp_path: Path
) -> None:
    why = iptables_usable()
    if why is not None:
        pytest.skip(why)
    with private_broker(tmp_path / "broker") as brokers:
        bootstrap = brokers[0].bootstrap_servers
        port = int(bootstrap.rsplit(":", 1)[1])
        config = make_config(bootstrap, unique_name, tmp_path, partitions=1)
        config = dataclasses.replace(
            config,
            transaction_timeout_ms=TRANSACTION_TIMEOUT_MS,
            commit_interval_ms=2_000,
            kafka_timeout_s=10.0,
        )
        events: list[ObjectEvent] = [event(f"k{n}.txt", "10") for n in range(200)]
        records = [
            (event_identity(e.source, e.bucket, e.key).encode(), OBJECT_EVENT.encode(e))
            for e in events
        ]
        produce(bootstrap, config.input_topic, records[:100])
        with running(Worker(config)) as run:
            worker = run.worker
            wait_for(lambda: worker.commits > 0, 60, "the worker's first commit")
            produce(bootstrap, config.input_topic, records[100:])
            wait_for(lambda: worker._in_transaction, 30, "the worker to open a transaction")
            with cut_off(port):
                time.sleep(PARTITION_S)  # the partition itself, not a synchronization
            run.thread.join(120)
            assert not run.thread.is_alive(), "the worker neither recovered nor stopped"
        assert len(run.errors) == 1 and isinstance(run.errors[0], WorkerFatalError), run.errors
        message = str(run.errors[0])
        assert "--transaction-timeout-ms" in message, message
        assert "\n" not in message
        # Restarted, it resumes from the committed offsets: exactly once.
        with worker_thread(config):
            wait_for(caught_up(bootstrap, config), 120, "the restarted worker to catch up")
        report = verify(verify_target(config))
        assert report.ok(), report.as_dict()
        assert report.totals()["expected"] == 200
