"""Standby replicas (--standby-replicas, issue 39) on a real broker, workers as processes.

Two workers `a` and `b` keep a standby of each other's partitions. When `a` is SIGKILLed,
`b` takes a's partitions over from its warm standby stores: it restores only the tail
they lacked, not the partitions' whole changelog, and `verify` finds every input decided
exactly once. And a standby store that cannot be trusted (damaged, or mirroring an
earlier changelog topic) is moved aside and rebuilt from the changelog, never used.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import signal
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.streams.tools.inspect import group_status
from seqgate.streams.worker.config import WorkerConfig
from tests.support.kafka_helpers import end_offsets, make_config, wait_for
from tests.support.state_damage import delete_current
from tests.support.tier import sized
from tests.support.torture_helpers import (
    Feeder,
    GroupProbe,
    WorkerLauncher,
    WorkerProcess,
    Workload,
    build_workload,
    check_stores_match_replay,
    check_verified,
    input_producer,
    launched,
    produce_records,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 6
# The soak tier takes over a larger state (the survivor test alone runs there).
EVENTS = sized(fast=16_000, soak=200_000)
IDENTITIES = sized(fast=4_000, soak=100_000)
PRELOAD = EVENTS * 5 // 8
SESSION_TIMEOUT_MS = 6_000  # the broker's group.min.session.timeout.ms
TRANSACTION_TIMEOUT_MS = 10_000
STANDBY = ["--standby-replicas", "1"]


def log_lines(worker: WorkerProcess, message: str) -> list[dict[str, Any]]:
    """The worker's JSON log lines whose message is `message`."""
    found = []
    for line in worker.stderr().splitlines():
        if f'"{message}"' not in line:
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if entry.get("msg") == message:
            found.append(entry)
    return found


def standbys_caught_up(worker: WorkerProcess) -> set[int]:
    return {entry["partition"] for entry in log_lines(worker, "standby caught up")}


def standbys_in_status(bootstrap: str, config: WorkerConfig) -> dict[int, str]:
    """partition -> the one worker `seqgate status` shows keeping a standby of it, caught up
    to within a few records (a partition with no, or more than one, standby: absent)."""
    report = group_status(
        KafkaSettings(bootstrap), config.application_id, config.input_topic, config.changelog_topic
    )
    return {
        row.partition: row.standbys[0].instance_id
        for row in report.partitions
        if len(row.standbys) == 1 and row.standbys[0].lag < 100
    }


def both_serving(probe: GroupProbe) -> bool:
    owners = probe.assignment()
    a, b = owners.get("a", set()), owners.get("b", set())
    return bool(a) and bool(b) and a | b == set(range(PARTITIONS))


def start_pair(
    launcher: WorkerLauncher, probe: GroupProbe, options: Sequence[str] = (), **a_options: Any
) -> tuple[WorkerProcess, WorkerProcess]:
    """a and b with one standby each (and `options`), sharing the partitions, each standby
    caught up. a processes the preload alone first: the partitions it keeps, b has never
    owned, so b's stores of them can only be its standbys' work."""
    a = launcher.start("a", extra_args=[*STANDBY, *options], **a_options)
    wait_for(lambda: probe.assignment().get("a") == set(range(PARTITIONS)), 90, "a to start")
    probe.wait_caught_up(120, "a to process the preload")
    b = launcher.start("b", extra_args=[*STANDBY, *options])
    wait_for(lambda: both_serving(probe), 90, "a and b to share the partitions")
    probe.wait_caught_up(120, "a and b to process the preload")
    owners = probe.assignment()

    def warm() -> bool:
        return owners["b"] <= standbys_caught_up(a) and owners["a"] <= standbys_caught_up(b)

    wait_for(warm, 60, "each worker's standbys of the other's partitions to catch up")
    return a, b


@dataclasses.dataclass
class Pipeline:
    config: WorkerConfig
    workload: Workload
    producer: Producer
    probe: GroupProbe
    launcher: WorkerLauncher


