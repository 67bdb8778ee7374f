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
