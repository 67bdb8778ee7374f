"""Documentation that operators rely on stays true to the code."""

from __future__ import annotations

from seqgate.schemas.reasons import RejectReason
from tests.support.paths import REPO


def test_every_reason_code_is_documented() -> None:
    text = (REPO / "docs" / "reasons.md").read_text()
    missing = [reason.value for reason in RejectReason if f"`{reason.value}`" not in text]
    assert missing == [], f"reason codes missing from docs/reasons.md: {missing}"


def test_readme_starts_with_exactly_two_setup_commands() -> None:
    text = (REPO / "README.md").read_text()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    blocks = setup.split("```")[1::2]
    commands = [
        line
        for block in blocks
        for line in block.splitlines()[1:]
        if line.strip() and not line.strip().startswith("#")
    ]
    assert commands == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert "bash scripts/test.sh" in (REPO / ".ci" / "run").read_text()


def test_readme_documents_the_soak_tier_command() -> None:
    text = (REPO / "README.md").read_text()
    soak = text.split("## The soak tier", 1)[1].split("\n## ", 1)[0]
    assert "```sh\nbash scripts/soak.sh\n```" in soak
    assert (REPO / "scripts" / "soak.sh").is_file()
