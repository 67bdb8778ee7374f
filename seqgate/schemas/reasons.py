"""Rejections: why an input record could not become an ObjectEvent.

Every rejection carries a stable reason code (documented in docs/reasons.md,
safe to alert on) and a human message that names the field and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class RejectReason(StrEnum):
    MALFORMED_JSON = "malformed_json"
    NOT_A_NOTIFICATION = "not_a_notification"
    WRONG_EVENT_SOURCE = "wrong_event_source"
    UNSUPPORTED_SCHEMA_VERSION = "unsupported_schema_version"
    UNSUPPORTED_EVENT_TYPE = "unsupported_event_type"
    INVALID_KEY_ENCODING = "invalid_key_encoding"
    INVALID_SEQUENCER = "invalid_sequencer"
    MISSING_FIELD = "missing_field"
    INVALID_FIELD = "invalid_field"
    NESTING_TOO_DEEP = "nesting_too_deep"
    # Written by the processor for input that did not come from the bridge.
    UNDECODABLE_EVENT = "undecodable_event"
    MISSING_POSITION = "missing_position"
    UNKNOWN_SOURCE = "unknown_source"
    KEY_MISMATCH = "key_mismatch"
    UNWRITABLE_RECORD = "unwritable_record"


@dataclass(frozen=True, slots=True)
class Rejection:
    """One refused record. `record_index` is its index inside a multi-record
    message, or None when the whole message was refused."""

    reason: RejectReason
    message: str
    record_index: int | None = None
