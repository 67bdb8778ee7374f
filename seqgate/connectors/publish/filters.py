"""Which normalized events this bridge instance publishes (shared by every source).

A bridge may serve only part of a provider's notifications: some buckets,
the keys under a trigger prefix, never the keys where generated output is
written (so a consumer that writes back into the bucket cannot trigger
itself in a loop). The filter decides on the event's bucket and its real
(decoded) key:

* ``buckets``: when given, the event's bucket must be one of them (exact name);
* ``include_prefixes``: when given, the key must start with one of them;
* ``exclude_prefixes``: the key must start with none of them (exclusion wins).

Prefixes are literal strings compared with ``str.startswith`` on the decoded
key: no wildcards, no case folding, no normalization of ``/``. A ``*`` is
refused rather than silently matching nothing, since it is almost always a
glob someone meant as a pattern.

Only events are filtered. Rejections (rejected records) and ignored messages
are kept: a malformed notification is worth seeing whatever its bucket.
A filtered event is counted (``filtered``), not published and not
rejected.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass

from seqgate.connectors.errors import FilterError
from seqgate.connectors.parsers.results import ParseResult
from seqgate.schemas.records import ObjectEvent


@dataclass(frozen=True, slots=True)
class EventFilter:
    buckets: frozenset[str] = frozenset()
    include_prefixes: tuple[str, ...] = ()
    exclude_prefixes: tuple[str, ...] = ()

    @classmethod
    def build(
        cls,
        buckets: Iterable[str] = (),
        include_prefixes: Iterable[str] = (),
        exclude_prefixes: Iterable[str] = (),
    ) -> EventFilter:
        """Check the settings: no empty names, no wildcards, no `/` in a bucket name."""
        bucket_set = frozenset(_checked(buckets, "bucket"))
        for bucket in bucket_set:
            if "/" in bucket:
                raise FilterError(f"bucket {bucket!r}: a bucket name never contains '/'")
        return cls(
            bucket_set,
            tuple(dict.fromkeys(_checked(include_prefixes, "include prefix"))),
            tuple(dict.fromkeys(_checked(exclude_prefixes, "exclude prefix"))),
        )

    @property
    def active(self) -> bool:
        return bool(self.buckets or self.include_prefixes or self.exclude_prefixes)

    def admits(self, event: ObjectEvent) -> bool:
        if self.buckets and event.bucket not in self.buckets:
            return False
        key = event.key
        if self.include_prefixes and not key.startswith(self.include_prefixes):
            return False
        return not (self.exclude_prefixes and key.startswith(self.exclude_prefixes))

    def apply(self, result: ParseResult) -> tuple[ParseResult, int]:
        """The result without the events this filter does not admit, and how many it dropped."""
        if not self.active:
            return result, 0
        kept = tuple(
            item for item in result.items if not isinstance(item, ObjectEvent) or self.admits(item)
        )
        return ParseResult(kept), len(result.items) - len(kept)

    def describe(self) -> dict[str, list[str]]:
        return {
            "buckets": sorted(self.buckets),
            "include_prefixes": list(self.include_prefixes),
            "exclude_prefixes": list(self.exclude_prefixes),
        }


def _checked(values: Iterable[str], what: str) -> list[str]:
    checked = []
    for value in values:
        if value == "":
            raise FilterError(f"empty {what}: leave the option out to select everything")
        if "*" in value and what == "bucket":
            raise FilterError(
                f"bucket {value!r}: filters are literal, not wildcards; bucket names are"
                " matched exactly (repeat --bucket for several)"
            )
        if "*" in value:
            raise FilterError(
                f"{what} {value!r}: filters are literal prefixes, not wildcards"
                f" ('*' matches only a '*' in a name); write {value.split('*')[0]!r} to select"
                " every key that starts with it"
            )
        checked.append(value)
    return checked


@dataclass
class BridgeTally:
    """What became of the records of the messages a source has acknowledged.

    Counted only once Kafka has acknowledged a message's records (or, for
    the Kafka source, once its transaction committed), so that for every
    run: records of `messages` = published + filtered + ignored + rejected.
    """

    messages: int = 0
    published: int = 0
    filtered: int = 0
    ignored: int = 0
    rejected: int = 0

    def add(self, result: ParseResult, filtered: int) -> None:
        """One message: `result` as published (filtered events removed), `filtered` dropped."""
        self.messages += 1
        self.published += len(result.events)
        self.filtered += filtered
        self.ignored += len(result.ignored)
        self.rejected += len(result.rejections)

    def merge(self, other: BridgeTally) -> None:
        self.messages += other.messages
        self.published += other.published
        self.filtered += other.filtered
        self.ignored += other.ignored
        self.rejected += other.rejected

    def as_dict(self) -> dict[str, int]:
        return asdict(self)
