"""Torture (issue 14): a network partition outlasts the worker's transaction timeout.

A private broker serves one worker. While the worker holds a transaction open,
every packet to the broker's port is dropped (iptables, loopback only) for
longer than --transaction-timeout-ms, so the broker aborts the transaction on
its own and fences the producer. When the network heals, the worker must say so in one
warning line that names the setting, replace its producer (runtime/renewal.py) and go on
from the committed offsets, by itself; verify holds. (Before the renewal it stopped with
that line and needed a restart; before that, it said only "Producer attempted a
transactional operation in an invalid state".)
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seqgate.runtime.faults import FaultPoint, HangAt
from seqgate.schemas.codec import OBJECT_EVENT
from seqgate.schemas.identity import event_identity
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.tools.verify import verify
from seqgate.streams.worker.processor import Worker
from tests.support.events import event
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    private_broker,
    produce,
    running,
    verify_target,
    wait_for,
)
from tests.support.required import unavailable

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.own_broker,
    pytest.mark.slow,
    pytest.mark.tier("fast", "soak"),
]

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


def test_a_partition_longer_than_the_transaction_timeout_is_named_and_outlived(
    unique_name: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    why = iptables_usable()
    if why is not None:
        unavailable("iptables", why)
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
        # A worker that has caught up commits at once: the test holds its next transaction
        # open at its first record (armed after the first commit), cuts the network, and
        # lets it go on two seconds into the cut, so that it commits while cut off.
        release = threading.Event()
        hold = HangAt(FaultPoint.AFTER_STATE_UPDATE, release, times=0, longest_s=60)
        with (
            caplog.at_level(logging.WARNING, logger="seqgate.runtime.session"),
            running(Worker(config, faults=hold)) as run,
        ):
            worker = run.worker
            try:
                wait_for(lambda: worker.commits > 0, 60, "the worker's first commit")
                hold.remaining = 1
                produce(bootstrap, config.input_topic, records[100:])
                wait_for(lambda: hold.hung == 1, 30, "the worker to open a transaction")
                assert worker._in_transaction
                with cut_off(port):
                    time.sleep(2.0)  # the partition itself, not a synchronization
                    release.set()
                    time.sleep(PARTITION_S - 2.0)
            finally:
                release.set()
            healed = time.monotonic()
            wait_for(caught_up(bootstrap, config), 120, "the worker to go on after the cut")
            assert run.errors == [], run.errors
        renewed = [r for r in caplog.records if "a new producer replaces" in r.getMessage()]
        assert len(renewed) == 1, [r.getMessage() for r in caplog.records]
        cause: str = renewed[0].cause  # type: ignore[attr-defined]
        assert f"past --transaction-timeout-ms ({TRANSACTION_TIMEOUT_MS} ms)" in cause, cause
        print(f"\n[txn timeout] caught up {time.monotonic() - healed:.1f}s after the heal: {cause}")
        report = verify(verify_target(config))
        assert report.ok(), report.as_dict()
        assert report.totals()["expected"] == 200
