"""Ending the open transaction of a worker the group dropped, as its partitions arrive.

A worker killed between sending its input offsets to its transaction and committing it
leaves those offsets pending in the group: until the transaction ends, the group answers
the next owner's question "where do I resume?" with "not yet", and the broker ends the
transaction only at its timeout (`--transaction-timeout-ms`). The next owner ends it at
once the way the dead worker's restart would: a producer initialised with the dead worker's
`transactional.id` fences it, and the coordinator aborts what it had open. Nothing of that
transaction could have committed anyway: its offsets carry a group generation that ended
with the dead worker's membership. Which owners qualify: rules/takeover.py.

Just before the fence the new owner marks, in the dropped worker's fenced group
(runtime/topics.py), when and by whom. A dropped worker that was only paused, and resumes
to find its producer fenced, reads the mark and goes on with a new producer
(runtime/renewal.py); without a mark, a fence means a second process with its instance id.

Only with static membership: a dynamic member's name in the group does not tell its
transactional.id, so a dropped dynamic member's transaction waits for the broker's timeout.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Iterable

from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient

from seqgate.streams.rules.takeover import departed_owners, taken_over_by
from seqgate.streams.runtime.kafka_clients import client_config, close_producer
from seqgate.streams.runtime.renewal import TakenOver
from seqgate.streams.runtime.topics import fence_stamp, fenced_group, read_fence_stamp
from seqgate.streams.worker.config import WorkerConfig, producer_config

log = logging.getLogger(__name__)

# How often the group is described for its owners (a partition's owner changes rarely).
WATCH_S = 3.0
_ASK_TIMEOUT_S = 5.0
# The coordinator answers "concurrent transactions" while it writes the abort's markers;
# librdkafka's default backoff (100 ms, doubling to 1 s) then waits longer than the abort.
_FAST_RETRIES = {"retry.backoff.ms": "20", "retry.backoff.max.ms": "100"}


class DepartedOwners:
    """Remembers who owned each partition; ends a dropped owner's transaction on takeover."""

    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self._admin = AdminClient(client_config(config.kafka))
        self._owners: dict[int, str] = {}  # partition -> instance id, as last described
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="group-owners", daemon=True)

    def start(self) -> None:
        self._observe()  # the owners before this worker's first assignment
        self._thread.start()

    def close(self) -> None:
        self._stop.set()

    def end_transactions(self, partitions: Iterable[int]) -> threading.Thread | None:
        """Start ending the transactions of the dropped previous owners of `partitions`, on
        a thread of its own: the rebalance callback and the restore go on meanwhile."""
        with self._lock:
            owners = dict(self._owners)
        partitions = list(partitions)
        if not {owners.get(p) for p in partitions} - {None, self.config.instance_id}:
            return None  # the partitions were nobody else's, as far as this worker saw
        thread = threading.Thread(
            target=self._end_departed, args=(owners, partitions), name="fence", daemon=True
        )
        thread.start()
        return thread

    def _end_departed(self, owners: dict[int, str], partitions: list[int]) -> None:
        members = self._observe()
        if members is None:
            return  # the group cannot be described: waiting for the timeout is safe
        for owner in sorted(departed_owners(owners, partitions, members, self.config.instance_id)):
            self._end(owner)

    def _watch(self) -> None:
        while not self._stop.wait(WATCH_S):
            self._observe()

    def _observe(self) -> set[str] | None:
        """The group's static members now; notes the owners of a stable group."""
        group = self.config.application_id
        try:
            future = self._admin.describe_consumer_groups([group], request_timeout=_ASK_TIMEOUT_S)
            description = future[group].result(timeout=_ASK_TIMEOUT_S)
        except KafkaException as error:
            log.info("group not described", extra={"error": str(error.args[0])})
            return None
        members: set[str] = set()
        owners: dict[int, str] = {}
        for member in description.members:
            if member.group_instance_id is None:
                continue  # dynamic: its name does not tell its transactional.id
            members.add(member.group_instance_id)
            assigned = member.assignment.topic_partitions if member.assignment else []
            for tp in assigned:
                if tp.topic == self.config.input_topic:
                    owners[tp.partition] = member.group_instance_id
        if getattr(description.state, "name", "").lower() == "stable":
            with self._lock:
                self._owners.update(owners)
        return members

    def _end(self, instance_id: str) -> None:
        """Mark, then fence `instance_id`'s transactional producer: its transaction aborts."""
        departed = dataclasses.replace(
            self.config,
            instance_id=instance_id,
            extra_producer_config={**_FAST_RETRIES, **self.config.extra_producer_config},
        )
        began = time.monotonic()
        try:
            self._mark(instance_id)
            producer = Producer(producer_config(departed, on_error=_ignored))
            try:
                producer.init_transactions(self.config.kafka_timeout_s)
            finally:
                close_producer(producer)
        except KafkaException as error:
            log.warning(
                "the open transaction of dropped worker %s was not ended (%s): its partitions"
                " wait for the broker to abort it (--transaction-timeout-ms)",
                instance_id,
                error.args[0].str() if error.args else error,
                extra={"transactional_id": departed.transactional_id},
            )
            return
        log.info(
            "ended the open transaction of a dropped worker",
            extra={
                "instance_id": instance_id,
                "transactional_id": departed.transactional_id,
                "seconds": round(time.monotonic() - began, 3),
            },
        )

    def _mark(self, instance_id: str) -> None:
        group = fenced_group(self.config.application_id, instance_id)
        stamp = fence_stamp(int(time.time() * 1000), self.config.instance_id)
        consumer = Consumer(
            client_config(self.config.kafka, **{"group.id": group, "enable.auto.commit": False})
        )
        try:
            mark = TopicPartition(self.config.input_topic, 0, 0, metadata=stamp)
            consumer.commit(offsets=[mark], asynchronous=False)
        finally:
            consumer.close()


def takeover_reader(config: WorkerConfig) -> TakenOver:
    """For the session (runtime/renewal.py): who ended this worker's transaction at a
    takeover after the given time, read from its fenced group's mark; None if nobody
    did, or if the mark cannot be read (the fence is then taken as another process's)."""
    admin: list[AdminClient] = []
    group = fenced_group(config.application_id, config.instance_id)

    def taken_over(producer_since_s: float) -> str | None:
        if not admin:
            admin.append(AdminClient(client_config(config.kafka)))
        asked = [ConsumerGroupTopicPartitions(group, [TopicPartition(config.input_topic, 0)])]
        try:
            answer = admin[0].list_consumer_group_offsets(asked, request_timeout=_ASK_TIMEOUT_S)
            offsets = answer[group].result(timeout=_ASK_TIMEOUT_S).topic_partitions or []
        except KafkaException as error:
            log.info("takeover mark not read", extra={"error": str(error.args[0])})
            return None
        marks = [read_fence_stamp(tp.metadata) for tp in offsets]
        return taken_over_by(next((m for m in marks if m is not None), None), producer_since_s)

    return taken_over


def _ignored(error: KafkaError) -> None:
    """The fencing producer's asynchronous errors: init_transactions raises what matters."""
