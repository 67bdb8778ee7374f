"""Torture (issue 4): a worker's local RocksDB state is lost while it is stopped.

The worker processes part of the input and stops (SIGTERM); its state directory
(<state-dir>/<application-id>/<instance-id>) is deleted; restarted, it must
rebuild every partition's watermarks from the changelog before deciding
anything, so that the redeliveries and late events of the rest of the input are
still recognized. `verify` passes, and each restored RocksDB store equals the
replay's final watermarks.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from tests.support.kafka_helpers import make_config
from tests.support.torture_helpers import (
    GroupProbe,
    build_workload,
    check_stores_match_replay,
    check_verified,
    input_producer,
    launched,
    produce_records,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.tier("fast", "soak")]

EVENTS = 60_000
IDENTITIES = 6_000
PARTITIONS = 6
INSTANCE = "w"


def restored_records(stderr: str) -> dict[int, int]:
    """partition -> records restored, from the worker's `assigned` log lines."""
    restored: dict[int, int] = {}
    for line in stderr.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and entry.get("msg") == "assigned":
            restored[int(entry["partition"])] = int(entry["restored"])
    return restored


def test_local_state_loss_rebuilds_from_the_changelog(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    workload = build_workload(4, EVENTS, IDENTITIES)
    config = make_config(
        kafka_bootstrap, unique_name, tmp_path, partitions=PARTITIONS, instance_id=INSTANCE
    )
    half = len(workload) // 2
    producer = input_producer(kafka_bootstrap)
    probe = GroupProbe(kafka_bootstrap, config)
    try:
        with launched(
            kafka_bootstrap, config, tmp_path / "state", tmp_path / "logs", log_level="info"
        ) as launcher:
            produce_records(producer, config.input_topic, workload.records[:half])
            first = launcher.start(INSTANCE)
            probe.wait_caught_up(180, "the first worker to process the first half")
            assert first.stop() == 0, first.stderr()[-3000:]
            state = launcher.state_path(INSTANCE)
            assert (state / config.input_topic).is_dir(), f"no RocksDB state under {state}"
            shutil.rmtree(state)

            produce_records(producer, config.input_topic, workload.records[half:])
            second = launcher.start(INSTANCE)
            probe.wait_caught_up(180, "the restarted worker to process the second half")
            assert second.stop() == 0, second.stderr()[-3000:]
            restored = restored_records(second.stderr())
    finally:
        probe.close()

    # Every partition was rebuilt from the changelog before processing resumed.
    assert sorted(restored) == list(range(PARTITIONS)), restored
    report = check_verified(kafka_bootstrap, config, inputs=len(workload), min_accepted=1)
    totals = report.totals()
    assert totals["expected"] == workload.expected["accepted"], totals
    # The first half's accepted events are what the changelog held when the state was lost.
    assert all(count > 0 for count in restored.values()), restored
    compared = check_stores_match_replay(
        kafka_bootstrap, config, [launcher.state_directory(INSTANCE)]
    )
    assert compared == IDENTITIES
    with capsys.disabled():
        print(
            f"\n[torture state-loss] {workload.summary()}"
            f"\n  restored from the changelog after the wipe: {sum(restored.values())} records"
            f" ({restored}); inputs checked={totals['inputs']} accepted={totals['expected']}"
            f" watermarks compared={compared} time={time.monotonic() - started:.0f}s"
        )
