"""The exceptions of the development tools (`seqgate_devtools`).

Under the root `SeqgateError` (`seqgate.runtime.errors`): `BrokerError`, a `UsageError`
(exit 2) whose detail lines are the tail of the broker's log.

Outside it, on purpose, because the bench reports them in its table rather than ending the
command: `PeerUnavailable` (a peer that cannot run here: "not run: <why>"),
`SystemExited`, `OutboxUnreadable` and `FailoverError` (a stage that could not be
measured).
"""

from __future__ import annotations

from seqgate.runtime.errors import UsageError


class FailoverError(RuntimeError):
    """Something the stage waited for did not happen in time, or a worker died."""


class PeerUnavailable(Exception):
    """A peer cannot run on this machine; the message says why."""


class OutboxUnreadable(RuntimeError):
    """The outbox could not be read to its end (after retries)."""


class SystemExited(RuntimeError):
    """The system's process ended when it should have been running."""


class BrokerError(UsageError):
    """An expected failure of the development broker, with a message meant for humans.

    ``message`` is one line; ``detail`` (optional, multi-line) is the tail of the relevant log
    or tool output.
    """

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail

    def __str__(self) -> str:
        if self.detail:
            return f"{self.message}\n{self.detail}"
        return self.message
