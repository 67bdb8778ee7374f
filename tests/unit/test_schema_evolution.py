"""Schema evolution: every schema must stay backward compatible with its history.

``seqgate/schemas/history/<version>/*.avsc`` are the committed copies of the schemas
of each released version; the newest is the baseline. A reader with the
current schema must be able to read whatever any released version wrote
(changelog replay after an upgrade, outbox history). When releasing a version
whose schemas changed, copy them into a new ``seqgate/schemas/history/<version>/``
(see docs/contracts.md, "Adding a field safely").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import seqgate.schemas
from seqgate.schemas.avro_schemas import SCHEMA_FILES
from seqgate.schemas.compat import check_compatible

SCHEMA_DIR = Path(seqgate.schemas.__file__).parent
HISTORY_DIR = SCHEMA_DIR / "history"
RELEASES = sorted(
    (p for p in HISTORY_DIR.iterdir() if p.is_dir()),
    key=lambda p: tuple(int(part) for part in p.name.split(".")),
)
BASELINE_DIR = RELEASES[-1]


def _text(directory: Path, filename: str) -> str:
    return (directory / filename).read_text(encoding="utf-8")


def _references(directory: Path, filename: str) -> list[str]:
    """The schemas whose named types ``filename`` may use: those loaded before it."""
    before = SCHEMA_FILES[: SCHEMA_FILES.index(filename)]
    return [_text(directory, f) for f in before if (directory / f).exists()]


def _check(
    filename: str,
    new_text: str,
    *,
    new_refs: list[str] | None = None,
    release: Path = BASELINE_DIR,
) -> list[str]:
    return check_compatible(
        reader_json=new_text,
        writer_json=_text(release, filename),
        reader_references=_references(SCHEMA_DIR, filename) if new_refs is None else new_refs,
        writer_references=_references(release, filename),
    )


def _modified(filename: str, change: Any) -> str:
    schema = json.loads(_text(SCHEMA_DIR, filename))
    change(schema)
    return json.dumps(schema)


def _field(schema: dict[str, Any], name: str) -> dict[str, Any]:
    field: dict[str, Any] = next(f for f in schema["fields"] if f["name"] == name)
    return field


# -- the real check ---------------------------------------------------------------------


def test_every_schema_has_a_baseline() -> None:
    current = sorted(p.name for p in SCHEMA_DIR.glob("*.avsc"))
    baselines = sorted(p.name for p in BASELINE_DIR.glob("*.avsc"))
    assert current == sorted(SCHEMA_FILES), "schemas/*.avsc and avro_schemas.SCHEMA_FILES differ"
    assert baselines == current, (
        "every seqgate/schemas/*.avsc needs a committed copy in the newest "
        "seqgate/schemas/history/<version>/ "
        "(and a schema may not be deleted while its baseline exists)"
    )


@pytest.mark.parametrize(
    ("filename", "release"),
    [
        pytest.param(filename, release, id=f"{filename}@{release.name}")
        for release in RELEASES
        for filename in SCHEMA_FILES
        if (release / filename).exists()  # a schema added later has nothing to read
    ],
)
def test_schema_is_backward_compatible_with_every_release(filename: str, release: Path) -> None:
    problems = _check(filename, _text(SCHEMA_DIR, filename), release=release)
    assert problems == [], f"{filename} cannot read data written by {release.name}: {problems}"


# -- the check can fail -------------------------------------------------------------------


def test_adding_a_field_without_default_is_incompatible() -> None:
    def add(schema: dict[str, Any]) -> None:
        schema["fields"].append({"name": "tenant", "type": "string"})

    problems = _check("object_event.avsc", _modified("object_event.avsc", add))
    assert len(problems) == 1
    assert "reader_field_missing_default_value" in problems[0]
    assert "tenant" in problems[0]


def test_changing_a_type_is_incompatible() -> None:
    def to_string(schema: dict[str, Any]) -> None:
        _field(schema, "size")["type"] = ["null", "string"]

    problems = _check("object_event.avsc", _modified("object_event.avsc", to_string))
    assert problems
    assert "missing_union_branch" in problems[0]


def test_narrowing_long_to_int_is_incompatible() -> None:
    def narrow(schema: dict[str, Any]) -> None:
        _field(schema, "input_offset")["type"] = "int"

    problems = _check("watermark.avsc", _modified("watermark.avsc", narrow))
    assert problems == [
        "type_mismatch: reader type: int not compatible with writer type: long (at /fields/3/type)"
    ]


def test_making_an_optional_field_required_is_incompatible() -> None:
    def required(schema: dict[str, Any]) -> None:
        field = _field(schema, "record_index")
        field["type"] = "int"
        del field["default"]

    assert _check("rejected_record.avsc", _modified("rejected_record.avsc", required))


def test_renaming_the_record_is_incompatible() -> None:
    def rename(schema: dict[str, Any]) -> None:
        schema["name"] = "Watermark2"

    problems = _check("watermark.avsc", _modified("watermark.avsc", rename))
    assert problems
    assert "name_mismatch" in problems[0]


def test_an_incompatible_nested_event_breaks_the_outbox() -> None:
    # OutboxRecord nests io.seqgate.ObjectEvent by name: the check follows it.
    def add(schema: dict[str, Any]) -> None:
        schema["fields"].append({"name": "tenant", "type": "string"})

    problems = _check(
        "outbox_record.avsc",
        _text(SCHEMA_DIR, "outbox_record.avsc"),
        new_refs=[_modified("object_event.avsc", add)],
    )
    assert len(problems) == 1
    assert "tenant" in problems[0]
    assert "/fields/0/type/fields/12" in problems[0]


# -- and accepts what is safe ---------------------------------------------------------------


def test_adding_an_optional_field_with_default_is_compatible() -> None:
    def add(schema: dict[str, Any]) -> None:
        schema["fields"].append(
            {"name": "tenant", "type": ["null", "string"], "default": None, "doc": "d"}
        )

    assert _check("object_event.avsc", _modified("object_event.avsc", add)) == []
    # ... in both directions: old readers simply skip the new field
    new = _modified("object_event.avsc", add)
    assert (
        check_compatible(reader_json=_text(SCHEMA_DIR, "object_event.avsc"), writer_json=new) == []
    )


def test_promoting_int_to_long_and_removing_a_field_are_compatible() -> None:
    def evolve(schema: dict[str, Any]) -> None:
        _field(schema, "input_partition")["type"] = "long"
        schema["fields"] = [f for f in schema["fields"] if f["name"] != "event_id"]

    assert _check("watermark.avsc", _modified("watermark.avsc", evolve)) == []


def test_docs_are_free_to_change() -> None:
    def redoc(schema: dict[str, Any]) -> None:
        schema["doc"] = "new words"
        for field in schema["fields"]:
            field["doc"] = "new words"

    assert _check("outbox_record.avsc", _modified("outbox_record.avsc", redoc)) == []


def test_invalid_schema_is_reported() -> None:
    with pytest.raises(ValueError, match="invalid reader schema"):
        check_compatible(reader_json="{not json", writer_json=_text(SCHEMA_DIR, "watermark.avsc"))
    with pytest.raises(ValueError, match="invalid writer schema"):
        check_compatible(
            reader_json=_text(SCHEMA_DIR, "watermark.avsc"), writer_json='{"type": "nope"}'
        )
    with pytest.raises(ValueError, match="invalid reader schema"):
        # the named reference cannot be resolved without its reference schema
        check_compatible(
            reader_json=_text(SCHEMA_DIR, "outbox_record.avsc"),
            writer_json=_text(BASELINE_DIR, "outbox_record.avsc"),
        )
