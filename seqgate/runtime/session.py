"""One owner of a Kafka transaction: the worker, `bridge kafka` and `reset` all run theirs here.

A `TransactionalSession` makes its transactional producer from the caller's settings and
holds, where the transaction carries input offsets, their consumer. It holds the steps every
caller must take the same way (docs/design.md §5.2, §5.3): `init` (fencing),
`begin`, `produce` with back-pressure, `commit` (the commit protocol, the only copy
of it), `abort_and_rewind`, `renew` (a new producer for a lost one, runtime/renewal.py),
the diagnosis of a fatal error, and `close`. What a transaction holds and what a commit
means for local state stay with the caller.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable, Sequence

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)

from seqgate.runtime.bounded_call import call_within
from seqgate.runtime.errors import CallHung, ProducerLost
from seqgate.runtime.faults import FaultInjector, FaultPoint
from seqgate.runtime.kafka_clients import ProducerSettings, close_producer, is_fatal
from seqgate.runtime.outage_wait import OutageWait
from seqgate.runtime.renewal import RenewalBudget, TakenOver, fenced, lost_producer
from seqgate.runtime.retrying import RETRY_PAUSE_S, InitRetries, retriable, retrying
from seqgate.runtime.transaction_failures import FatalErrorTrap, SessionRole, describe_fatal

log = logging.getLogger(__name__)

DeliveryCallback = Callable[[KafkaError | None, Message], None]
Failure = Callable[[str], Exception]
ProducerFactory = Callable[[FatalErrorTrap], Producer]


# How long `close` gives an open transaction's abort (a failed one is aborted by the broker).
_ABORT_ON_CLOSE_S = 5.0
# send_offsets_to_transaction takes milliseconds while the group coordinator answers; past
# this timeout, plus the grace, resumed or not, the client is declared hung
# (runtime/bounded_call.py says why it can). Kept short: until then the worker commits nothing.
_SEND_OFFSETS_TIMEOUT_S = 15.0
_HUNG_GRACE_S = 5.0
# A consumer's question (the committed offsets) that no broker answered in time.
_UNANSWERED = frozenset({KafkaError._TIMED_OUT, KafkaError._TRANSPORT})


class TransactionalSession:
    """The transactions of one transactional producer, one at a time."""

    def __init__(
        self,
        producer: ProducerSettings | Producer,
        role: SessionRole,
        *,
        timeout_s: float,
        failed: Failure,
        consumer: Consumer | None = None,
        abort_retry_s: float = 0.0,
        faults: FaultInjector | None = None,
        hung_grace_s: float = _HUNG_GRACE_S,
        outage: OutageWait | None = None,
        renew: bool = False,
        renew_with: ProducerFactory | None = None,
        taken_over: TakenOver | None = None,
    ) -> None:
        self.role = role
        self._trap: FatalErrorTrap | None = None
        if isinstance(producer, ProducerSettings):
            # Made here (kafka_clients.transactional_producer_config), and, with `renew`, again
            # for a lost one; a renewable producer's errors go to a trap, as a new one's do.
            self._trap = FatalErrorTrap() if renew else None
            renew_with = functools.partial(self._new_producer, producer) if renew else renew_with
            producer = self._new_producer(producer, self._trap)
        self.producer = producer
        self.delivery_errors: list[KafkaError] = []
        self._timeout_s = timeout_s
        self._failed = failed  # the caller's exception for what a restart must cure
        self._consumer = consumer
        self._abort_retry_s = abort_retry_s
        self._faults = faults or FaultInjector()
        self._in_transaction = False
        self._hung_grace_s = hung_grace_s
        self._outage = outage
        # Set when a call never completed: the producer must not be used again.
        self._hung_failure: Exception | None = None
        # A lost producer is replaced in place when the caller gives a factory
        # (runtime/renewal.py); hung ones are kept here, never touched again.
        self._renew_with = renew_with
        self._taken_over = taken_over  # a fence by a takeover is renewed too
        self._producer_since = time.time()  # when the producer's init_transactions began
        self._renewals = RenewalBudget()
        self._hung_producers: list[Producer] = []
        self._begun_at: float | None = None  # when the open transaction began

    def _new_producer(self, settings: ProducerSettings, trap: FatalErrorTrap | None) -> Producer:
        """A producer of the role's transactional.id and timeout, its errors to `trap`."""
        role = self.role
        return Producer(settings.config(role.transactional_id, role.transaction_timeout_ms, trap))

    @property
    def in_transaction(self) -> bool:
        return self._in_transaction

    @property
    def hung(self) -> bool:
        """A transactional call never completed: only a restart cures the client."""
        return self._hung_failure is not None

    # ---- the steps of one transaction --------------------------------------------------------

    def init(self) -> None:
        """Fence any earlier incarnation with this transactional.id and abort its open
        transaction; the caller's failure when the broker does not allow it. Asked again
        while a write outage or a settling coordinator explains a failure (InitRetries)."""
        settle_s = self.role.transaction_timeout_ms / 1000 + self._timeout_s
        retries = InitRetries(settle_s, self._outage)
        while True:
            try:
                self._producer_since = time.time()
                self.producer.init_transactions(self._timeout_s)
                return
            except KafkaException as error:
                if not retries.again(error.args[0]):
                    raise self._failed(
                        f"init_transactions for transactional.id {self.role.transactional_id}"
                        f" failed: {error.args[0].str()}"
                    ) from error
            time.sleep(RETRY_PAUSE_S)

    def begin(self) -> None:
        self.producer.begin_transaction()
        self._in_transaction = True
        self._begun_at = time.monotonic()
        self.delivery_errors = []

    def produce(
        self,
        topic: str,
        value: bytes | None,
        *,
        key: bytes | None = None,
        partition: int = -1,
        timestamp: int = 0,
        on_delivery: DeliveryCallback | None = None,
    ) -> None:
        """`producer.produce`, waiting while the local queue is full (back-pressure)."""
        while True:
            try:
                self.producer.produce(
                    topic,
                    key=key,
                    value=value,
                    partition=partition,
                    timestamp=timestamp,
                    on_delivery=on_delivery,
                )
                return
            except BufferError:
                self.producer.poll(0.1)  # serves delivery reports: they make room

    def on_delivery(self, error: KafkaError | None, message: Message) -> None:
        """A delivery callback that keeps failures for `commit`. It may run inside produce()
        while that raises a fatal error, when any call into the client fails: a failure is
        only recorded here and described later."""
        if error is not None:
            self.delivery_errors.append(error)

    def flush(self, timeout_s: float | None = None) -> int:
        """`producer.flush` (serving the delivery reports), raising the real KafkaException;
        the number of records still unacknowledged.

        confluent-kafka may raise a fatal KafkaException from flush() and still run delivery
        callbacks, which makes it a SystemError caused by the real error; or raise a
        SystemError with no cause (seen when fenced): the producer is then asked why."""
        try:
            remaining: int = self.producer.flush(
                self._timeout_s if timeout_s is None else timeout_s
            )
        except SystemError as error:
            if isinstance(error.__cause__, KafkaException):
                raise error.__cause__ from None
            cause = self.fatal_cause()
            if cause is not None:
                raise KafkaException(cause) from None
            raise
        return remaining

    def commit(self, offsets: Sequence[TopicPartition]) -> None:
        """The commit protocol (docs/design.md §5.2 step 4), the one copy of it:

        1. flush: every record of the transaction acknowledged; a failed delivery makes
           the transaction abortable, so it raises here;
        2. send the input `offsets` (the next offset to read, per partition) to the
           transaction with the consumer's group metadata; `reset` sends none, its
           offsets move through the admin API;
        3. commit_transaction, retried while the client calls the failure retriable.

        Any KafkaException leaves the transaction open: the caller aborts it."""
        unacknowledged = self.flush()
        # Records Kafka cannot take yet wait for it while the cluster says why (said once,
        # worker/outage.py); otherwise commit_transaction waits for what is left.
        while unacknowledged and self._outage is not None and self._outage.waiting():
            unacknowledged = self.flush()
        if self.delivery_errors:
            errors = self.delivery_errors
            raise KafkaException(
                KafkaError(
                    errors[0].code(),
                    "delivery failed: " + "; ".join(error.str() for error in errors[:3]),
                    txn_requires_abort=True,
                )
            )
        if offsets:
            self._send_offsets(offsets)
        self._faults.reach(FaultPoint.BEFORE_COMMIT)
        self._commit_transaction()
        self._ended()
        self._renewals.committed()
        self._faults.reach(FaultPoint.AFTER_COMMIT)

    def _send_offsets(self, offsets: Sequence[TopicPartition]) -> None:
        """send_offsets_to_transaction, resumed after a retriable failure as librdkafka asks,
        and bounded: a call that never completes is a failure only a restart cures (see
        runtime/bounded_call.py), unless a write outage explains the wait."""
        if self._hung_failure is not None:
            raise self._hung_failure
        assert self._consumer is not None, "input offsets need the consumer they belong to"
        metadata = self._consumer.consumer_group_metadata()
        timeout_s = min(self._timeout_s, _SEND_OFFSETS_TIMEOUT_S)

        def send(producer: Producer, limit_s: float) -> None:
            self._faults.reach(FaultPoint.SENDING_OFFSETS)
            producer.send_offsets_to_transaction(list(offsets), metadata, limit_s)

        budget_s = timeout_s + self._hung_grace_s
        deadline = time.monotonic() + budget_s
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                # Past the bound: a hang, unless the cluster is not taking writes (then the
                # call, or its retries, may be waiting for it: give it another budget).
                if self._outage is None or not self._outage.waiting():
                    break
                deadline = time.monotonic() + budget_s
                continue
            try:
                call_within(
                    functools.partial(send, self.producer, min(timeout_s, remaining)),
                    remaining,
                    "send_offsets_to_transaction",
                    keep_waiting=None if self._outage is None else self._outage.waiting,
                )
                return
            except CallHung:
                break
            except KafkaException as error:
                if not retriable(error.args[0]):
                    raise
                log.info("send_offsets retry", extra={"error": error.args[0].str()})
            time.sleep(min(RETRY_PAUSE_S, max(0.0, deadline - time.monotonic())))
        stopping = self._outage is not None and self._outage.stopping()
        if stopping:
            reason = (
                "stopped while send_offsets_to_transaction waited for the cluster to take"
                " writes again: nothing of the open transaction is committed, and the next"
                f" start of the {self.role.name} resumes from the committed offsets"
            )
        else:
            reason = (
                f"send_offsets_to_transaction did not complete within {budget_s:.0f} s (its timeout"
                f" is {timeout_s:.0f} s): the Kafka client lost the group coordinator and"
                " does not look for the new one (librdkafka issues 5456, 5511); restarting the"
                f" {self.role.name} resumes from the committed offsets"
            )
        self._hung_failure = self._failed(reason)
        if stopping:
            raise self._hung_failure
        raise self._lost(
            reason, None, hung=True, what=f"send_offsets_to_transaction hung past {budget_s:.0f} s"
        )

    def _commit_transaction(self) -> None:
        # A retriable failure may still complete the commit: retrying is what librdkafka asks;
        # during a write outage the outage says (once) why it times out, not each retry.
        retrying(
            lambda: self.producer.commit_transaction(self._timeout_s),
            "commit retry",
            explained=self._outage.waiting if self._outage is not None else lambda: False,
        )

    def abort_and_rewind(
        self, outage_retry_s: float | None = None, stopping: Callable[[], bool] | None = None
    ) -> None:
        """Abort the open transaction, then seek every assigned partition back to its
        committed offset, so that its input is read again; the caller's failure when
        the abort cannot be done. Both are retried for the session's abort retry time, or
        during a write outage the caller has reported for ``outage_retry_s`` (retries at
        info level), or until ``stopping()``."""
        stopping = stopping or (lambda: False)
        outage = outage_retry_s is not None
        retry_s = outage_retry_s if outage_retry_s is not None else self._abort_retry_s
        deadline = time.monotonic() + retry_s
        try:
            # A timeout while the broker cannot be reached is retriable ("retry call to
            # resume"); a stopping caller leaves what is open to the broker to abort.
            retrying(
                lambda: self.producer.abort_transaction(self._timeout_s),
                "abort retry",
                deadline=deadline,
                stopping=stopping,
                warn=not outage,
            )
        except KafkaException as error:
            cause: KafkaError = error.args[0]
            raise self._lost(self.describe_fatal(cause), cause) from error
        self._ended()
        self._rewind(deadline, stopping, warn=not outage)

    def _ended(self) -> None:
        """No transaction is open any more (aborted, or lost with its producer)."""
        self._in_transaction = False
        self._begun_at = None
        self.delivery_errors = []

    def _rewind(self, deadline: float, stopping: Callable[[], bool], *, warn: bool) -> None:
        if (consumer := self._consumer) is None:
            return
        # An abort of a transaction that sent nothing is local: the committed offsets may
        # still be out of reach (a network cut), and are asked for as long.
        retrying(
            lambda: self._rewind_to_committed(consumer),
            "rewind retry",
            deadline=deadline,
            stopping=stopping,
            also=_UNANSWERED,
            warn=warn,
        )

    def _rewind_to_committed(self, consumer: Consumer) -> None:
        assignment = consumer.assignment()
        if not assignment:
            return
        for tp in consumer.committed(assignment, timeout=self._timeout_s):
            # A partition without a committed offset starts again at its beginning.
            offset = tp.offset if tp.offset != OFFSET_INVALID else OFFSET_BEGINNING
            consumer.seek(TopicPartition(tp.topic, tp.partition, offset))

    def abandon(self, timeout_s: float) -> None:
        """Abort where failing to is harmless: a fenced or failed producer cannot, and the
        broker aborts the transaction (fencing, the transaction timeout, or the next
        init_transactions with this id), so a failure is only logged."""
        try:
            self.producer.abort_transaction(timeout_s)
        except KafkaException as error:
            log.info("abort failed", extra={"error": error.args[0].str()})
        self._in_transaction = False

    # ---- a new producer for a lost one (runtime/renewal.py) ------------------------------------

    def _lost(
        self, reason: str, error: KafkaError | None, *, hung: bool = False, what: str = ""
    ) -> Exception:
        """ProducerLost when a new producer would cure the loss, else the caller's failure
        (``reason``, its one line)."""
        if self._renew_with is None:
            return self._failed(reason)
        code, text = (None, None) if error is None else (error.code(), error.str())
        by = self._taken_over(self._producer_since) if fenced(code) and self._taken_over else None
        age_s = None if self._begun_at is None else time.monotonic() - self._begun_at
        timeout_ms, budget = self.role.transaction_timeout_ms, self._renewals
        decided = lost_producer(
            reason,
            code,
            text,
            hung=hung,
            what=what,
            transaction_age_s=age_s,
            timeout_ms=timeout_ms,
            taken_over_by=by,
            budget=budget,
        )
        return decided if isinstance(decided, ProducerLost) else self._failed(decided)

    def renew(self, lost: ProducerLost, stopping: Callable[[], bool]) -> None:
        """Replace the lost producer with a new one of the same transactional.id; what the
        open transaction held is lost with it, as by an abort:

        1. the old producer: a hung one is kept and never touched again (its call may still
           be running), a fenced one is closed;
        2. the new producer's init_transactions fences the old one, and the coordinator
           aborts what it left open (retried as long as an abort would be);
        3. the input is rewound to the committed offsets."""
        assert self._renew_with is not None, "renew follows a ProducerLost"
        if lost.hung:
            self._hung_producers.append(self.producer)
        else:
            close_producer(self.producer)
        self._renewals.renewed(hung=lost.hung)
        log.warning(
            "a new producer replaces the lost one; the input is read again from the committed"
            " offsets",
            extra={
                "cause": lost.what,
                "transactional_id": self.role.transactional_id,
                "renewals": self._renewals.total,
            },
        )
        self._trap = FatalErrorTrap()
        self.producer = self._renew_with(self._trap)
        self._hung_failure = None
        self._ended()
        deadline = time.monotonic() + self._abort_retry_s
        self._producer_since = time.time()
        init = self.producer.init_transactions
        try:
            retrying(lambda: init(self._timeout_s), "init retry", deadline, stopping)
        except KafkaException as error:
            raise self._failed(
                f"a new producer for transactional.id {self.role.transactional_id} could not"
                f" start ({error.args[0].str()}) after: {lost.reason}"
            ) from error
        self._rewind(deadline, stopping, warn=True)

    # ---- fatal errors -------------------------------------------------------------------------

    def raise_if_fatal(self, error: KafkaException) -> None:
        """The caller's failure, naming the cause, for an error only a new producer cures."""
        kafka_error: KafkaError = error.args[0]
        if is_fatal(kafka_error):
            cause = self.fatal_cause() or kafka_error
            raise self._lost(self.describe_fatal(cause), cause) from error

    def fatal_cause(self) -> KafkaError | None:
        """Why the producer failed, where produce() or flush() only said "Fatal error"."""
        with contextlib.suppress(KafkaException):
            self.producer.poll(0)  # serves error_cb
        if self._trap is not None and self._trap.error is not None:
            return self._trap.error
        # A transactional call on a failed producer raises the real cause (e.g. _FENCED).
        try:
            self.producer.abort_transaction(1)
        except KafkaException as error:
            cause: KafkaError = error.args[0]
            return cause
        return None

    def failure_cause(self, error: KafkaError, offsets: Sequence[TopicPartition]) -> KafkaError:
        """Why the open transaction failed, where produce() only says "Erroneous state": the
        transactional calls name the failure, and send_offsets_to_transaction commits nothing
        (the transaction is aborted next anyway)."""
        if error.code() != KafkaError._STATE or not self._in_transaction or not offsets:
            return error
        try:
            self._send_offsets(offsets)
        except KafkaException as failure:
            cause: KafkaError = failure.args[0]
            return cause
        return error

    def describe_fatal(self, error: KafkaError) -> str:
        """One line: what stopped the transactions, and what to do."""
        return describe_fatal(self.role, error)

    # ---- the end ------------------------------------------------------------------------------

    def close(self, flush_timeout_s: float) -> None:
        """Abort an open transaction, close the consumer, then the producer (a hung producer
        is left alone: the broker aborts its transaction when the next incarnation fences it)."""
        if self._hung_failure is not None:
            if self._consumer is not None:
                self._consumer.close()
            return
        if self._in_transaction:
            self.abandon(_ABORT_ON_CLOSE_S)
        try:
            if self._consumer is not None:
                self._consumer.close()
        finally:
            # A flush error here was already reported by what stopped the caller.
            with contextlib.suppress(KafkaException):
                self.flush(flush_timeout_s)
            close_producer(self.producer)
