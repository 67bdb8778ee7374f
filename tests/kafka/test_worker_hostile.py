"""Input the bridge never writes, against a real broker: the worker rejects it and goes on.

Each case was a crash loop, a livelock or a silent mis-decision before (issue 14):
a non-UTF-8 key crashed the worker on every restart; oversized fields made an outbox
record the broker refused, aborting the same transaction forever; an unknown source
was decided as dedupe-only; a key other than the event's identity gave an object a
second watermark.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from seqgate.schemas.codec import OBJECT_EVENT, OUTBOX_RECORD, REJECTED_RECORD
from seqgate.schemas.identity import event_identity
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.tools.verify import verify
from seqgate.streams.worker.processor import Worker, WorkerConfig, WorkerFatalError
from tests.support.events import event
from tests.support.kafka_helpers import (
    caught_up,
    make_config,
    produce,
    read_all,
    running,
    verify_target,
    wait_for,
    worker_thread,
)

pytestmark = pytest.mark.kafka


def identity_of(e: ObjectEvent) -> bytes:
    return event_identity(e.source, e.bucket, e.key).encode("utf-8")


def small_topic(bootstrap: str, name: str, max_bytes: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"max.message.bytes": str(max_bytes)}
    for future in admin.create_topics([NewTopic(name, 1, 1, config=config)]).values():
        future.result()


def rejected_records(bootstrap: str, config: WorkerConfig) -> dict[int, tuple[str, str, bytes]]:
    """Input offset -> (reason, message, raw) of the worker's rejected records."""
    found = {}
    for record in read_all(bootstrap, config.rejected_topic):
        letter = REJECTED_RECORD.decode(record.value or b"")
        found[int(letter.origin.rsplit(":", 1)[1])] = (letter.reason, letter.message, letter.raw)
    return found


def test_records_it_cannot_decide_are_rejected_records_and_the_worker_goes_on(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """Before: the non-UTF-8 key raised UnicodeDecodeError (exit 1 on every restart); the
    520 KB sequencers livelocked the partition (118 aborts in 60 s); the unknown source was
    accepted as dedupe-only; the mismatched key got its own watermark."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1)
    good = event("good.txt", "10")
    huge = "1" + "0" * 520_000
    records: list[tuple[bytes | None, bytes]] = [
        (b"\xff\xfe not utf-8", OBJECT_EVENT.encode(good)),  # 0
        (identity_of(good), OBJECT_EVENT.encode(event("big.txt", huge))),  # 1 (key mismatch too)
        (
            identity_of(event("big.txt", "1")),
            OBJECT_EVENT.encode(event("big.txt", huge)),
        ),  # 2: position over its limit
        (identity_of(good), OBJECT_EVENT.encode(dataclasses.replace(good, source="s4"))),  # 3
        (b"s3://bucket/other.txt", OBJECT_EVENT.encode(good)),  # 4: not the event's identity
        (identity_of(good), OBJECT_EVENT.encode(good)),  # 5: accepted
        (None, OBJECT_EVENT.encode(event("keyless.txt", "10"))),  # 6: no key: derived, accepted
        (identity_of(good), OBJECT_EVENT.encode(good)),  # 7: duplicate
    ]
    produce(kafka_bootstrap, config.input_topic, records)
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 60, "the worker to catch up")
    worker = running.worker
    assert worker.aborts == 0
    outcomes = [d.outcome.value for d in sorted(running.decisions, key=lambda d: d.offset)]
    assert outcomes == [*["rejected"] * 5, "accepted", "accepted", "duplicate"]
    letters = rejected_records(kafka_bootstrap, config)
    reasons = {offset: letter[0] for offset, letter in letters.items()}
    assert reasons == {
        0: "undecodable_event",
        1: "invalid_field",
        2: "invalid_field",
        3: "unknown_source",
        4: "key_mismatch",
    }
    assert "position" in letters[2][1] and "128" in letters[2][1]
    assert letters[0][2] == records[0][1], "the rejected record keeps the input's exact bytes"
    outbox = [
        OUTBOX_RECORD.decode(r.value or b"") for r in read_all(kafka_bootstrap, config.outbox_topic)
    ]
    assert [r.input_offset for r in outbox] == [5, 6]
    report = verify(verify_target(config))
    assert report.ok(), report.as_dict()


def test_a_record_the_broker_refuses_is_found_and_rejected(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """The outbox topic takes at most 1,500 bytes a batch: the two events with 1,800-byte
    keys (within the field limits) can never be written there. Before: abort and rewind
    forever on the same input offset. After: the transaction's input is decided again one
    record per transaction, the two refused inputs become unwritable_record rejected records,
    the others reach the outbox, and verify (which reads those rejected records) passes."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1)
    small_outbox = f"{config.outbox_topic}.small"
    small_topic(kafka_bootstrap, small_outbox, 1_500)
    config = dataclasses.replace(config, outbox_topic=small_outbox, commit_every=100)
    long_key = "k" * 1_800
    events = [
        event("a.txt", "10"),
        event(long_key, "10"),
        event("b.txt", "10"),
        event("c.txt", "10"),
        event(long_key + "2", "10"),
        event("a.txt", "11"),
    ]
    produce(
        kafka_bootstrap,
        config.input_topic,
        [(identity_of(e), OBJECT_EVENT.encode(e)) for e in events],
    )
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 90, "the worker to catch up")
    assert 1 <= running.worker.aborts <= 10, running.worker.aborts  # bounded: no loop
    letters = rejected_records(kafka_bootstrap, config)
    assert {offset: letter[0] for offset, letter in letters.items()} == {
        1: "unwritable_record",
        4: "unwritable_record",
    }
    assert "Message size too large" in letters[1][1]
    outbox = [OUTBOX_RECORD.decode(r.value or b"") for r in read_all(kafka_bootstrap, small_outbox)]
    assert [r.input_offset for r in outbox] == [0, 2, 3, 5]
    report = verify(verify_target(config))
    assert report.ok(), report.as_dict()
    assert report.totals()["expected"] == 4


