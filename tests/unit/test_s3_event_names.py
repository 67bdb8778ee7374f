"""The event-name tables (seqgate/connectors/parsers/s3/event_names.py,
seqgate/connectors/parsers/s3/minio.py), the kinds (seqgate/schemas/kinds.py) and docs/kinds.md."""

from __future__ import annotations

import re
from collections.abc import Mapping

import pytest

from seqgate.connectors.parsers.s3.event_names import (
    S3_EVENT_NAMES,
    S3EventName,
    event_name_info,
    kind_for,
    name_table,
    summarize_names,
)
from seqgate.connectors.parsers.s3.minio import MINIO_EVENT_NAMES, MINIO_UNMAPPED_NAMES
from seqgate.schemas import kinds
from seqgate.schemas.kinds import KIND_DESCRIPTIONS, SEQUENCED_KINDS, EventKind
from tests.support.paths import REPO

# The documented Amazon S3 names, written out independently of the table:
# name -> (kind without versionId, kind with versionId).
EXPECTED_S3: dict[str, tuple[str, str]] = {
    "ObjectCreated:Put": ("created", "created"),
    "ObjectCreated:Post": ("created", "created"),
    "ObjectCreated:Copy": ("created", "created"),
    "ObjectCreated:CompleteMultipartUpload": ("created", "created"),
    "ObjectRemoved:Delete": ("removed", "version_removed"),
    "ObjectRemoved:DeleteMarkerCreated": ("removed", "removed"),
    "ObjectRestore:Post": ("restore_started", "restore_started"),
    "ObjectRestore:Completed": ("restored", "restored"),
    "ObjectRestore:Delete": ("restore_expired", "restore_expired"),
    "ReducedRedundancyLostObject": ("object_lost", "object_lost"),
    "Replication:OperationFailedReplication": ("replication_failed", "replication_failed"),
    "Replication:OperationMissedThreshold": (
        "replication_missed_threshold",
        "replication_missed_threshold",
    ),
    "Replication:OperationReplicatedAfterThreshold": (
        "replication_after_threshold",
        "replication_after_threshold",
    ),
    "Replication:OperationNotTracked": ("replication_not_tracked", "replication_not_tracked"),
    "LifecycleExpiration:Delete": ("removed", "version_removed"),
    "LifecycleExpiration:DeleteMarkerCreated": ("removed", "removed"),
    "LifecycleTransition": ("storage_class_changed", "storage_class_changed"),
    "IntelligentTiering": ("access_tier_changed", "access_tier_changed"),
    "ObjectTagging:Put": ("tags_changed", "tags_changed"),
    "ObjectTagging:Delete": ("tags_changed", "tags_changed"),
    "ObjectAcl:Put": ("acl_changed", "acl_changed"),
}

EXPECTED_SEQUENCER_REQUIRED = {
    "ObjectCreated:Put",
    "ObjectCreated:Post",
    "ObjectCreated:Copy",
    "ObjectCreated:CompleteMultipartUpload",
    "ObjectRemoved:Delete",
    "ObjectRemoved:DeleteMarkerCreated",
    "LifecycleExpiration:Delete",
    "LifecycleExpiration:DeleteMarkerCreated",
}


# --------------------------------------------------------------------------- S3 table


def test_s3_table_is_exactly_the_documented_names() -> None:
    assert set(S3_EVENT_NAMES) == set(EXPECTED_S3)


@pytest.mark.parametrize("name", sorted(EXPECTED_S3))
def test_s3_kinds(name: str) -> None:
    without, with_version = EXPECTED_S3[name]
    assert kind_for(name, None) == without
    assert kind_for(name, "3HL4kqtJlcpXroDTDmJ") == with_version
    assert kind_for(name, "null") == with_version  # suspended versioning's version id
    info = event_name_info(name)
    assert info is not None
    assert info.name == name
    assert info.kind_for(None) == without
    assert info.kind_for("v") == with_version


@pytest.mark.parametrize("name", sorted(EXPECTED_S3))
def test_s3_sequencer_required(name: str) -> None:
    info = S3_EVENT_NAMES[name]
    assert info.sequencer_required is (name in EXPECTED_SEQUENCER_REQUIRED)


@pytest.mark.parametrize(
    "name",
    [
        "s3:ObjectCreated:Put",
        "s3:TestEvent",
        "ObjectCreated:*",
        "ObjectCreated",
        "objectcreated:put",
        "ObjectCreated:Put ",
        " ObjectCreated:Put",
        "ObjectAccessed:Get",
        "ObjectCreated:PutTagging",
        "ObjectRemoved:DeleteAllVersions",
        "",
    ],
)
def test_unknown_names(name: str) -> None:
    assert kind_for(name, None) is None
    assert kind_for(name, "v") is None
    assert event_name_info(name) is None


def test_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        S3_EVENT_NAMES["Invented:Name"] = S3_EVENT_NAMES["ObjectAcl:Put"]  # type: ignore[index]


# --------------------------------------------------------------------------- kinds


def all_kinds(table: Mapping[str, S3EventName]) -> set[str]:
    return {kind for info in table.values() for kind in info.kinds}


def test_every_kind_is_described_and_used() -> None:
    from tests.support.provider_kinds import PROVIDER_KIND_TABLES

    used = all_kinds(S3_EVENT_NAMES) | all_kinds(MINIO_EVENT_NAMES)
    used |= {kind for table in PROVIDER_KIND_TABLES.values() for kind in table.values()}
    assert used == set(KIND_DESCRIPTIONS)