@contextlib.contextmanager
def pipeline(
    bootstrap: str,
    name: str,
    tmp_path: Path,
    seed: int,
    session_timeout_ms: int = SESSION_TIMEOUT_MS,
    transaction_timeout_ms: int = TRANSACTION_TIMEOUT_MS,
) -> Iterator[Pipeline]:
    """Topics with the preload in them, a group probe, and a launcher logging at info."""
    workload = build_workload(seed, EVENTS, IDENTITIES)
    config = make_config(bootstrap, name, tmp_path, partitions=PARTITIONS)
    producer = input_producer(bootstrap)
    produce_records(producer, config.input_topic, workload.records[:PRELOAD])
    probe = GroupProbe(bootstrap, config)
    try:
        with launched(
            bootstrap,
            config,
            tmp_path / "state",
            tmp_path / "logs",
            session_timeout_ms=session_timeout_ms,
            transaction_timeout_ms=transaction_timeout_ms,
            log_level="info",
        ) as launcher:
            yield Pipeline(config, workload, producer, probe, launcher)
    finally:
        probe.close()


@pytest.mark.tier("fast", "soak")
def test_a_survivor_takes_over_from_its_warm_standbys(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    with pipeline(kafka_bootstrap, unique_name, tmp_path, 11) as run:
        config, workload, probe, launcher = run.config, run.workload, run.probe, run.launcher
        a, b = start_pair(launcher, probe)
        moved = probe.assignment()["a"]
        assert not moved & {entry["partition"] for entry in log_lines(b, "assigned")}
        # `seqgate status` shows each partition's standby on the other worker.
        kept_by = {p: "b" for p in moved} | {p: "a" for p in set(range(PARTITIONS)) - moved}
        wait_for(
            lambda: standbys_in_status(kafka_bootstrap, config) == kept_by,
            30,
            f"seqgate status to show the standbys {kept_by}",
        )
        changelog_at_kill = end_offsets(kafka_bootstrap, config.changelog_topic)
        feeder = Feeder(
            kafka_bootstrap, config.input_topic, workload.records[PRELOAD:], pause_s=0.3
        ).start()
        a.kill()
        wait_for(
            lambda: probe.assignment() == {"b": set(range(PARTITIONS))},
            SESSION_TIMEOUT_MS / 1000 + 60,
            "b to take over every partition",
        )
        feeder.join(120)
        probe.wait_caught_up(120, "b to process everything")
        servings = log_lines(b, "partition serving")
        serving = {entry["partition"]: entry for entry in servings}
        assert b.stop() == 0, b.stderr()[-3000:]

    assert moved <= set(serving), (moved, sorted(serving))
    # Cooperative rebalancing: b's own partitions were never stopped, so served only once.
    assert sorted(e["partition"] for e in servings) == list(range(PARTITIONS)), servings
    for partition in moved:
        entry = serving[partition]
        whole = changelog_at_kill[partition]
        assert entry["standby"] is True, entry
        # The tail a's last transactions wrote, not the partition's whole changelog.
        assert entry["restored"] < whole // 4, (entry, whole)
        assert entry["takeover_s"] >= entry["restore_s"] >= 0, entry
    check_verified(
        kafka_bootstrap, config, inputs=EVENTS, min_accepted=workload.expected["accepted"]
    )
    directories = [launcher.state_directory("a"), launcher.state_directory("b")]
    assert check_stores_match_replay(kafka_bootstrap, config, directories) == IDENTITIES


def test_an_untrustworthy_standby_store_is_rebuilt_not_used(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    with pipeline(kafka_bootstrap, unique_name, tmp_path, 12) as run:
        config, workload, probe, launcher = run.config, run.workload, run.probe, run.launcher
        producer = run.producer
        a, b = start_pair(launcher, probe)
        assert b.stop() == 0, b.stderr()[-3000:]
        wait_for(
            lambda: probe.assignment() == {"a": set(range(PARTITIONS))},
            60,
            "a to own every partition after b left",
        )
        # Every store b left behind is made untrustworthy, two ways.
        damaged: set[int] = set()
        directory = launcher.state_directory("b")
        for partition in range(PARTITIONS):
            path = directory.partition_path(partition)
            if partition % 2:
                delete_current(path)
                damaged.add(partition)
            else:
                store = directory.open(partition)
                identity = store.identity()
                assert identity is not None
                earlier = dataclasses.replace(identity, changelog_topic_id="an-earlier-topic")
                store.record_identity(earlier)
                store.close()
        b = launcher.start("b", extra_args=STANDBY)
        wait_for(lambda: both_serving(probe), 90, "b to rejoin")
        standbys = probe.assignment()["a"]
        wait_for(lambda: standbys <= standbys_caught_up(b), 60, "b's rebuilt standbys to catch up")
        # a leaves: b serves a's partitions from the standbys it rebuilt.
        a.signal(signal.SIGTERM)
        assert a.wait(60) == 0, a.stderr()[-3000:]
        wait_for(
            lambda: probe.assignment() == {"b": set(range(PARTITIONS))},
            60,
            "b to own every partition after a left",
        )
        # Input for every partition, so that each one commits (and says it serves) here.
        produce_records(producer, config.input_topic, workload.records[PRELOAD:])
        probe.wait_caught_up(120, "b to process everything")
        serving = {entry["partition"]: entry for entry in log_lines(b, "partition serving")}
        assert b.stop() == 0, b.stderr()[-3000:]

    reasons = {
        entry["partition"]: entry["reason"]
        for entry in log_lines_matching(b, "standby state of partition")
    }
    for partition in standbys:
        assert reasons.get(partition) == ("damaged" if partition in damaged else "recreated"), (
            partition,
            reasons,
        )
        assert serving[partition]["standby"] is True, serving[partition]
    moved_aside = {p.name for p in directory.partition_path(0).parent.iterdir() if "." in p.name}
    assert len(moved_aside) == PARTITIONS, moved_aside  # each old store kept for inspection
    check_verified(
        kafka_bootstrap, config, inputs=EVENTS, min_accepted=workload.expected["accepted"]
    )
    directories = [launcher.state_directory("a"), launcher.state_directory("b")]
    assert check_stores_match_replay(kafka_bootstrap, config, directories) == IDENTITIES


def log_lines_matching(worker: WorkerProcess, prefix: str) -> list[dict[str, Any]]:
    """The worker's JSON log lines whose message starts with `prefix`."""
    found = []
    for line in worker.stderr().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and str(entry.get("msg", "")).startswith(prefix):
            found.append(entry)
    return found


def test_a_worker_stopped_with_dynamic_membership_hands_over_at_once(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """With --membership dynamic a stopped worker leaves the group: its partitions move to
    the standbys at once, not after the session timeout (30 s here)."""
    session_timeout_s = 30
    options = [*STANDBY, "--membership", "dynamic"]
    everything = set(range(PARTITIONS))
    with pipeline(kafka_bootstrap, unique_name, tmp_path, 13, session_timeout_s * 1000) as run:
        config, workload, probe, launcher = run.config, run.workload, run.probe, run.launcher

        def owners() -> list[set[int]]:  # members are named by member id: no instance ids
            return [partitions for partitions in probe.assignment().values() if partitions]

        a = launcher.start("a", extra_args=options)
        wait_for(lambda: owners() == [everything], 90, "a to start")
        probe.wait_caught_up(120, "a to process the preload")
        b = launcher.start("b", extra_args=options)

        def assigned_to_b() -> set[int]:
            return {entry["partition"] for entry in log_lines(b, "assigned")}

        def shared() -> bool:  # and b has opened its partitions
            return len(owners()) == 2 and assigned_to_b() in owners()

        wait_for(shared, 90, "a and b to share the partitions")
        moved = everything - assigned_to_b()
        wait_for(lambda: moved <= standbys_caught_up(b), 60, "b's standbys to catch up")
        feeder = Feeder(
            kafka_bootstrap, config.input_topic, workload.records[PRELOAD:], pause_s=0.3
        ).start()
        stopped = time.monotonic()
        assert a.stop() == 0, a.stderr()[-3000:]
        wait_for(lambda: owners() == [everything], session_timeout_s, "b to own every partition")
        handover_s = time.monotonic() - stopped
        feeder.join(120)
        probe.wait_caught_up(120, "b to process everything")
        serving = {entry["partition"]: entry for entry in log_lines(b, "partition serving")}
        assert b.stop() == 0, b.stderr()[-3000:]

    assert handover_s < session_timeout_s / 3, handover_s
    assert moved and all(serving[partition]["standby"] is True for partition in moved), serving
    check_verified(
        kafka_bootstrap, config, inputs=EVENTS, min_accepted=workload.expected["accepted"]
    )
    directories = [launcher.state_directory("a"), launcher.state_directory("b")]
    assert check_stores_match_replay(kafka_bootstrap, config, directories) == IDENTITIES


def test_a_worker_killed_inside_its_commit_is_taken_over_at_once(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """a dies between sending its offsets to the transaction and committing it: the group
    holds those offsets pending until the transaction ends. b, taking a's partitions over,
    ends it at once (worker/handover.py) rather than waiting for the broker's timeout (a
    minute here), and serves them from its standbys; nothing is lost or doubled."""
    armed = tmp_path / "armed"
    timeout_ms = 60_000
    with pipeline(
        kafka_bootstrap, unique_name, tmp_path, 14, transaction_timeout_ms=timeout_ms
    ) as run:
        config, workload, probe, launcher = run.config, run.workload, run.probe, run.launcher
        a, b = start_pair(
            launcher, probe, fault="kill:before_commit", env={"SEQGATE_FAULT_ARMED": str(armed)}
        )
        moved = probe.assignment()["a"]
        feeder = Feeder(
            kafka_bootstrap, config.input_topic, workload.records[PRELOAD:], pause_s=0.3
        ).start()
        armed.touch()  # a kills itself at its next commit, its offsets sent
        assert a.wait(60) == -9, a.stderr()[-3000:]
        # Well within the transaction timeout: the group drops a, then b serves at once.
        wait_for(
            lambda: moved <= {e["partition"] for e in log_lines(b, "partition serving")},
            SESSION_TIMEOUT_MS / 1000 + 20,
            "b to serve a's partitions",
        )
        ended = "ended the open transaction of a previous owner"
        wait_for(lambda: log_lines(b, ended), 30, "b to say it ended a's transaction")
        ended_by_b = log_lines(b, ended)
        serving = {entry["partition"]: entry for entry in log_lines(b, "partition serving")}
        feeder.join(120)
        probe.wait_caught_up(120, "b to process everything")
        assert b.stop() == 0, b.stderr()[-3000:]

    assert [entry["instance_id"] for entry in ended_by_b] == ["a"], ended_by_b
    assert all(serving[partition]["standby"] is True for partition in moved), serving
    assert max(serving[partition]["takeover_s"] for partition in moved) < 5, serving
    check_verified(
        kafka_bootstrap, config, inputs=EVENTS, min_accepted=workload.expected["accepted"]
    )
    directories = [launcher.state_directory("a"), launcher.state_directory("b")]
    assert check_stores_match_replay(kafka_bootstrap, config, directories) == IDENTITIES


def test_eager_rebalancing_stops_the_survivors_partitions_too_and_stays_exact(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """--rebalance eager: when a is killed, b gives up its own partitions as well and takes
    them back with a's (each served a second time); nothing is lost or doubled."""
    with pipeline(kafka_bootstrap, unique_name, tmp_path, 15) as run:
        config, workload, probe, launcher = run.config, run.workload, run.probe, run.launcher
        a, b = start_pair(launcher, probe, ["--rebalance", "eager"])
        owned_by_b = probe.assignment()["b"]
        # Input for every partition until the end: b's own partitions serve again only when
        # it commits new input of theirs after the rebalance.
        feeder = Feeder(
            kafka_bootstrap,
            config.input_topic,
            workload.records[PRELOAD:],
            pause_s=0.3,
            redeliver=True,
        ).start()
        a.kill()

        def served_twice() -> set[int]:
            counts = Counter(e["partition"] for e in log_lines(b, "partition serving"))
            return {partition for partition, count in counts.items() if count >= 2}

        wait_for(
            lambda: owned_by_b <= served_twice(),
            SESSION_TIMEOUT_MS / 1000 + 60,
            "b to stop its own partitions and serve them again",
        )
        wait_for(
            lambda: probe.assignment() == {"b": set(range(PARTITIONS))},
            60,
            "b to own every partition",
        )
        feeder.join(120)
        probe.wait_caught_up(120, "b to process everything")
        assert b.stop() == 0, b.stderr()[-3000:]

    inputs = PRELOAD + feeder.produced
    check_verified(kafka_bootstrap, config, inputs=inputs, min_accepted=1)
    directories = [launcher.state_directory("a"), launcher.state_directory("b")]
    assert check_stores_match_replay(kafka_bootstrap, config, directories) == IDENTITIES
