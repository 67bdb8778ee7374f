"""The decision rule, without Kafka: microseconds per case."""

from __future__ import annotations

import pytest

from seqgate.schemas.outcomes import Outcome
from seqgate.schemas.reasons import RejectReason
from seqgate.schemas.records import ObjectEvent, Watermark
from seqgate.streams.errors import UndecidableEvent
from seqgate.streams.rules.policy import Policy, decide


def event(position: str | None, kind: str = "created") -> ObjectEvent:
    return ObjectEvent(
        id=f"id-{position}-{kind}",
        source="s3",
        bucket="b",
        key="k",
        kind=kind,
        event_name="ObjectCreated:Put",
        position=position,
        version_id=None,
        size=None,
        etag=None,
        event_time=None,
        origin="test",
    )


def mark(position: str) -> Watermark:
    return Watermark(position, f"id-{position}", 0, 0)


@pytest.mark.parametrize(
    ("ordering", "position", "current", "expected"),
    [
        ("numeric", "f", None, Outcome.ACCEPTED),
        ("numeric", "000F", "f", Outcome.DUPLICATE),
        ("numeric", "e", "f", Outcome.STALE),
        ("numeric", "10", "f", Outcome.ACCEPTED),
        ("aws", "000F", "f", Outcome.STALE),
        ("aws", "10", "f", Outcome.STALE),
        ("aws", "F0", "f", Outcome.DUPLICATE),
        ("aws", "f1", "f", Outcome.ACCEPTED),
    ],
)
def test_ordered_decisions(
    ordering: str, position: str, current: str | None, expected: Outcome
) -> None:
    policy = Policy.build(ordering)
    watermark = None if current is None else mark(current)
    assert decide(event(position), watermark, policy) is expected


def test_kinds_not_admitted_are_filtered_whatever_the_position() -> None:
    policy = Policy.build("aws")
    assert decide(event("ff", kind="removed"), mark("01"), policy) is Outcome.FILTERED
    assert decide(event(None, kind="removed"), None, policy) is Outcome.FILTERED


def test_admitting_removed_makes_a_late_create_stale() -> None:
    policy = Policy.build("aws", ["created", "removed"])
    assert decide(event("20", kind="removed"), mark("10"), policy) is Outcome.ACCEPTED
    assert decide(event("15"), mark("20"), policy) is Outcome.STALE


def test_unknown_kind_in_configuration_is_refused() -> None:
    with pytest.raises(ValueError, match=r"valid kinds are .*created.*version_removed"):
        Policy.build("aws", ["created", "deleted"])


@pytest.mark.parametrize(
    ("position", "current", "reason"),
    [
        (None, None, RejectReason.MISSING_POSITION),
        ("xyz", None, RejectReason.INVALID_SEQUENCER),
        ("xyz", "01", RejectReason.INVALID_SEQUENCER),
        ("", None, RejectReason.INVALID_SEQUENCER),
    ],
)
def test_undecidable_events_carry_a_reason(
    position: str | None, current: str | None, reason: RejectReason
) -> None:
    watermark = None if current is None else mark(current)
    with pytest.raises(UndecidableEvent) as raised:
        decide(event(position), watermark, Policy.build("aws"))
    assert raised.value.reason is reason
