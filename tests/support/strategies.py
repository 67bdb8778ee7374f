"""Hypothesis strategies shared by the parsers' property tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st


def json_documents(
    member_names: Sequence[str], values: Sequence[str] = ()
) -> st.SearchStrategy[Any]:
    """Arbitrary JSON values whose objects often use ``member_names`` (a provider's
    vocabulary) and whose strings are often one of ``values``."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(min_value=-(2**63), max_value=2**63)
        | st.floats(allow_nan=False, allow_infinity=False)
        | st.text(max_size=20)
        | st.sampled_from([*member_names, *values])
    )
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(
                st.sampled_from(list(member_names)) | st.text(max_size=8), children, max_size=6
            )
        ),
        max_leaves=30,
    )


# --------------------------------------------------------------------------- hostile values

LONE_SURROGATES = st.characters(
    min_codepoint=0xD800, max_codepoint=0xDFFF, codec=None, exclude_categories=()
)
"""A lone surrogate: legal in JSON text (as a ``\\ud800`` escape), not encodable as UTF-8."""

hostile_characters = st.one_of(
    st.characters(codec=None, exclude_categories=("Cs",)),
    LONE_SURROGATES,
    st.sampled_from(["\x00", "\x1f", "\\", '"', "%", "+", "/", "é", "€", "😀"]),
)
"""Any code point, lone surrogates, NUL and the characters parsers treat specially."""

# One to four UTF-8 bytes each: runs of them cross a byte limit at every offset.
_RUN_CHARACTERS = st.sampled_from(["a", "é", "€", "😀", "\ud800"])


def long_text(limits: Sequence[int] = (), longest: int = 600_000) -> st.SearchStrategy[str]:
    """Strings of any length up to ``longest`` characters: short hostile text, runs of
    one character (1-4 UTF-8 bytes, or a surrogate) ending near each of ``limits`` (in
    bytes), and a few very long ones. Built by repetition, so long values cost nothing
    to draw."""
    near = [
        st.builds(
            lambda char, slack, limit=limit: (
                char * max(0, limit // len(char.encode("utf-8", "surrogatepass")) + slack)
            ),
            _RUN_CHARACTERS,
            st.integers(min_value=-2, max_value=2),
        )
        for limit in limits
    ]
    runs = st.builds(
        lambda prefix, char, count: prefix + char * count,
        st.text(hostile_characters, max_size=4),
        _RUN_CHARACTERS,
        st.sampled_from(
            [count for count in (1, 100, 1_025, 4_097, 100_000) if count < longest] + [longest]
        ),
    )
    return st.one_of(st.text(hostile_characters, max_size=30), runs, *near)


huge_integers = st.one_of(
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([-(2**63) - 1, -(2**63), -1, 0, 2**63 - 1, 2**63, 2**64, 2**64 + 1, 10**400]),
)
"""Integers of every size, around the Avro long's bounds in particular."""

json_scalars_hostile = st.one_of(
    st.none(),
    st.booleans(),
    huge_integers,
    st.floats(allow_nan=False, allow_infinity=False),
    long_text(),
)
"""JSON scalars a hostile notification may put in any member."""


def nested(depth: int, leaf: object = 0) -> object:
    """``leaf`` inside ``depth`` levels of alternating arrays and objects."""
    value = leaf
    for level in range(depth):
        value = [value] if level % 2 else {"x": value}
    return value
