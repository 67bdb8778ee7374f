"""The suite's two tiers, and the one place where a test's size depends on them.

``SEQGATE_TEST_TIER`` picks the tier of a run:

* ``fast`` (the default; ``bash scripts/test.sh`` and so ``.ci/run``): every guarantee at a
  size that still exercises it, so that a clean-clone run stays within 20 minutes here;
* ``soak`` (``bash scripts/soak.sh``): the full-size proofs (200,000-event kill -9 runs, the
  whole cluster-fault and partition matrix, the peers' torture, the largest state damage).

A test takes part in the tiers its ``tier`` marker names (``@pytest.mark.tier("fast",
"soak")``, or ``tier("soak")`` for a full-size variant the fast tier leaves out); a test
without the marker is of the fast tier only. The other tier's tests are deselected at
collection (pytest counts them as deselected, never as skipped): tests/conftest.py.

A test that runs in both tiers takes its sizes from :func:`sized`, never from a copy of
itself: ``EVENTS = sized(fast=30_000, soak=200_000)``. docs/testing.md maps every guarantee
to its test in each tier.
"""

from __future__ import annotations

import os
from typing import Final, TypeVar

__all__ = ["TIERS", "VARIABLE", "TierError", "sized", "tier_of_run"]

TIERS: Final = ("fast", "soak")
VARIABLE: Final = "SEQGATE_TEST_TIER"

T = TypeVar("T")


class TierError(ValueError):
    """``SEQGATE_TEST_TIER`` names no tier."""


def tier_of_run(environ: dict[str, str] | None = None) -> str:
    """The tier this run is of: ``$SEQGATE_TEST_TIER``, ``fast`` when unset or empty."""
    value = (os.environ if environ is None else environ).get(VARIABLE, "").strip() or "fast"
    if value not in TIERS:
        raise TierError(f"{VARIABLE}={value!r} is not a tier: use one of {', '.join(TIERS)}")
    return value


def sized(*, fast: T, soak: T) -> T:
    """The value of this run's tier: a size, a count, a duration."""
    return soak if tier_of_run() == "soak" else fast
