"""seqgate.schemas.binary's generators called while the test runs, not only at import.

The codecs build their readers and writers once, when seqgate.schemas.codec is imported;
these tests call ``layout_of``, ``reader_for`` and ``writer_for`` themselves, so that what
they generate is checked for layouts of the test's own choosing.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastavro import parse_schema

from seqgate.schemas import binary
from seqgate.schemas.errors import BinaryRefused


def _parsed(*types: Any) -> Any:
    fields = [{"name": f"f{index}", "type": kind} for index, kind in enumerate(types)]
    return parse_schema({"type": "record", "name": "R", "fields": fields})


def test_layout_of_a_flat_record_names_each_field_kind_in_order() -> None:
    schema = _parsed("long", ["null", "string"], "string", "int", ["null", "long"])
    assert binary.layout_of(schema) == (
        binary.LONG,
        binary.OPTIONAL_STRING,
        binary.STRING,
        binary.INT,
        binary.OPTIONAL_LONG,
    )


@pytest.mark.parametrize(
    "other", ["boolean", "double", "bytes", ["null", "int"], ["string", "null"]]
)
def test_layout_of_a_record_with_any_other_field_type_is_none(other: Any) -> None:
    assert binary.layout_of(_parsed("string", other, "long")) is None


def test_a_generated_writer_refuses_a_value_of_another_type_as_binary_refused() -> None:
    write_string = binary.writer_for((binary.STRING,))
    with pytest.raises(BinaryRefused):
        write_string((5,))
    write_optional = binary.writer_for((binary.OPTIONAL_STRING,))
    with pytest.raises(BinaryRefused):
        write_optional((b"bytes",))
    write_long = binary.writer_for((binary.LONG,))
    with pytest.raises(BinaryRefused):
        write_long(("5",))


def test_a_generated_writer_and_reader_round_trip_a_layout_of_every_kind() -> None:
    layout = (binary.OPTIONAL_LONG, binary.STRING, binary.INT, binary.OPTIONAL_STRING, binary.LONG)
    values = (None, "ключ", -(2**31), "", 2**40)
    data = binary.writer_for(layout)(values)
    assert binary.reader_for(layout)(data, 0) == values
    present = (7, "k", 2**31 - 1, None, -1)
    assert binary.reader_for(layout)(binary.writer_for(layout)(present), 0) == present
