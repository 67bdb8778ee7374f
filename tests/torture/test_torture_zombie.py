"""Torture (issue 4): a worker paused past its session timeout is fenced when it resumes.

Worker A processes a live stream; it is SIGSTOPped while a transaction holding
outbox records is open (by its own fault point `stop:after_state_update`, armed by the
test while input flows: mid-transaction, the commit never asked for), and stays stopped
past its session timeout while worker B (another instance id, so another transactional.id)
joins and takes over every partition. Then, by variant:

* static members: B names A by its instance id and ends A's open transaction as it takes
  A's partitions over (worker/handover.py); A resumes with a fenced producer, finds B's
  mark and goes on with a new producer;
* dynamic members: B cannot tell A's transactional.id, and A resumes with its transaction
  still open (the pause is shorter than its transaction timeout): a zombie that believes
  it still owns its partitions; or the broker aborted it on timeout meanwhile.

Nothing A produces after the pause may become visible to a read_committed
consumer (its producer is fenced, or its consumer-group generation is stale, so the
transactional offset commit is refused and the transaction must abort: KIP-447), and A must
stop or rejoin saying why on stderr. `verify` passes: no outbox record of the input A
and B both processed appears twice, none is missing.
"""

from __future__ import annotations

import functools
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from seqgate.schemas.codec import OUTBOX_RECORD
from tests.support.kafka_helpers import make_config, wait_for
from tests.support.tier import sized
from tests.support.torture_helpers import (
    Feeder,
    GroupProbe,
    WorkerProcess,
    build_workload,
    check_stores_match_replay,
    check_verified,
    input_producer,
    launched,
    produce_records,
    wait_stable,
)

pytestmark = [pytest.mark.kafka, pytest.mark.slow, pytest.mark.tier("fast", "soak")]

EVENTS = sized(fast=40_000, soak=80_000)
IDENTITIES = sized(fast=4_000, soak=8_000)
PARTITIONS = 6
SESSION_TIMEOUT_MS = 6_000  # the broker's group.min.session.timeout.ms


@dataclass(frozen=True)
class Freeze:
    """A worker frozen inside a transaction: the outbox's high watermarks then, and one
    record of that transaction past the last stable offset (partition, offset)."""

    attempts: int
    high: dict[int, int]
    held: tuple[int, int]


def pause_inside_a_transaction(
    worker: WorkerProcess, probe: GroupProbe, bootstrap: str, arm: Path, *, sent: bool = False
) -> Freeze:
    """Arm the worker's `stop:` fault and wait until it has frozen itself there, in the
    middle of a transaction (at `after_state_update`: nothing flushed, no offsets sent; at
    `before_commit`: flushed and its offsets sent; no commit asked for in either), where it
    stays until SIGCONT. A frozen transaction with no record in the
    outbox yet is let go and the next freeze taken."""
    for attempt in range(1, 21):
        arm.touch()
        wait_for(
            lambda: worker.frozen() or not worker.alive(),
            60,
            "the worker to freeze itself in a transaction",
        )
        assert worker.alive(), worker.stderr()[-3000:]
        arm.unlink()
        held = uncommitted_record(probe, bootstrap, stable=not sent)
        # Read after the record: records the worker had sent before it froze may reach the
        # log after the freeze, and `high` must cover the held one (the LSO passing `high`
        # then says its transaction ended; clean-clone run 16: `high` read first, the held
        # record at it, and the "abort" seen at once while the transaction was still open).
        high = probe.high_watermarks(probe.config.outbox_topic)
        if high is not None and held is not None:
            assert held[1] < high[held[0]], (held, high)
            return Freeze(attempt, high, held)
        worker.signal(signal.SIGCONT)
        wait_for(lambda: not worker.frozen(), 10, "the worker to go on after SIGCONT")
    raise AssertionError("no frozen transaction held records in the outbox")


