"""strict_json's msgspec path gives exactly the strict decoder's document, or steps aside.

For any text, :func:`decode_json` must return what ``json`` with the member hook returns,
or raise the same refusal: the fast path may only answer when the strict path would
have accepted the body with an equal document (same types, same values, same order).
"""

from __future__ import annotations

import json
import math

from hypothesis import given, settings
from hypothesis import strategies as st

from seqgate.connectors.errors import JsonRefused
from seqgate.connectors.parsers import strict_json
from seqgate.connectors.parsers.strict_json import decode_json

_NAMES = st.sampled_from(["a", "b", "é", "Records", "x:y", "", "\\", '"', "\x01", "\ud800"])
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    _NAMES,
)
_PAIRS = st.lists(st.tuples(_NAMES, st.integers(0, 3)), max_size=5)


def _value(draw: st.DrawFn, depth: int) -> str:
    """JSON text, possibly with repeated member names and odd spacing."""
    kind = draw(st.integers(0, 2 if depth < 4 else 0))
    spaces = draw(st.sampled_from(["", " ", "\n\t", "\r "]))
    if kind == 0:
        return spaces + json.dumps(draw(_SCALARS), ensure_ascii=draw(st.booleans()))
    if kind == 1:
        items = [_value(draw, depth + 1) for _ in range(draw(st.integers(0, 3)))]
        return spaces + "[" + ",".join(items) + "]"
    members = [
        f"{json.dumps(name, ensure_ascii=draw(st.booleans()))}{spaces}:{_value(draw, depth + 1)}"
        for name, _ in draw(_PAIRS)
    ]
    return "{" + spaces + ",".join(members) + "}"


@st.composite
def _texts(draw: st.DrawFn) -> bytes:
    text = _value(draw, 0)
    return text.encode("utf-8", "surrogatepass")


def _strict(raw: bytes) -> object:
    body = raw.removeprefix(b"\xef\xbb\xbf")
    return strict_json.decode_json_text(body.decode("utf-8"))


def _same(left: object, right: object) -> bool:
    if type(left) is not type(right):
        return False
    if isinstance(left, dict):
        assert isinstance(right, dict)
        return list(left) == list(right) and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list):
        assert isinstance(right, list)
        return len(left) == len(right) and all(map(_same, left, right))
    if isinstance(left, float):
        assert isinstance(right, float)
        return left == right and math.copysign(1, left) == math.copysign(1, right)
    return left == right


@settings(max_examples=1500, deadline=None)
@given(_texts())
def test_the_fast_path_answers_only_as_the_strict_one(raw: bytes) -> None:
    try:
        expected: object = _strict(raw)
    except (JsonRefused, UnicodeDecodeError):
        expected = JsonRefused
    fast = strict_json._fast_decode(raw)
    if fast is not strict_json._UNSURE:
        assert expected is not JsonRefused, raw
        assert _same(fast, expected), raw
    try:
        found: object = decode_json(raw)
    except JsonRefused:
        found = JsonRefused
    assert found is expected if expected is JsonRefused else _same(found, expected)


def test_a_repeated_name_is_refused_whatever_the_spacing() -> None:
    for raw in (b'{"a":1,"a":2}', b'{"a" :1, "a"\n:2}', b'[{"b":{"a":1}},{"c":1,"c":1}]'):
        assert strict_json._fast_decode(raw) is strict_json._UNSURE
