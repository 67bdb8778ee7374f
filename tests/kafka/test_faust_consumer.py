"""Issue 18 §3: the faust example agent reads the outbox of a worker killed with kill -9.

A real `seqgate worker` is SIGKILLed mid-stream (at the fault point between sending the
offsets and committing, and after random committed progress) and restarted, so the outbox
log holds records of aborted transactions. The example agent (examples/faust_outbox_agent.py,
a real faust worker, itself SIGKILLed and restarted once) must apply every committed outbox
record and never see an aborted one. The same agent with faust's default
``processing_guarantee`` (at least once: a read_uncommitted consumer) does see them, which
proves that the example's setting is what keeps them out.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from seqgate.schemas.codec import OUTBOX_RECORD
from tests.support.faust_agent import FaustAgent
from tests.support.kafka_helpers import make_config, read_all, wait_for
from tests.support.kill_schedule import Input, kill_once
from tests.support.tier import sized
from tests.support.torture_helpers import GroupProbe, build_workload, launched

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.tier("fast", "soak")]

EVENTS = sized(fast=10_000, soak=20_000)
IDENTITIES = sized(fast=1_000, soak=2_000)
PARTITIONS = 3
INSTANCE = "faust-feed"
SCHEDULE = ["kill:before_commit", "progress", "kill:before_commit", "progress"]


@pytest.fixture
def agents() -> Iterator[list[FaustAgent]]:
    started: list[FaustAgent] = []
    yield started
    for agent in started:
        agent.cleanup()


def _agent(
    agents: list[FaustAgent], bootstrap: str, topic: str, name: str, workdir: Path, **kw: str
) -> FaustAgent:
    agent = FaustAgent(bootstrap, topic, f"{name}-faust", workdir, **kw)
    agents.append(agent)
    agent.start()
    return agent


def _wait_seen(agent: FaustAgent, offsets: set[tuple[int, int]], what: str) -> None:
    def seen() -> bool:
        agent.assert_alive()
        return offsets <= agent.offsets_seen()

    wait_for(seen, 180, what)


def _outbox(bootstrap: str, topic: str) -> tuple[dict[tuple[int, int], str], set[tuple[int, int]]]:
    """(partition, offset) -> event id of each committed record; the offsets of the aborted
    ones (in a read_uncommitted read, not in a read_committed one)."""
    committed = {
        (r.partition, r.offset): OUTBOX_RECORD.decode(r.value).event.id
        for r in read_all(bootstrap, topic)
    }
    logged = {(r.partition, r.offset) for r in read_all(bootstrap, topic, committed_only=False)}
    assert committed.keys() <= logged
    assert len(set(committed.values())) == len(committed), "an event id twice in the outbox"
    return committed, logged - committed.keys()


def test_faust_agent_applies_committed_outbox_records_only(
    kafka_bootstrap: str,
    unique_name: str,
    tmp_path: Path,
    agents: list[FaustAgent],
    capsys: pytest.CaptureFixture[str],
) -> None:
    started = time.monotonic()
    seed = random.SystemRandom().randrange(2**31)
    rng = random.Random(seed)
    workload = build_workload(seed, EVENTS, IDENTITIES)
    config = make_config(
        kafka_bootstrap, unique_name, tmp_path, partitions=PARTITIONS, instance_id=INSTANCE
    )
    outbox = config.outbox_topic
    agent = _agent(agents, kafka_bootstrap, outbox, unique_name, tmp_path / "agent")
    probe = GroupProbe(kafka_bootstrap, config)
    try:
        source = Input(kafka_bootstrap, config.input_topic, workload, seed)
        with launched(kafka_bootstrap, config, tmp_path / "state", tmp_path / "logs") as launcher:
            source.feeder.start()
            kills = [
                kill_once(launcher, probe, source, kind, rng, INSTANCE) for kind in SCHEDULE[:2]
            ]
            agent.assert_alive()
            before_kill = len(agent.deliveries())
            agent.kill()  # what it applied since its last offset commit comes again
            agent.start()
            kills += [
                kill_once(launcher, probe, source, kind, rng, INSTANCE) for kind in SCHEDULE[2:]
            ]
            source.feeder.join(300)
            last = launcher.start(INSTANCE)
            probe.wait_caught_up(300, "the last worker to process the whole input")
            assert last.stop() == 0, last.stderr()[-3000:]
    finally:
        probe.close()

    committed, aborted = _outbox(kafka_bootstrap, outbox)
    assert aborted, f"no aborted transaction left a record in the outbox (kills: {kills})"
    logged = set(committed) | aborted

    # A consumer reads a partition in order: once the agent has seen each partition's last
    # committed record, it has read past every aborted one, provided none comes later.
    last = {p: max(o for q, o in committed if q == p) for p, _ in committed}
    assert all(offset < last[p] for p, offset in aborted), "an aborted record ends a partition"
    _wait_seen(agent, set(committed), "the faust agent to apply every committed outbox record")
    graceful = [agent.stop()]
    deliveries = agent.deliveries()
    seen = {(d.partition, d.offset) for d in deliveries}
    assert not seen & aborted, f"the agent saw {len(seen & aborted)} aborted records"
    assert seen == set(committed)
    applied = {d.event_id for d in deliveries if d.first}
    assert applied == set(committed.values())
    assert sum(d.first for d in deliveries) == len(committed)
    redeliveries = len(deliveries) - len(committed)
    assert all(d.first for d in deliveries[:before_kill]), "a redelivery without a crash"

    wrong = _agent(
        agents,
        kafka_bootstrap,
        outbox,
        f"{unique_name}-default",
        tmp_path / "agent-at-least-once",
        guarantee="at_least_once",
    )
    _wait_seen(wrong, logged, "the agent with faust's default guarantee to read the whole log")
    graceful.append(wrong.stop())
    wrongly_seen = wrong.offsets_seen() & aborted
    assert wrongly_seen, "faust's default guarantee did not see any aborted record"

    with capsys.disabled():
        print(
            f"\n[faust consumer] seed={seed} {workload.summary()}"
            f"\n  worker kills={[(k.kind, k.committed_after) for k in kills]}, agent kills=1"
            f"\n  outbox: {len(logged)} records in the log, {len(committed)} committed,"
            f" {len(aborted)} aborted"
            f"\n  exactly_once agent: applied={len(applied)} deliveries={len(deliveries)}"
            f" redeliveries={redeliveries} aborted seen=0"
            f"\n  at_least_once agent: aborted seen={len(wrongly_seen)}/{len(aborted)}"
            f"\n  agents that stopped on SIGTERM (else SIGKILLed after 20 s): {graceful}"
            f" time={time.monotonic() - started:.0f}s"
        )
