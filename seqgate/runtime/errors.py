"""The one root of seqgate's expected errors, its three families and their exit codes.

An expected error ends a command with one line on stderr, `error: <message>`, and the exit
code of its family; the `seqgate` group catches `SeqgateError` once for every command
(`seqgate.cli.app`). The codes (docs/operations.md, "Exit codes" and "Errors"):

* 0 - done; for a check, nothing wrong was found.
* 1 - `CommandFailed`: a check found a problem (`verify`, `topics check`, `watermark`
  without one), or a long-running command stopped on an error it cannot cure (a worker's or
  a bridge's fatal error): restart it once the cause is fixed.
* 2 - `UsageError`: usage or configuration: a bad flag, file, property or input, named with
  its fix.
* 3 - `KafkaUnreachable`: no broker answered within --kafka-timeout, or the brokers refused
  the connection (TLS, authentication, a protocol mismatch).

Not in the family, on purpose: the signals that never end a command because the product
turns them into something else on the spot - a rejection (RecordRejected, UndecidableEvent,
FieldLimitError, KeyEncodingError, CodecError, InvalidVersion), an HTTP status
(WebhookAuthError, SnsVerificationError), a retry (TransientError, LocalFailure), a rebuild
or a WorkerFatalError (StateError, StateRecoveryError, ChangelogBehind), the fast path's
fallback (BinaryRefused) - and InjectedFault, the crash a test asks for. Were they
SeqgateErrors, one escaping by mistake would pass for an ordinary error line.
"""

from __future__ import annotations

from typing import ClassVar

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_KAFKA_UNREACHABLE = 3


class SeqgateError(Exception):
    """An expected error of seqgate: raised with one message line that names the cause
    and the fix; the command ends with `error: <message>` and `exit_code`."""

    exit_code: ClassVar[int] = EXIT_FAILED
    detail: str | None = None
    """Further lines shown under the error line (the tail of a log), or None."""

    def headline(self) -> str:
        """The line after `error: `: the message the error was raised with (a subclass's
        `__str__` may add `detail` to it)."""
        return str(self.args[0]) if self.args else str(self)


class UsageError(SeqgateError):
    """Usage or configuration: a flag, file, property, input or environment that cannot
    work as given."""

    exit_code: ClassVar[int] = EXIT_USAGE


class KafkaUnreachable(SeqgateError):
    """No broker answered, or the brokers refused the connection."""

    exit_code: ClassVar[int] = EXIT_KAFKA_UNREACHABLE


class CommandFailed(SeqgateError):
    """A long-running command stopped on an error it cannot cure, or a check failed."""

    exit_code: ClassVar[int] = EXIT_FAILED


class WorkerFatalError(CommandFailed):
    """The worker cannot go on (fenced, fatal producer error, broken state); the message
    is one line naming the cause and the fix, and the command exits 1."""
