"""The compiled core behind `--engine compiled` (docs/processor.md#engines), for the worker
and the bridges: loaded once, checked against this seqgate, refused with one line when it is
not there."""

from __future__ import annotations

from types import ModuleType
from typing import Final

from seqgate.runtime.errors import EngineUnavailable
from seqgate.schemas.outcomes import Outcome

ENGINES: Final = ("compiled", "python")
"""The compiled core, deferring to the Python rules for whatever it cannot prove it does as
they do (the default), or those rules alone, the reference (worker/compiled_step.py for the
worker's record step, connectors/parsers/compiled.py for the bridges' S3 records)."""

OUTCOMES: Final = (
    Outcome.ACCEPTED,
    Outcome.DUPLICATE,
    Outcome.STALE,
    Outcome.LATE,
    Outcome.FILTERED,
)
"""The outcomes the core reaches, by the index its results use (`seqgate._core.OUTCOMES`)."""


def load_core() -> ModuleType:
    """`seqgate._core`; raises EngineUnavailable naming the two fixes."""
    try:
        from seqgate import _core
    except ImportError as error:
        raise EngineUnavailable(
            f"--engine compiled: the compiled core seqgate._core is not in this installation"
            f" ({error}): install seqgate from its sources with cargo (Rust 1.85+) on the PATH"
            " (`bash scripts/bootstrap.sh`), or run the Python engine with --engine python"
        ) from None
    if tuple(_core.OUTCOMES) != tuple(outcome.value for outcome in OUTCOMES):
        raise EngineUnavailable(
            "--engine compiled: seqgate._core was built from other sources than this"
            " seqgate (its outcomes differ): reinstall seqgate, or use --engine python"
        )
    return _core
