"""`plain_etag`: an ETag as notifications spell it, from a listing's or a header's form."""

from __future__ import annotations

import pytest

from seqgate.schemas.listing import plain_etag


@pytest.mark.parametrize(
    ("given", "plain"),
    [
        ('"d41d8cd98f00b204e9800998ecf8427e"', "d41d8cd98f00b204e9800998ecf8427e"),
        ("d41d8cd98f00b204e9800998ecf8427e", "d41d8cd98f00b204e9800998ecf8427e"),
        ('"9B2CF535F27731C974343645A3985328-2"', "9b2cf535f27731c974343645a3985328-2"),
        ('"0x8D9A1B2C3D4E5F6"', "0x8d9a1b2c3d4e5f6"),
        ("0x258FC7F564281E0", "0x258fc7f564281e0"),
        ('W/"0x8D9A1B2C3D4E5F6"', "0x8d9a1b2c3d4e5f6"),
        ('  "abc"  ', "abc"),
        ('"', '"'),
    ],
)
def test_quotes_weak_prefix_and_case_go(given: str, plain: str) -> None:
    assert plain_etag(given) == plain


@pytest.mark.parametrize("given", [None, "", '""', "   ", 'W/""'])
def test_no_etag_is_none(given: str | None) -> None:
    assert plain_etag(given) is None