def test_descriptions_are_one_line_each() -> None:
    for kind, text in KIND_DESCRIPTIONS.items():
        assert re.fullmatch(r"[a-z][a-z_]*", kind), kind
        assert text.strip() == text
        assert text
        assert "\n" not in text


def test_the_contract_kinds_are_there() -> None:
    assert {kind.value for kind in EventKind} == set(KIND_DESCRIPTIONS)
    assert list(KIND_DESCRIPTIONS) == list(EventKind)
    assert {"created", "removed", "version_removed"} == SEQUENCED_KINDS


def test_every_kind_has_its_plain_str_name() -> None:
    # The parsers' tables use these; the codec takes only exact str values.
    for kind in EventKind:
        plain_name = getattr(kinds, kind.name)
        assert type(plain_name) is str
        assert plain_name == kind.value


def test_sequencer_required_follows_the_kinds() -> None:
    for table in (S3_EVENT_NAMES, MINIO_EVENT_NAMES):
        for info in table.values():
            assert info.sequencer_required is bool(set(info.kinds) & SEQUENCED_KINDS)


def test_kinds_of_an_entry() -> None:
    delete = S3_EVENT_NAMES["ObjectRemoved:Delete"]
    assert delete.kinds == ("removed", "version_removed")
    assert S3_EVENT_NAMES["ObjectAcl:Put"].kinds == ("acl_changed",)
    same = S3EventName("X", "created", "d", versioned_kind="created")
    assert same.kinds == ("created",)


# --------------------------------------------------------------------------- helpers


def test_name_table_refuses_duplicates_and_undocumented_kinds() -> None:
    entry = S3EventName("A", "created", "a")
    with pytest.raises(ValueError, match="twice"):
        name_table([entry, entry])
    with pytest.raises(ValueError, match="undocumented"):
        name_table([S3EventName("B", "invented_kind", "b")])
    with pytest.raises(ValueError, match="undocumented"):
        name_table([S3EventName("C", "removed", "c", versioned_kind="invented_kind")])
    assert list(name_table([entry])) == ["A"]


def test_summarize_names() -> None:
    assert summarize_names(["A:x", "A:y", "B", "C:z"]) == "A:*, B, C:z"
    assert summarize_names(["A:x", "A:y"], excluded=["A:w"]) == "A:x, A:y"
    assert summarize_names([]) == ""
    assert summarize_names(["A:x", "A:y", "A", "B", "B"]) == "A:*, A, B, B"  # no ':' stays
    assert summarize_names(S3_EVENT_NAMES) == (
        "ObjectCreated:*, ObjectRemoved:*, LifecycleExpiration:*, LifecycleTransition, "
        "IntelligentTiering, ObjectRestore:*, ObjectTagging:*, ObjectAcl:Put, "
        "ReducedRedundancyLostObject, Replication:*"
    )
    assert summarize_names(MINIO_EVENT_NAMES, MINIO_UNMAPPED_NAMES) == (
        "s3:ObjectCreated:*, s3:ObjectRemoved:Delete, s3:ObjectRemoved:DeleteMarkerCreated, "
        "s3:ObjectAccessed:*, s3:ObjectRestore:*, s3:ObjectTransition:*"
    )


# --------------------------------------------------------------------------- docs/kinds.md


def doc_rows() -> dict[str, list[str]]:
    """First cell (without backticks) -> all cells, for every table row of docs/kinds.md."""
    rows: dict[str, list[str]] = {}
    for line in (REPO / "docs" / "kinds.md").read_text(encoding="utf-8").splitlines():
        if not line.startswith("| `"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        name = cells[0].strip("`")
        assert name not in rows, f"{name} is listed twice in docs/kinds.md"
        rows[name] = cells
    return rows


def plain(text: str) -> str:
    return text.replace("`", "")


def expected_kind_cell(info: S3EventName) -> str:
    if len(info.kinds) == 2:
        return f"`{info.kind}`; with a `versionId`: `{info.versioned_kind}`"
    return f"`{info.kind}`"


@pytest.mark.parametrize("table", [S3_EVENT_NAMES, MINIO_EVENT_NAMES], ids=["s3", "minio"])
def test_docs_list_every_name_with_its_kind(table: Mapping[str, S3EventName]) -> None:
    rows = doc_rows()
    for name, info in table.items():
        assert name in rows, f"{name} is missing from docs/kinds.md"
        _, kind_cell, sequencer, description = rows[name]
        assert kind_cell == expected_kind_cell(info), name
        assert sequencer == ("required" if info.sequencer_required else "optional"), name
        assert plain(description) == info.description, name


def test_docs_describe_every_kind() -> None:
    rows = doc_rows()
    for kind, text in KIND_DESCRIPTIONS.items():
        assert kind in rows, f"kind {kind} is missing from docs/kinds.md"
        _, meaning, sequencer = rows[kind]
        assert meaning == text
        assert sequencer == ("required" if kind in SEQUENCED_KINDS else "optional")


def test_docs_list_the_unmapped_minio_names() -> None:
    rows = doc_rows()
    for name, why in MINIO_UNMAPPED_NAMES.items():
        assert plain(rows[name][1]) == why


def test_docs_list_nothing_else() -> None:
    known = {*S3_EVENT_NAMES, *MINIO_EVENT_NAMES, *MINIO_UNMAPPED_NAMES, *KIND_DESCRIPTIONS}
    assert set(doc_rows()) == known