def uncommitted_record(
    probe: GroupProbe, bootstrap: str, *, stable: bool = True
) -> tuple[int, int] | None:
    """An outbox record of a transaction not committed, if any: past the last stable
    offset, from an input offset at or past the group's committed one. Committed offsets
    read with read_committed are stable (KIP-447): earlier transactions have completed.
    A frozen transaction that sent its offsets holds them pending, and a read_committed
    reader would wait for it forever: then (`stable` false) the last committed ones are
    read without waiting."""
    config = probe.config
    settings = {"bootstrap.servers": bootstrap, "group.id": config.application_id}
    isolation = "read_committed" if stable else "read_uncommitted"
    stable_reader = Consumer({**settings, "isolation.level": isolation})
    reader = Consumer(
        {**settings, "isolation.level": "read_uncommitted", "enable.partition.eof": True}
    )
    try:
        inputs = [TopicPartition(config.input_topic, p) for p in probe.partitions]
        committed = {tp.partition: tp.offset for tp in stable_reader.committed(inputs, 30)}
        lso = probe.last_stable_offsets(config.outbox_topic)
        high = probe.high_watermarks(config.outbox_topic)
        assert lso is not None and high is not None, "the outbox's offsets are unavailable"
        unread = {p for p in lso if lso[p] < high[p]}
        reader.assign([TopicPartition(config.outbox_topic, p, lso[p]) for p in unread])
        while unread:
            message = reader.poll(30)
            assert message is not None, "reading the outbox past its last stable offset stalled"
            partition = message.partition() or 0
            if message.error() is not None:  # the end of a partition
                unread.discard(partition)
                continue
            record = OUTBOX_RECORD.decode(message.value() or b"")
            if record.input_offset >= max(committed[record.input_partition], 0):
                return partition, message.offset() or 0
        return None
    finally:
        reader.close()
        stable_reader.close()


def aborted(probe: GroupProbe, topic: str, high: dict[int, int]) -> bool:
    """True once the LSO of every partition of `topic` has passed `high`."""
    lso = probe.last_stable_offsets(topic)
    return lso is not None and all(lso[p] >= offset for p, offset in high.items())


def invisible(bootstrap: str, topic: str, held: tuple[int, int]) -> bool:
    """Whether a read_committed reader skips the record at `held` (partition, offset), now
    below the last stable offset: its transaction was aborted, not committed."""
    partition, offset = held
    reader = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"invisible-{offset}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
        }
    )
    try:
        reader.assign([TopicPartition(topic, partition, offset)])
        message = reader.poll(30)
        assert message is not None, f"reading {topic}[{partition}] at {offset} stalled"
        error = message.error()
        assert error is None or error.code() == KafkaError._PARTITION_EOF, error
        # The next record it returns, or the end it reaches (the LSO), is past `held`.
        return (message.offset() or 0) > offset
    finally:
        reader.close()


def freeze_until_the_broker_aborts(
    worker: WorkerProcess, probe: GroupProbe, bootstrap: str, arm: Path, timeout_s: float
) -> Freeze:
    """A freeze (`pause_inside_a_transaction`) that lasts until the broker has aborted the
    frozen transaction on its timeout. A freeze whose held record turns out committed
    (it belonged to the transaction before, committed but its markers not yet written when
    the freeze was judged; the frozen one had sent nothing yet) is let go, the next taken."""
    topic = probe.config.outbox_topic
    for _ in range(5):
        freeze = pause_inside_a_transaction(worker, probe, bootstrap, arm)
        wait_for(
            functools.partial(aborted, probe, topic, freeze.high),
            timeout_s,
            "the broker to abort the paused worker's transaction on timeout",
        )
        if invisible(bootstrap, topic, freeze.held):
            return freeze
        worker.signal(signal.SIGCONT)
        wait_for(lambda: not worker.frozen(), 10, "the worker to go on after SIGCONT")
    raise AssertionError("no frozen transaction was aborted by the broker")


