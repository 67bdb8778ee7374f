"""Rejected records of the bridges: what was received and why it was refused, as Kafka takes it.

A rejected record keeps the bytes received (`raw`) so that they can be replayed once
the producer is fixed. Kept whole they could exceed what Kafka accepts in one
record (a webhook body may be 1 MiB, a source topic's record as large as its
topic allows): the rejected record would then be refused, and the source never
acknowledged, so its sender would retry the same input forever. Above
`MAX_RAW_BYTES` the rejected record keeps the start of the bytes and says how many
there were, with their SHA-256, so that nothing is dropped without a trace.
"""

from __future__ import annotations

import hashlib
from typing import Final

from seqgate.schemas.reasons import Rejection
from seqgate.schemas.records import RejectedRecord

MAX_RAW_BYTES: Final = 512 * 1024
"""Bytes of the input a rejected record keeps: half of librdkafka's default
``message.max.bytes`` (1,000,000), leaving room for the rest of the record."""


def rejected_record(rejection: Rejection, raw: bytes, origin: str) -> RejectedRecord:
    """The rejected record of one rejection of the message `raw` received from `origin`."""
    message = as_text(rejection.message)
    if len(raw) > MAX_RAW_BYTES:
        digest = hashlib.sha256(raw).hexdigest()
        message += (
            f" (raw holds the first {MAX_RAW_BYTES} of the {len(raw)} bytes received;"
            f" SHA-256 of all of them: {digest})"
        )
        raw = raw[:MAX_RAW_BYTES]
    return RejectedRecord(
        raw=raw,
        origin=as_text(origin),
        reason=rejection.reason.value,
        message=message,
        record_index=rejection.record_index,
    )


def as_text(value: str) -> str:
    """``value`` as Avro can hold it: what UTF-8 cannot encode (surrogates) escaped."""
    return value.encode("utf-8", "backslashreplace").decode("utf-8")
