"""Steps of a consume-transform-produce transaction shared by the worker and `bridge kafka`.

Each caller keeps its own loop and its own meaning of "fatal"; these are the
client quirks both must handle the same way.
"""

from __future__ import annotations

import logging
import time
import warnings
from collections.abc import Callable

from confluent_kafka import (
    OFFSET_BEGINNING,
    OFFSET_INVALID,
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)

log = logging.getLogger(__name__)


def commit_transaction(producer: Producer, timeout: float) -> None:
    """`commit_transaction`, retried while the client calls the failure retriable
    (the commit may then still complete: retrying is what librdkafka asks for)."""
    while True:
        try:
            producer.commit_transaction(timeout)
            return
        except KafkaException as error:
            if error.args[0].retriable():
                log.warning("commit retry", extra={"error": error.args[0].str()})
                continue
            raise


def abort_transaction(producer: Producer, timeout: float, give_up_after: float) -> None:
    """`abort_transaction`, retried while the client calls the failure retriable (a
    timeout while the broker cannot be reached: "retry call to resume"), for at most
    `give_up_after` seconds; then, or on any other failure, the KafkaException."""
    deadline = time.monotonic() + give_up_after
    while True:
        try:
            producer.abort_transaction(timeout)
            return
        except KafkaException as error:
            if not error.args[0].retriable() or time.monotonic() >= deadline:
                raise
            log.warning("abort retry", extra={"error": error.args[0].str()})


def flush(
    producer: Producer, timeout: float, fatal_cause: Callable[[], KafkaError | None] = lambda: None
) -> None:
    """`producer.flush`, raising the real KafkaException.

    confluent-kafka may raise a fatal KafkaException from flush() and then still
    run delivery callbacks, which turns it into a SystemError whose cause is the
    real error; or raise a SystemError with no cause at all (seen when fenced),
    in which case `fatal_cause` is asked why.
    """
    try:
        producer.flush(timeout)
    except SystemError as error:
        if isinstance(error.__cause__, KafkaException):
            raise error.__cause__ from None
        cause = fatal_cause()
        if cause is not None:
            raise KafkaException(cause) from None
        raise


def rewind_to_committed(consumer: Consumer, timeout: float) -> None:
    """Seek every assigned partition back to its committed offset (the start of a
    partition without one), so an aborted transaction's input is read again."""
    assignment = consumer.assignment()
    if not assignment:
        return
    for tp in consumer.committed(assignment, timeout=timeout):
        offset = tp.offset if tp.offset != OFFSET_INVALID else OFFSET_BEGINNING
        consumer.seek(TopicPartition(tp.topic, tp.partition, offset))


def abort_if_open(producer: Producer, in_transaction: bool) -> None:
    """On close: abort an open transaction; a fenced or failed producer cannot, and
    the broker aborts it (fencing or transaction timeout), so that is only logged."""
    if not in_transaction:
        return
    try:
        producer.abort_transaction(5)
    except KafkaException as error:
        log.info("abort on close failed", extra={"error": error.args[0].str()})


def close_producer(producer: Producer) -> None:
    """`producer.close()`; a fenced producer still holds its transaction and the
    client warns that it cannot abort it. What stopped the caller already said
    so: the warning goes to the log (info), not to stderr with a source line."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        try:
            producer.close()
        except KafkaException as error:
            # A fenced producer may raise its fatal error once more on close: raised
            # from a `finally`, it would replace the one line that explains the stop.
            log.info("producer close", extra={"error": error.args[0].str()})
    for warning in caught:
        log.info("producer close", extra={"warning": str(warning.message)})
