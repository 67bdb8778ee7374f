"""Records the broker refuses for good, and transactions that never stop aborting.

The worker's answer to an abort is to read the same input again from the
committed offsets. That cures a passing fault, and nothing else: a record the
broker can never store (above a topic's `max.message.bytes`) fails its
transaction every time. This module keeps the bookkeeping that ends such loops
(docs/processor.md#records-the-broker-refuses); the worker does the I/O.

1. A transaction aborted with a refusal code: its input is decided again one
   record per transaction, up to the highest offset it held (a refused batch
   fails every record in it, so the abort does not say which input caused it).
2. A transaction of one input record refused the same way: that input is
   rejected (`unwritable_record`) when it is read again.
3. Its rejected record refused too: it is sent without the input's bytes.
4. Refused even so: the worker stops (`after_abort` says which input).

Independently, aborts with no commit in between for the stall timeout end the
worker whatever their cause (`abort_loop_seconds`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from confluent_kafka import KafkaError

log = logging.getLogger(__name__)

UNWRITABLE_CODES = frozenset(
    {KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE, KafkaError.INVALID_RECORD}
)
"""Refusals that retrying the same record can never cure."""


@dataclass(frozen=True, slots=True)
class Unwritable:
    """An input record whose results the broker refuses: rejected instead."""

    why: str
    omit_raw: bool = False  # its rejected record was refused too: send it without the bytes


class RefusedRecords:
    """What the worker knows of refused records and of its aborts since the last commit."""

    def __init__(self, stall_timeout_s: float) -> None:
        self._stall_timeout_s = stall_timeout_s
        self._isolate_through: dict[int, int] = {}  # partition -> last offset to isolate
        self._unwritable: dict[tuple[int, int], Unwritable] = {}
        self._aborting_since: float | None = None

    @property
    def isolating(self) -> bool:
        """Whether input is decided one record per transaction (step 1)."""
        return bool(self._isolate_through)

    @property
    def quiet(self) -> bool:
        """Nothing isolated and no input known to be unwritable: every record may be decided
        by the compiled step (`seqgate.streams.worker.compiled_step`)."""
        return not self._isolate_through and not self._unwritable

    def get(self, partition: int, offset: int) -> Unwritable | None:
        unwritable = self._unwritable  # asked once per input record: mostly empty
        return unwritable.get((partition, offset)) if unwritable else None

    def after_abort(
        self, codes: set[int], error: str, records: int, next_offsets: dict[int, int]
    ) -> tuple[int, int] | None:
        """Note a transaction aborted with `codes`; the input it held was `records` records,
        up to `next_offsets` (exclusive) per partition. Returns the (partition, offset) of
        an input that cannot be written even as a bare rejected record (step 4), else None."""
        if not codes & UNWRITABLE_CODES:
            return None
        if records != 1:
            for partition, next_offset in next_offsets.items():
                through = max(self._isolate_through.get(partition, -1), next_offset - 1)
                self._isolate_through[partition] = through
            log.warning(
                "the broker refused a record for good: deciding the transaction's input again"
                " one record per transaction to find it",
                extra={"error": error, "through_offsets": dict(self._isolate_through)},
            )
            return None
        ((partition, next_offset),) = next_offsets.items()
        at = (partition, next_offset - 1)
        known = self._unwritable.get(at)
        if known is not None and known.omit_raw:
            return at
        if known is None:
            self._unwritable[at] = Unwritable(f"the broker refused what it became: {error}")
        else:  # its rejected record was refused: the input's bytes made it too large
            self._unwritable[at] = Unwritable(known.why, omit_raw=True)
        log.warning(
            "input record cannot be written: rejecting it",
            extra={"partition": partition, "offset": at[1], "error": error},
        )
        return None

    def abort_loop_seconds(self, now: float) -> float | None:
        """After an abort: how long aborts have gone on without a commit, once that is the
        stall timeout or more (the caller stops); None before."""
        if self._aborting_since is None:
            self._aborting_since = now
            return None
        lasted = now - self._aborting_since
        return lasted if lasted >= self._stall_timeout_s else None

    def reset_abort_loop(self) -> None:
        """Aborts during a write outage (worker/outage.py) do not count towards the loop."""
        self._aborting_since = None

    def committed(self, next_offsets: dict[int, int]) -> None:
        """A transaction committed input up to `next_offsets` (exclusive) per partition."""
        self._aborting_since = None
        for partition, next_offset in next_offsets.items():
            if next_offset > self._isolate_through.get(partition, next_offset):
                del self._isolate_through[partition]
            self._unwritable.pop((partition, next_offset - 1), None)

    def release(self, partition: int) -> None:
        """The partition is no longer ours: its next owner finds its refused records itself."""
        self._isolate_through.pop(partition, None)
        for at in [at for at in self._unwritable if at[0] == partition]:
            del self._unwritable[at]
