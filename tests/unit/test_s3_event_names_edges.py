"""``name_table``: the entries it keeps, and the message for an undocumented kind."""

from __future__ import annotations

import pytest

from seqgate.connectors.parsers.s3.event_names import S3EventName, name_table
from seqgate.schemas.kinds import CREATED


def test_a_table_maps_each_name_to_its_entry() -> None:
    put = S3EventName("A:Put", CREATED, "a put")
    post = S3EventName("A:Post", CREATED, "a post")
    table = name_table([put, post])
    assert dict(table) == {"A:Put": put, "A:Post": post}


def test_an_undocumented_kind_is_refused_saying_where_to_document_it() -> None:
    with pytest.raises(ValueError) as raised:
        name_table([S3EventName("A:Odd", "odd_kind", "odd")])
    assert str(raised.value) == (
        "event name 'A:Odd' maps to undocumented kind(s) ['odd_kind']: add them to"
        " KIND_DESCRIPTIONS"
    )
