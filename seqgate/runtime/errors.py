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

Every exception class of seqgate is defined in the `errors.py` of its package: this module
(the root, its families and the shared foundation's), `seqgate.schemas.errors`,
`seqgate.connectors.errors`, `seqgate.streams.errors` and `seqgate_devtools.errors`; each
lists its members of the families and, with the reason, the exceptions left outside the
root on purpose (tests/unit/test_errors.py checks both). The one exception defined
elsewhere is `PartitionReadFailed` (`seqgate.runtime.partition_reader`): a
`KafkaException` by design, since its callers handle it as one, kept beside the reader so
that this module imports no Kafka client (the pure parsers and rules import it).

The shared foundation's own members: `WorkerFatalError` (exit 1); `KafkaSettingsError`,
`EngineUnavailable`, `TopicConfigError`, `TopicCreateError`, `TopicCheckError`,
`SchemaRegistryRefused` (exit 2); `SchemaRegistryUnreachable` (exit 3). Outside the root,
on purpose: `CallHung` and `ProducerLost` (a client call that hung, a producer that cannot
go on: the session renews the producer or stops the worker with a `WorkerFatalError`),
`PartitionStalled` (a partition read that made no progress: the caller waits again or
gives up with its own error) and `InjectedFault` (the crash a test asks for).
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


class CallHung(Exception):
    """The call had not returned when the limit passed (it may still be running)."""

    def __init__(self, what: str, limit_s: float) -> None:
        super().__init__(f"{what} did not return within {limit_s:.0f} s")
        self.what = what
        self.limit_s = limit_s


class EngineUnavailable(UsageError):
    """`--engine compiled` without `seqgate._core` in this installation."""


class InjectedFault(RuntimeError):
    """The failure a test asked for."""


class KafkaSettingsError(UsageError, ValueError):
    """A client property that cannot be used, with where it came from and the fix."""


class PartitionStalled(Exception):
    """No record and no end arrived for `timeout` seconds."""

    def __init__(self, topic: str, partition: int, offset: int, timeout: float) -> None:
        super().__init__(
            f"reading {topic}[{partition}] made no progress at offset {offset} for {timeout:.0f}s"
        )
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.timeout = timeout


class ProducerLost(Exception):
    """The session's producer cannot be used again, and a new one may take its place.

    ``reason`` is the one line the caller stops with when it does not renew; ``what`` says
    the loss in short, for the line that tells of the renewal; ``hung`` tells that the old
    producer is inside a call that never returned."""

    def __init__(self, reason: str, *, hung: bool, what: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.hung = hung
        self.what = what


class SchemaRegistryUnreachable(SeqgateError):
    """The schema registry did not answer, or answered with a server error."""

    exit_code: ClassVar[int] = EXIT_KAFKA_UNREACHABLE


class SchemaRegistryRefused(UsageError):
    """The schema registry refused what seqgate asked (credentials, an incompatible schema)."""


class TopicCheckError(UsageError):
    """The topics could not be described (not a finding: the check could not run)."""


class TopicConfigError(UsageError, ValueError):
    """A `--config FAMILY:NAME=VALUE` seqgate cannot apply, with the fix."""


class TopicCreateError(UsageError, ValueError):
    """The broker refused to create a topic (a config it rejects, too few brokers, ...)."""
