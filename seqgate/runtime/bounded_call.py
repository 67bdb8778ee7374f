"""A client call that must return within its own timeout, or be declared hung.

librdkafka's ``send_offsets_to_transaction`` can block far past its timeout when the group
coordinator's broker goes away: the request waits for that broker to come back instead of
looking up the new coordinator (librdkafka issues 5456 and 5511, open against 2.16). A
worker stuck there commits nothing and, being inside one call, never reaches its own
liveness check. The call is therefore made from a helper thread and waited for with a
limit; past it the caller treats the client as hung: the worker replaces its producer
(runtime/renewal.py), other callers stop for a restart; either way the new producer fences
the old ``transactional.id`` and the input resumes from the committed offsets, as after a
kill -9 (docs/design.md §5.7).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from seqgate.runtime.errors import CallHung

__all__ = ["CallHung", "call_within"]

T = TypeVar("T")


def call_within(
    call: Callable[[], T],
    limit_s: float,
    what: str,
    *,
    keep_waiting: Callable[[], bool] | None = None,
) -> T:
    """``call()``'s result (or its exception) if it returns within ``limit_s`` seconds, or
    within each further ``limit_s`` for which ``keep_waiting()`` says the wait is explained
    (a cluster that cannot take writes makes the call wait, too; that is not a hang).

    Raises :class:`CallHung` otherwise; the call goes on in a daemon thread, which a process
    that stops after this does not wait for.
    """
    done = threading.Event()
    outcome: list[T] = []
    failure: list[BaseException] = []

    def run() -> None:
        try:
            outcome.append(call())
        except BaseException as error:  # handed to the caller's thread
            failure.append(error)
        finally:
            done.set()

    threading.Thread(target=run, name=f"bounded {what}", daemon=True).start()
    waited = done.wait(limit_s)
    while not waited and keep_waiting is not None and keep_waiting():
        waited = done.wait(limit_s)
    if not waited:
        raise CallHung(what, limit_s)
    if failure:
        raise failure[0]
    return outcome[0]