@pytest.mark.parametrize(
    ("membership", "transaction_timeout_ms", "variant"),
    [
        # A froze after sending its offsets to the transaction, so they are pending: B,
        # taking A's partitions over, ends A's transaction at once (worker/handover.py). A
        # resumes with a fenced producer, reads B's mark and goes on with a new one.
        pytest.param("static", 60_000, "ended", id="ended-by-the-new-owner"),
        # A froze before sending its offsets: nothing holds B back and A's transaction stays
        # open. The pause is shorter than its timeout: A resumes with its transaction open
        # and believes it still owns its partitions; its offsets are refused (KIP-447).
        # Dynamic members, so that both kinds of membership are exercised.
        pytest.param("dynamic", 60_000, "open", id="transaction-open"),
        # The broker aborts A's transaction on timeout while A is stopped (and bumps
        # its producer epoch): A resumes with a producer the broker has fenced.
        pytest.param("dynamic", 8_000, "timed-out", id="transaction-timed-out"),
    ],
)
def test_zombie_worker_is_fenced_after_a_pause(
    kafka_bootstrap: str,
    unique_name: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    membership: str,
    transaction_timeout_ms: int,
    variant: str,
) -> None:
    started = time.monotonic()
    workload = build_workload(5, EVENTS, IDENTITIES)
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=PARTITIONS)
    all_partitions = set(range(PARTITIONS))
    preload = 10_000
    producer = input_producer(kafka_bootstrap)
    produce_records(producer, config.input_topic, workload.records[:preload])
    probe = GroupProbe(kafka_bootstrap, config)
    topics = [config.outbox_topic, config.changelog_topic]
    try:
        with launched(
            kafka_bootstrap,
            config,
            tmp_path / "state",
            tmp_path / "logs",
            session_timeout_ms=SESSION_TIMEOUT_MS,
            transaction_timeout_ms=transaction_timeout_ms,
            # Long transactions: A is nearly always inside one while input flows.
            commit_every=20_000,
            commit_interval_ms=1_000,
        ) as launcher:
            arm = tmp_path / "arm-stop"
            # Frozen by its own fault point, a random number of records after being armed.
            # Frozen after its offsets are sent (before_commit) or before (after_state_update).
            point = "before_commit:0" if variant == "ended" else "after_state_update:"
            skip = "" if variant == "ended" else str(random.randrange(100, 3_000))
            a = launcher.start(
                "a",
                fault=f"stop:{point}{skip}",
                env={"SEQGATE_FAULT_ARMED": str(arm)},
                extra_args=membership_args(membership, "a"),
            )
            probe.wait_committed(preload, 120, "A to process the preloaded input")
            feeder = Feeder(
                kafka_bootstrap,
                config.input_topic,
                workload.records[preload:],
                chunk=1_000,
                pause_s=0.3,
            ).start()
            freeze = pause_inside_a_transaction(
                a, probe, kafka_bootstrap, arm, sent=variant == "ended"
            )
            attempts, high = freeze.attempts, freeze.high
            paused_at = time.monotonic()
            committed_at_pause = probe.committed_total()
            assert committed_at_pause is not None

            b = launcher.start("b", extra_args=membership_args(membership, "b"))
            wait_for(
                lambda: probe.assignment() == {"b": all_partitions},
                SESSION_TIMEOUT_MS / 1000 + 60,
                "B to take over every partition from the paused A",
            )
            takeover_s = time.monotonic() - paused_at
            # B processes what A had consumed in its open transaction, and more.
            probe.wait_committed(committed_at_pause + 5_000, 120, "B to make progress")
            if variant == "open":
                assert not aborted(probe, config.outbox_topic, high)
            else:
                wait_for(
                    lambda: aborted(probe, config.outbox_topic, high),
                    30 if variant == "ended" else transaction_timeout_ms / 1000 + 30,
                    "B to end A's transaction as it took over"
                    if variant == "ended"
                    else "the broker to abort the paused A's transaction on timeout",
                )
                # Else the freeze was judged before the transaction before it completed.
                assert invisible(kafka_bootstrap, config.outbox_topic, freeze.held), freeze
            pause_s = time.monotonic() - paused_at
            a.signal(signal.SIGCONT)

            def a_reacted() -> bool:
                return not a.alive() or bool(probe.assignment().get("a"))

            wait_for(a_reacted, 120, "A to stop or rejoin the group after SIGCONT")
            reaction_s = time.monotonic() - paused_at - pause_s
            a_outcome = "rejoined" if a.alive() else f"exited with {a.process.returncode}"

            feeder.join(180)
            probe.wait_caught_up(120, "the workers to process everything")
            for worker in (a, b):
                if worker.alive():
                    assert worker.stop() == 0, worker.stderr()[-3000:]
            wait_stable(probe, topics, 30)
            a_stderr = a.stderr()
    finally:
        probe.close()

    report = check_verified(
        kafka_bootstrap, config, inputs=len(workload), min_accepted=workload.expected["accepted"]
    )
    compared = check_stores_match_replay(
        kafka_bootstrap, config, [launcher.state_directory("a"), launcher.state_directory("b")]
    )
    totals = report.totals()
    with capsys.disabled():
        print(
            f"\n[torture zombie, {membership}, transaction {variant}] {workload.summary()}"
            f"\n  A paused (attempt {attempts}) with an open transaction at"
            f" {committed_at_pause} committed inputs; B owned every partition after"
            f" {takeover_s:.1f}s; A resumed after a {pause_s:.1f}s pause and {a_outcome}"
            f" {reaction_s:.1f}s later"
            f"\n  A's stderr: {a_stderr.strip()[-1500:]!r}"
            f"\n  verify: inputs={totals['inputs']} accepted={totals['expected']}"
            f" duplicated={totals['duplicated']} unexpected={totals['unexpected']}"
            f" watermarks compared={compared} time={time.monotonic() - started:.0f}s"
        )
    assert totals["duplicated"] == 0 and totals["unexpected"] == 0
    if variant != "open":
        # Its producer was fenced, by B or by the broker's abort: A replaced its producer,
        # said so once naming the cause, and rejoined (runtime/renewal.py).
        assert a_outcome == "rejoined", a_stderr
        renewed = [line for line in a_stderr.splitlines() if RENEWED in line]
        assert len(renewed) == 1, a_stderr
        cause = "b ended this worker's transaction" if variant == "ended" else "--transaction-"
        assert cause in renewed[0], renewed
    # When A rejoins, what it says depends on which it noticed first: the refused
    # offset commit (a "transaction aborted" warning naming "Unknown member") or the
    # lost assignment (nothing at all: see test_zombie_that_lost_its_partitions_says_so).


