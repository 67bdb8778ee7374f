"""The JSON member accessors shared by the parsers (seqgate/connectors/parsers/json_fields.py).

The parsers' own tests check every message in context; these pin the
accessors' contract where it is easiest to read.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from seqgate.connectors.parsers import json_fields as jf
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.reasons import RejectReason

MISSING = RejectReason.MISSING_FIELD
INVALID = RejectReason.INVALID_FIELD
HEX = "expected a non-empty string of hex digits"


def test_paths_and_show() -> None:
    assert jf.member_path("", "Messages") == "Messages"
    assert jf.member_path("Messages[0].Body", "Message") == "Messages[0].Body.Message"
    assert jf.index_path("Records", 3) == "Records[3]"
    show = jf.show
    assert show("x" * 100) == '"' + "x" * 80 + '"... (100 characters)'
    assert show(None) == "null" and show(True) == "boolean true" and show(2.5) == "number 2.5"
    assert show(10**40) == "number of 133 bits" and show([]) == "array" and show({}) == "object"
    assert show("\ud800") == '"\\ud800"'


@pytest.mark.parametrize("parent", [{}, {"m": None}], ids=["absent", "null"])
def test_absent_and_null_are_the_same_for_optional_members(parent: dict[object, object]) -> None:
    assert jf.optional_string(parent, "m", "p") is None
    assert jf.optional_size(parent, "m", "p") is None
    sequencer = {"sequencer": parent.get("m")}
    assert jf.sequencer_member(sequencer, "p", required_because=None) is None


def test_values_are_returned_as_written() -> None:
    assert jf.optional_string({"m": "a\ud800"}, "m", "o", text_only=False) == "a\ud800"
    assert jf.optional_string({"m": ""}, "m", "o") is None
    assert jf.optional_size({"m": 0}, "m", "o") == 0
    assert jf.required_string({"m": " "}, "m", "o", "x") == " "
    assert jf.required_member({"m": []}, "m", "o", list, missing="", invalid="") == []
    assert jf.sequencer_member({"sequencer": "00AbC"}, "o", required_because="why") == "00AbC"
    jf.check_constant({"v": "0"}, "v", "p", "0", reason=INVALID, expected="")  # no refusal


REFUSALS: list[tuple[Callable[[], object], RejectReason, str]] = [
    (
        lambda: jf.check_constant(
            {}, "v", "", "0", reason=RejectReason.UNSUPPORTED_SCHEMA_VERSION, expected="want 0"
        ),
        RejectReason.UNSUPPORTED_SCHEMA_VERSION,
        "v is missing: want 0",
    ),
    (
        lambda: jf.check_constant({"v": 0}, "v", "p", "0", reason=INVALID, expected="want 0"),
        INVALID,
        "p.v is number 0: want 0",
    ),
    (
        lambda: jf.object_member({}, "m", "p"),
        MISSING,
        "p.m is missing: expected a JSON object",
    ),
    (
        lambda: jf.object_member({"m": None}, "m", "", expected="an object"),
        MISSING,
        "m is missing: expected an object",
    ),
    (
        lambda: jf.object_member({"m": [1]}, "m", "a.b"),
        INVALID,
        "a.b.m must be a JSON object, got array",
    ),
    (
        lambda: jf.required_member({"m": 1}, "m", "p", str, missing="?", invalid="text"),
        INVALID,
        "p.m must be text, got number 1",
    ),
    (
        lambda: jf.required_string({"m": ""}, "m", "", "the thing"),
        MISSING,
        "m is missing: expected the thing, a non-empty string",
    ),
    (
        lambda: jf.required_string({"m": False}, "m", "p", "the thing"),
        INVALID,
        "p.m must be a non-empty string, got boolean false",
    ),
    (
        lambda: jf.optional_string({"m": 5}, "m", "o"),
        INVALID,
        "o.m must be a string when present, got number 5",
    ),
    (
        lambda: jf.optional_string({"m": "a\ud800"}, "m", "o"),
        INVALID,
        'o.m "a\\ud800" contains a lone surrogate: expected Unicode text',
    ),
    (
        lambda: jf.optional_size({"size": -1}, "size", "o"),
        INVALID,
        "o.size must be a non-negative integer below 2**63 (bytes) when present, got number -1",
    ),
    (
        lambda: jf.optional_size({"size": True}, "size", "o"),
        INVALID,
        "o.size must be a non-negative integer below 2**63 (bytes) when present, got boolean true",
    ),
    (
        lambda: jf.sequencer_member({}, "o", required_because="why"),
        RejectReason.INVALID_SEQUENCER,
        f"o.sequencer is missing: {HEX} (why)",
    ),
    (
        lambda: jf.sequencer_member({"sequencer": ""}, "o", required_because=None),
        RejectReason.INVALID_SEQUENCER,
        f"o.sequencer is empty: {HEX}",
    ),
    (
        lambda: jf.sequencer_member({"sequencer": "0x1"}, "o", required_because=None),
        RejectReason.INVALID_SEQUENCER,
        f'o.sequencer "0x1" is not hexadecimal: {HEX}',
    ),
    (
        lambda: jf.sequencer_member({"sequencer": 12}, "o", required_because=None),
        RejectReason.INVALID_SEQUENCER,
        "o.sequencer must be a string, got number 12",
    ),
]


@pytest.mark.parametrize(("call", "reason", "message"), REFUSALS, ids=range(len(REFUSALS)))
def test_refusals_name_the_member_and_show_the_value(
    call: Callable[[], object], reason: RejectReason, message: str
) -> None:
    with pytest.raises(RecordRejected) as error:
        call()
    assert (error.value.reason, error.value.message) == (reason, message)


def test_the_largest_avro_long_is_the_largest_size() -> None:
    assert jf.optional_size({"size": 2**63 - 1}, "size", "o") == 2**63 - 1
    with pytest.raises(RecordRejected) as error:
        jf.optional_size({"size": 2**63}, "size", "o")
    assert error.value.message == (
        "o.size must be a non-negative integer below 2**63 (bytes) when present, "
        "got number 9223372036854775808"
    )


@pytest.mark.parametrize(
    ("text", "depth"),
    [
        ("1", 0),
        ("[]", 1),
        ('{"a": [{"b": []}]}', 4),
        ('["[[[[", "\\"[[[["]', 1),  # brackets in strings, after an escaped quote
        ('["\\\\", [[]]]', 3),  # an escaped backslash does not escape the quote
        ('{"é€😀": [[]]}', 3),  # multi-byte characters
    ],
)
def test_nesting_exceeds_counts_levels_outside_strings(text: str, depth: int) -> None:
    for limit in range(6):
        assert jf.nesting_exceeds(text, limit) is (depth > limit), limit
        assert jf.nesting_exceeds(text.encode(), limit) is (depth > limit), limit


def test_balanced_brackets_tell_a_complete_line() -> None:
    assert jf.brackets_balanced(b'{"a": "[", "b": [1, {}]}')
    assert not jf.brackets_balanced(b'{"a": [')
    assert jf.too_deep_message("Messages[0].Body").startswith(
        "Messages[0].Body nests arrays and objects more than 64 levels deep"
    )
