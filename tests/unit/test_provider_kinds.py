"""docs/kinds.md lists every event type of the providers beyond the S3 family, with the
kind it becomes, exactly as the parsers' tables say."""

from __future__ import annotations

import pytest

from seqgate.schemas.kinds import KIND_DESCRIPTIONS
from tests.support.paths import REPO
from tests.support.provider_kinds import PROVIDER_KIND_TABLES

DOC = REPO / "docs" / "kinds.md"


def provider_rows() -> dict[tuple[str, str], str]:
    """(provider, type) -> kind cell, from the rows of the 'Other providers' table."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## Other providers", 1)[1]
    rows: dict[tuple[str, str], str] = {}
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("| ") or len(cells) != 3 or cells[0] in ("provider", "---"):
            continue
        rows[(cells[0], cells[1].strip("`"))] = cells[2]
    return rows


@pytest.mark.parametrize("provider", sorted(PROVIDER_KIND_TABLES))
def test_every_provider_type_is_documented_with_its_kind(provider: str) -> None:
    rows = provider_rows()
    for name, kind in PROVIDER_KIND_TABLES[provider].items():
        assert rows.get((provider, name)) == f"`{kind}`", f"{provider} {name} in docs/kinds.md"


def test_every_documented_kind_is_a_known_kind() -> None:
    for (provider, name), cell in provider_rows().items():
        first = cell.split("`")[1]  # each kind cell starts with the kind
        assert first in KIND_DESCRIPTIONS, f"{provider} {name}: {first} is not a kind"