def test_a_rejection_too_large_for_its_topic_goes_without_the_input_bytes(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """The rejected topic takes 1,200 bytes a batch: a 1,400-byte undecodable input cannot be
    copied into its rejected record. Before: abort forever. After: the rejected record says where
    the bytes are (the input topic, partition and offset) instead of copying them."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1)
    small_rejected = f"{config.rejected_topic}.small"
    small_topic(kafka_bootstrap, small_rejected, 1_200)
    config = dataclasses.replace(config, rejected_topic=small_rejected)
    good = event("a.txt", "10")
    produce(
        kafka_bootstrap,
        config.input_topic,
        [(b"s3://bucket/junk", b"\x00" * 1_400), (identity_of(good), OBJECT_EVENT.encode(good))],
    )
    with worker_thread(config) as running:
        wait_for(caught_up(kafka_bootstrap, config), 90, "the worker to catch up")
    letters = rejected_records(kafka_bootstrap, config)
    assert list(letters) == [0]
    reason, message, raw = letters[0]
    assert reason == "undecodable_event" and raw == b""
    assert f"kafka:{config.input_topic}:0:0" in message and "1400 bytes" in message
    outbox = read_all(kafka_bootstrap, config.outbox_topic)
    assert [OUTBOX_RECORD.decode(r.value or b"").input_offset for r in outbox] == [1]
    assert running.worker.aborts <= 6  # bounded: no loop


def test_aborts_that_never_end_stop_the_worker_with_one_line(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """The outbox topic does not exist (and the broker does not create topics): no
    transaction can commit. The worker must stop with one line, never retry forever:
    here the broker times the transaction out first (fenced: named with its setting)."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1)
    config = dataclasses.replace(
        config,
        outbox_topic=f"{config.outbox_topic}.missing",
        stall_timeout_ms=6_000,
        kafka_timeout_s=3.0,
        transaction_timeout_ms=3_000,
    )
    good = event("a.txt", "10")
    produce(kafka_bootstrap, config.input_topic, [(identity_of(good), OBJECT_EVENT.encode(good))])
    with running(Worker(config), expect_errors=True) as run:
        run.thread.join(90)
        assert not run.thread.is_alive(), "the worker still aborts and retries after 90 s"
    assert len(run.errors) == 1 and isinstance(run.errors[0], WorkerFatalError), run.errors
    message = str(run.errors[0])
    assert "--transaction-timeout-ms" in message or "--stall-timeout-ms" in message, message
    assert "\n" not in message


def test_a_transaction_the_broker_timed_out_is_named_with_its_setting(
    kafka_bootstrap: str, unique_name: str, tmp_path: Path
) -> None:
    """Before: "fatal Kafka error: Producer attempted a transactional operation in an invalid
    state". After: the line says the broker aborted the transaction and names the setting."""
    config = make_config(kafka_bootstrap, unique_name, tmp_path, partitions=1)
    worker = Worker(config)
    try:
        for code in (KafkaError.INVALID_TXN_STATE, KafkaError.INVALID_PRODUCER_EPOCH):
            text = worker._describe_fatal(KafkaError(code))
            assert "--transaction-timeout-ms" in text and "aborted" in text, text
    finally:
        worker._close(graceful=False)
