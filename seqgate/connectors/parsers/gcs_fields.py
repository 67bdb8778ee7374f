"""The fields of one GCS notification: where each lives, and how its value is read.

A field may be given by an attribute and by a member of the object resource;
both come from the same write, so :meth:`GcsNotification.agreed` refuses a
disagreement (``invalid_field``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

from seqgate.connectors.parsers.json_fields import check_text, member_path, optional_string, show
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.reasons import RejectReason

__all__ = [
    "GcsNotification",
    "Reader",
    "bucket_name",
    "generation_number",
    "int64_number",
    "text",
]

_DECIMAL: Final = re.compile(r"[0-9]+")
_INT64_MAX: Final = 2**63 - 1

Reader = Callable[[object, str], str]
"""``read(value, field)``: a field's value as text; raises RecordRejected."""


@dataclass(frozen=True, slots=True)
class GcsNotification:
    """Where one message's fields live: its attributes and, with JSON_API_V1, the resource."""

    attributes: dict[object, object]
    attributes_path: str
    resource: dict[object, object] | None
    data_path: str

    def agreed(self, attribute: str, member: str, what: str, read: Reader) -> str:
        """A required value given by an attribute and/or a resource member, which must agree."""
        found: list[tuple[str, str]] = []
        for parent, path, name in (
            (self.attributes, self.attributes_path, attribute),
            (self.resource, self.data_path, member),
        ):
            if parent is not None and parent.get(name) not in (None, ""):
                field = member_path(path, name)
                found.append((read(parent[name], field), field))
        if not found:
            also = "" if self.resource is None else f" and so is {self.data_path}.{member}"
            raise RecordRejected(
                RejectReason.MISSING_FIELD,
                f"{self.attributes_path}.{attribute} is missing{also}: expected {what}",
            )
        (value, field), *others = found
        for other, other_field in others:
            if other != value:
                raise RecordRejected(
                    RejectReason.INVALID_FIELD,
                    f"{field} {show(value)} and {other_field} {show(other)} disagree: both "
                    "describe the object of one notification",
                )
        return value

    def resource_string(self, name: str) -> str | None:
        resource = self.resource
        return None if resource is None else optional_string(resource, name, self.data_path)

    def resource_int(self, name: str) -> int | None:
        if self.resource is None or self.resource.get(name) in (None, ""):
            return None
        return int64_number(self.resource[name], member_path(self.data_path, name))


def text(value: object, field: str) -> str:
    """A non-empty string of text (an object name, taken verbatim)."""
    if not isinstance(value, str):
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{field} must be a non-empty string, got {show(value)}"
        )
    check_text(value, field)
    return value


def bucket_name(value: object, field: str) -> str:
    """A bucket name: text without ``/``."""
    name = text(value, field)
    if "/" in name:
        raise RecordRejected(
            RejectReason.INVALID_FIELD, f"{field} {show(name)} contains '/': bucket names never do"
        )
    return name


def int64_number(value: object, field: str) -> int:
    """A non-negative int64 in decimal: a string of digits (a JSON number is tolerated)."""
    number = -1
    if isinstance(value, str) and _DECIMAL.fullmatch(value) and len(value.lstrip("0")) <= 19:
        number = int(value.lstrip("0") or "0")
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    if not 0 <= number <= _INT64_MAX:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{field} must be a decimal integer from 0 to 2**63-1, got {show(value)}",
        )
    return number


def generation_number(value: object, field: str) -> str:
    """A generation: a positive int64, as its canonical decimal text."""
    generation = int64_number(value, field)
    if generation == 0:
        raise RecordRejected(RejectReason.INVALID_FIELD, f"{field} is 0: generations are positive")
    return str(generation)
