"""The whole messages of ``object_key``'s rejections, which rejected records and
`seqgate parse` show."""

from __future__ import annotations

import pytest

from seqgate.connectors.parsers.s3.object_keys import object_key
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.reasons import RejectReason

PATH = "Records[0].s3.object"


@pytest.mark.parametrize(
    ("obj", "reason", "message"),
    [
        (
            {},
            RejectReason.MISSING_FIELD,
            f"{PATH}.key is missing: expected the object's form-encoded name",
        ),
        (
            {"key": 5},
            RejectReason.INVALID_FIELD,
            f"{PATH}.key must be a string (the form-encoded name), got number 5",
        ),
        (
            {"key": "a%zz"},
            RejectReason.INVALID_KEY_ENCODING,
            f"{PATH}.key \"a%zz\" is not valid form encoding ('+' for space, '%XX' for a"
            " byte, UTF-8 text): the '%' at byte offset 1 must be followed by two hex digits,"
            " found 'zz'",
        ),
    ],
)
def test_each_rejection_has_its_reason_and_message(
    obj: dict[object, object], reason: RejectReason, message: str
) -> None:
    with pytest.raises(RecordRejected) as raised:
        object_key(obj, PATH)
    assert (raised.value.reason, str(raised.value)) == (reason, message)
