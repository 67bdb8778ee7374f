"""Where things are in the checkout, for tests that read files or start `python -m seqgate…`."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
