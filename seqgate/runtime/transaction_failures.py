"""Who runs a transactional session, and the one line that explains why its transactions
stopped (the session's callers stop with it: a worker, `bridge kafka`, `reset`)."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import KafkaError

from seqgate.runtime.retrying import OTHER_CALL_PENDING

__all__ = ["ABORTED_ON_TIMEOUT", "FENCED", "FatalErrorTrap", "SessionRole", "describe_fatal"]

# The broker aborted the transaction itself (it outlived transaction.timeout.ms) and no
# longer accepts the producer's epoch.
ABORTED_ON_TIMEOUT = frozenset({KafkaError.INVALID_TXN_STATE, KafkaError.INVALID_PRODUCER_EPOCH})
# A newer producer of the transactional.id, or the broker's timeout, fenced this one.
FENCED = frozenset({KafkaError._FENCED, KafkaError.PRODUCER_FENCED})


@dataclass(frozen=True, slots=True)
class SessionRole:
    """Who runs the transactions, for the one line that explains a failure."""

    name: str  # "worker", "bridge", "reset"
    transactional_id: str
    id_option: str  # the option the transactional id comes from
    transaction_timeout_ms: int


class FatalErrorTrap:
    """An `error_cb` that keeps the producer's fatal error: produce() and flush() only
    say "Fatal error", the error callback names the cause."""

    def __init__(self) -> None:
        self.error: KafkaError | None = None

    def __call__(self, error: KafkaError) -> None:
        if error.fatal():
            self.error = error


def describe_fatal(role: SessionRole, error: KafkaError) -> str:
    """One line: what stopped the transactions, and what to do."""
    name, timeout_ms = role.name, role.transaction_timeout_ms
    restart = f"restart the {name} (it resumes from the committed offsets)"
    if error.code() in ABORTED_ON_TIMEOUT:
        return (
            f"the broker aborted this {name}'s transaction ({error.str()}): it stayed open"
            f" longer than --transaction-timeout-ms ({timeout_ms} ms) while the {name} could"
            " not finish it (a network partition, a broker outage or a paused process);"
            f" {restart}; where such outages are expected, raise --transaction-timeout-ms"
            " (at most the broker's transaction.max.timeout.ms)"
        )
    if error.code() in FENCED:
        return (
            f"{name} fenced (transactional.id {role.transactional_id}): either another"
            f" {name} runs with the same {role.id_option} (give each a distinct one), or"
            f" this {name}'s transaction was open longer than --transaction-timeout-ms"
            f" ({timeout_ms} ms; the process was paused, or cut off from the broker) and"
            f" the broker aborted it; {restart}"
        )
    if error.code() in OTHER_CALL_PENDING:
        return (
            f"the Kafka client cannot end this {name}'s transaction while an earlier"
            f" transactional call is unfinished inside it ({error.str()}), typically one"
            f" that waits for a broker that went away; {restart}"
        )
    return f"fatal Kafka error: {error.str()}"
