"""Dedupe-only sources (docs/design.md §4.2): decided by event id within a record-time window."""

from __future__ import annotations

from seqgate.schemas.codec import SEEN_EVENT
from seqgate.schemas.records import ObjectEvent, SeenEvent
from seqgate.streams.rules.decider import InputPosition, decide_record, purgeable
from seqgate.streams.rules.policy import Outcome, Policy, Trust, decide_dedupe
from seqgate.streams.state.store import SEEN_PREFIX, STREAM_TIME_KEY
from tests.support.dedupe_events import WINDOW, minio_event

# ---- pure rules ----------------------------------------------------------------------------------


def test_minio_is_dedupe_only_by_default_and_ordered_by_option() -> None:
    assert Policy.build().trust_for("minio") is Trust.DEDUPE
    assert Policy.build().trust_for("s3") is Trust.ORDERED
    assert Policy.build(ordered_sources=["s3", "minio"]).trust_for("minio") is Trust.ORDERED


def test_an_id_is_kept_two_windows_and_an_event_older_than_one_is_late() -> None:
    policy = Policy.build(dedupe_window_ms=WINDOW)
    event = minio_event("a.txt", "17A6B2C3D4E5F607")
    seen = SeenEvent(event.id, "minio://media/a.txt", 1_000, 0, 0)
    assert decide_dedupe(event, None, 1_000, 1_000, policy) is Outcome.ACCEPTED
    assert decide_dedupe(event, seen, 1_000 + WINDOW, 1_000 + WINDOW, policy) is Outcome.DUPLICATE
    # Kept for the grace too (a second window): a repeat is never late while kept.
    kept = 1_000 + 2 * WINDOW
    assert decide_dedupe(event, seen, kept, 1_000, policy) is Outcome.DUPLICATE
    assert decide_dedupe(event, seen, kept + 1, kept + 1, policy) is Outcome.ACCEPTED
    # Not kept, and older than the window behind stream time: late, never accepted.
    assert decide_dedupe(event, seen, kept + 1, kept - WINDOW, policy) is Outcome.LATE
    assert decide_dedupe(event, None, 50_000, 50_000 - WINDOW - 1, policy) is Outcome.LATE
    assert decide_dedupe(event, None, 50_000, 50_000 - WINDOW, policy) is Outcome.ACCEPTED
    removed = minio_event("a.txt", "17A6B2C3D4E5F608", "s3:ObjectRemoved:Delete")
    assert decide_dedupe(removed, None, 0, 0, policy) is Outcome.FILTERED


def test_stream_time_only_moves_forward_and_decides_expiry() -> None:
    policy = Policy.build(dedupe_window_ms=WINDOW)
    state: dict[bytes, bytes] = {}
    first = minio_event("a.txt", "01")
    late = minio_event("b.txt", "02")

    def run(event: ObjectEvent, offset: int, time: int) -> Outcome:
        verdict = decide_record(
            _View(state),
            event,
            f"minio://media/{event.key}",
            InputPosition(0, offset, time),
            policy,
        )
        for key, value in verdict.changes.items():
            assert value is not None
            state[key] = value
        return verdict.outcome

    assert run(first, 0, 50_000) is Outcome.ACCEPTED
    assert run(late, 1, 45_000) is Outcome.ACCEPTED  # an older timestamp: stream time stays
    assert state[STREAM_TIME_KEY] == b"50000"
    assert run(first, 2, 20_000) is Outcome.DUPLICATE  # kept: a duplicate, however old
    assert run(first, 3, 70_000) is Outcome.DUPLICATE  # kept for two windows
    assert run(first, 4, 70_001) is Outcome.ACCEPTED  # 50 000 + 2 windows < 70 001
    entry = SEEN_EVENT.decode(state[SEEN_PREFIX + late.id.encode()])
    assert purgeable([entry], 65_001, policy) == [SEEN_PREFIX + late.id.encode()]
    assert purgeable([entry], 65_000, policy) == []


class _View:
    def __init__(self, state: dict[bytes, bytes]) -> None:
        self.state = state

    def get(self, key: bytes) -> bytes | None:
        return self.state.get(key)