def membership_args(membership: str, name: str) -> list[str]:
    """A dynamic member has no group.instance.id: its client.id names it to the probe."""
    if membership == "static":
        return []
    return ["--membership", "dynamic", "-X", f"client.id={name}"]


# ---- what a zombie says ------------------------------------------------------------------


RENEWED = "a new producer replaces the lost one"


def test_zombie_that_lost_its_partitions_says_so(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """An idle worker paused past its session timeout while another takes over: on
    SIGCONT it finds its partitions lost and rejoins; stderr must say so."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=PARTITIONS)
    all_partitions = set(range(PARTITIONS))
    produce_records(
        input_producer(kafka_bootstrap), config.input_topic, build_workload(7, 2_000, 200).records
    )
    probe = GroupProbe(kafka_bootstrap, config)
    try:
        with launched(
            kafka_bootstrap,
            config,
            tmp_path / "state",
            tmp_path / "logs",
            session_timeout_ms=SESSION_TIMEOUT_MS,
        ) as launcher:
            a = launcher.start("a")
            probe.wait_caught_up(60, "A to process its input")
            a.signal(signal.SIGSTOP)
            b = launcher.start("b")
            wait_for(
                lambda: probe.assignment() == {"b": all_partitions},
                SESSION_TIMEOUT_MS / 1000 + 60,
                "B to take over every partition from the paused A",
            )
            a.signal(signal.SIGCONT)
            wait_for(lambda: bool(probe.assignment().get("a")), 60, "A to rejoin the group")
            assert a.alive(), a.stderr()
            for worker in (a, b):
                assert worker.stop() == 0, worker.stderr()[-3000:]
    finally:
        probe.close()
    said = [line for line in a.stderr().splitlines() if '"level": "warning"' in line]
    assert any("lost" in line.lower() for line in said), f"A's stderr:\n{a.stderr()}"


def test_worker_fenced_by_its_transaction_timeout_names_the_timeout_and_goes_on(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """A lone worker paused inside a transaction past its transaction timeout (but not
    its session timeout) is fenced on SIGCONT: one warning line must name the real cause,
    and the worker must go on with a new producer, exactly once."""
    transaction_timeout_ms = 6_000
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=PARTITIONS)
    records = build_workload(8, 40_000, 4_000).records
    produce_records(input_producer(kafka_bootstrap), config.input_topic, records[:5_000])
    probe = GroupProbe(kafka_bootstrap, config)
    try:
        with launched(
            kafka_bootstrap,
            config,
            tmp_path / "state",
            tmp_path / "logs",
            transaction_timeout_ms=transaction_timeout_ms,
            commit_every=20_000,
            commit_interval_ms=1_000,
        ) as launcher:
            arm = tmp_path / "arm-stop"
            # Frozen by its own fault point, a random number of records after being armed.
            a = launcher.start(
                "a",
                fault=f"stop:after_state_update:{random.randrange(100, 3_000)}",
                env={"SEQGATE_FAULT_ARMED": str(arm)},
            )
            probe.wait_committed(5_000, 60, "A to process the preloaded input")
            feeder = Feeder(
                kafka_bootstrap, config.input_topic, records[5_000:], chunk=1_000, pause_s=0.3
            ).start()
            freeze_until_the_broker_aborts(
                a, probe, kafka_bootstrap, arm, transaction_timeout_ms / 1000 + 30
            )
            a.signal(signal.SIGCONT)
            feeder.join(120)
            probe.wait_caught_up(120, "the worker to go on with a new producer")
            assert a.stop() == 0, a.stderr()[-3000:]
    finally:
        probe.close()
    report = check_verified(kafka_bootstrap, config, inputs=len(records), min_accepted=1)
    assert report.totals()["duplicated"] == 0
    renewed = [line for line in a.stderr().splitlines() if RENEWED in line]
    assert len(renewed) == 1, a.stderr()
    assert "past --transaction-timeout-ms (6000 ms)" in renewed[0], renewed
