"""The worker's one error type: what a restart with the same configuration cannot cure."""

from __future__ import annotations


class WorkerFatalError(Exception):
    """The worker cannot go on (fenced, fatal producer error, broken state); the message
    is one line naming the cause and the fix, and the command exits 1."""
