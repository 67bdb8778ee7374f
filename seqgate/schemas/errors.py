"""The exceptions of the contracts (`seqgate.schemas`).

None of them is under the root `SeqgateError` (`seqgate.runtime.errors`), on purpose: each
is turned into something else by its caller the moment it is raised, and never ends a
command (and the contracts import nothing else of seqgate):

* `RecordRejected` - a parser's verdict on one record: its caller makes it a rejected
  record with the reason it carries;
* `FieldLimitError` - a field that cannot be encoded or is over its limit: the record is
  rejected (`invalid_field`);
* `CodecError` - bytes that are not the expected record: rejected (`undecodable_record`)
  by whoever read them;
* `BinaryRefused` - the generated fast path declines a value: the generic codec (fastavro)
  takes it.
"""

from __future__ import annotations

from seqgate.schemas.reasons import RejectReason


class BinaryRefused(Exception):
    """The fast path does not vouch for these bytes or values: ask fastavro."""


class FieldLimitError(ValueError):
    """An ObjectEvent field that cannot be encoded, or is longer than its limit.

    ``field`` is the ObjectEvent field name; the message names it, the limit
    and the offending size, with a short preview of the value (never all of it).
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class RecordRejected(Exception):
    """Raised inside a parser for one record; the caller turns it into a Rejection."""

    def __init__(self, reason: RejectReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class CodecError(Exception):
    """Bytes that are not a valid encoding of the expected record (or a record
    that cannot be encoded). The message says what was expected and what was found."""
