"""runtime.failure_spell: a run of the same failure is one warning, and its end another."""

from __future__ import annotations

import logging

import pytest

from seqgate.runtime.failure_spell import FailureSpell

_LOG = logging.getLogger("seqgate.test.spell")


def _spell(now: list[float]) -> FailureSpell:
    return FailureSpell(_LOG, "Kafka refused", "Kafka takes writes again", clock=lambda: now[0])


def test_a_spell_is_one_warning_at_its_start_and_one_at_its_end(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [10.0]
    spell = _spell(now)
    with caplog.at_level(logging.INFO, logger=_LOG.name):
        for _ in range(50):
            spell.failed(route="s3")
        now[0] = 42.5
        spell.succeeded()
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert [r.getMessage() for r in warnings] == ["Kafka refused", "Kafka takes writes again"]
    assert warnings[0].route == "s3"  # type: ignore[attr-defined]
    assert (warnings[1].after_s, warnings[1].failures) == (32.5, 50)  # type: ignore[attr-defined]
    repeats = [r for r in caplog.records if r.levelno == logging.INFO]
    assert len(repeats) == 49 and repeats[-1].failures == 50  # type: ignore[attr-defined]


def test_success_without_a_spell_says_nothing_and_a_new_spell_is_said_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    spell = _spell([0.0])
    with caplog.at_level(logging.WARNING, logger=_LOG.name):
        spell.succeeded()
        assert caplog.records == []
        spell.failed()
        spell.succeeded()
        spell.failed()
    assert [r.getMessage() for r in caplog.records] == [
        "Kafka refused",
        "Kafka takes writes again",
        "Kafka refused",
    ]
    assert spell.active and spell.failures == 1
