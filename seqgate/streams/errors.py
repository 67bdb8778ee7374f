"""The exceptions of the engine (`seqgate.streams`: worker, rules, state, operator tools,
dispatcher).

Under the root `SeqgateError` (`seqgate.runtime.errors`), ending a command with one line
and the family's exit code (docs/operations.md, "Errors"):

* `UsageError` (exit 2): `PolicyError`, `DestinationConfigError`, `DispatchError`,
  `InspectError`, `ResetError`, `TailError`, `VerifyError`.

Outside it, on purpose, because the engine turns them into something else on the spot and
they never end a command as such (were they `SeqgateError`s, one escaping by mistake would
pass for an ordinary error line):

* `UndecidableEvent`, `InvalidVersion` - an event that cannot be ordered or versioned: a
  rejected record with its reason;
* `TransientError` - the destination could not confirm: the dispatcher retries;
* `StateError` (`StateDamaged`, `StateUnavailable`), `StateRecoveryError`,
  `ChangelogBehind`, `StoreBehind` - a store that cannot be trusted: it is rebuilt from
  the changelog, or the worker stops with a `WorkerFatalError` naming the fix.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Generic, TypeVar

from seqgate.runtime.errors import UsageError
from seqgate.schemas.reasons import RejectReason

R = TypeVar("R")
NO_SPACE = "No space left on device"
"""RocksDB's status text for a full disk."""


class TransientError(Exception, Generic[R]):
    """The destination could not confirm; try the unconfirmed records again later.

    ``done`` holds the results of the first records, which were confirmed.
    """

    def __init__(self, message: str, done: Sequence[R] = ()) -> None:
        super().__init__(message)
        self.done = list(done)


class DestinationConfigError(UsageError, ValueError):
    """A destination URL or setting that cannot work."""


class InvalidVersion(ValueError):
    """The record's version cannot be determined (no position where one is needed,
    a position that is not valid for the source's order, a negative offset)."""


class DispatchError(UsageError):
    """The dispatcher cannot start (a missing topic, an unreachable broker)."""


class PolicyError(UsageError, ValueError):
    """A policy setting is invalid; ``setting`` names it (``admitted_kinds``, ...)."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(message)
        self.setting = setting


class UndecidableEvent(Exception):
    """The event cannot be ordered (no position, or a malformed one)."""

    def __init__(self, reason: RejectReason, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class StateRecoveryError(Exception):
    """The state cannot be recovered by a rebuild; the message is one line with the fix."""


class ChangelogBehind(RuntimeError):
    """The changelog ends before an offset the store reflects, and stayed there."""

    def __init__(
        self,
        partition: int,
        path: Path,
        topic: str,
        wanted: int,
        end: int,
        waited: float,
    ) -> None:
        super().__init__(
            f"state of partition {partition} at {path} is ahead of changelog {topic}"
            f" (store at offset {wanted}, changelog end {end} after waiting {waited:.0f}s):"
            " the changelog no longer holds records the store reflects"
        )
        self.partition = partition
        self.path = path
        self.wanted = wanted
        self.end = end


class StoreBehind(RuntimeError):
    """The changelog now starts after the store's offset: records the store lacks are gone."""

    def __init__(self, partition: int, path: Path, topic: str, at: int, low: int):
        super().__init__(
            f"store at {path} reflects changelog {topic}[{partition}] up to offset {at}"
            f" but the changelog now starts at {low}: the records between were deleted"
        )
        self.partition = partition
        self.path = path


class StateError(Exception):
    """RocksDB failed on a partition's store. `cause` is RocksDB's own status text."""

    def __init__(self, partition: int | None, path: Path, cause: str) -> None:
        super().__init__(f"state store {path}: {cause}")
        self.partition = partition
        self.path = path
        self.cause = cause


class StateDamaged(StateError):
    """The store's files are corrupt or incomplete: move it aside, rebuild from the changelog."""


class StateUnavailable(StateError):
    """The directory cannot be used (disk full, locked, not writable): a rebuild would fail too."""

    @property
    def disk_full(self) -> bool:
        return NO_SPACE in self.cause


class InspectError(UsageError):
    """The broker could not tell us what we need; the message is one line with its fix."""


class ResetError(UsageError):
    """The reset cannot be done as asked; the message is one line naming the fix."""


class TailError(UsageError):
    """A topic or partition that cannot be read as asked; one line with the fix."""


class VerifyError(UsageError):
    """verify could not read what it needs (the check itself did not run)."""
