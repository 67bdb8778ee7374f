"""`seqgate reconcile`'s view of Kafka: the committed state of one bucket's objects.

Reads every changelog partition with read_committed (what the workers committed, never
an open transaction), keeps for each of the bucket's identities under the prefix its
latest accepted event (its watermark's, or the latest accepted without a position,
whichever is later in the input), and looks that event up in the input topic (for its
version id, ETag and kind). An event a repair made needs no lookup: its id says its
state (docs/reconcile.md). The comparison itself is `seqgate.streams.tools.drift`.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.progress import Meter, NoMeter
from seqgate.schemas.codec import OBJECT_EVENT, SEEN_EVENT, WATERMARK
from seqgate.schemas.errors import CodecError
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.identity import parse_identity, scheme_of_source
from seqgate.schemas.reconciled import reconciled_state
from seqgate.schemas.records import ObjectEvent
from seqgate.streams.errors import InspectError
from seqgate.streams.state.keys import LATEST_PREFIX
from seqgate.streams.tools.drift import CommittedObject
from seqgate.streams.tools.inspect import admin_client, read_partition, span, topic_partitions

__all__ = ["ReconcileTarget", "committed_objects", "scope_of"]


@dataclass(frozen=True, slots=True)
class ReconcileTarget:
    kafka: KafkaSettings
    application_id: str
    input_topic: str
    changelog_topic: str
    framing: Framing = SINGLE_OBJECT

    @property
    def group(self) -> str:
        return f"{self.application_id}-inspect"


def scope_of(source: str, bucket: str, prefix: str) -> str:
    """The identity prefix of the objects a reconcile of `bucket` under `prefix` covers."""
    return f"{scheme_of_source(source)}://{bucket}/{prefix}"


def committed_objects(
    target: ReconcileTarget, source: str, bucket: str, prefix: str, meter: Meter | None = None
) -> dict[str, CommittedObject]:
    """Object key -> committed state, for the identities of `bucket` under `prefix`.
    `meter` follows the changelog scan, then the input records looked up."""
    scanned = meter if meter is not None else NoMeter()
    admin = admin_client(target.kafka)
    partitions = topic_partitions(admin, target.input_topic, "--input-topic")
    changelog_count = topic_partitions(admin, target.changelog_topic, "--application-id")
    if changelog_count != partitions:
        raise InspectError(
            f"changelog {target.changelog_topic} has {changelog_count} partitions and input"
            f" {target.input_topic} {partitions}: check --input-topic and --application-id"
        )
    scanned.expect(span(admin, target.changelog_topic, list(range(partitions))))
    scope = scope_of(source, bucket, prefix).encode("utf-8")
    latest: dict[str, CommittedObject] = {}
    for partition in range(partitions):
        for identity, found in _partition_latest(target, partition, scope, scanned).items():
            if identity not in latest or found.input_offset > latest[identity].input_offset:
                latest[identity] = found
    wanted = [found for found in latest.values() if reconciled_state(found.event_id) is None]
    events = accepted_events(target, wanted, scanned)
    return {
        found.key: dataclasses.replace(
            found, event=events.get((found.input_partition, found.input_offset))
        )
        for found in latest.values()
    }


def _partition_latest(
    target: ReconcileTarget, partition: int, scope: bytes, meter: Meter
) -> dict[str, CommittedObject]:
    """Identity -> latest accepted event, in one changelog partition (without the event)."""
    values: dict[bytes, tuple[bytes | None, int, int]] = {}
    latest_scope = LATEST_PREFIX + scope
    for record in read_partition(
        target.kafka, target.changelog_topic, partition, group=target.group, meter=meter
    ):
        key = record.key
        if key is not None and (key.startswith(scope) or key.startswith(latest_scope)):
            values[key] = (record.value, record.timestamp, record.offset)
    found: dict[str, CommittedObject] = {}
    for key, (value, written, offset) in values.items():
        if value is None:  # a tombstone: the state was dropped (a reset)
            continue
        try:
            if key.startswith(LATEST_PREFIX):
                seen = SEEN_EVENT.decode(value)
                identity, event_id = seen.identity, seen.event_id
                place = (seen.input_partition, seen.input_offset)
            else:
                mark = WATERMARK.decode(value)
                identity, event_id = key.decode("utf-8"), mark.event_id
                place = (mark.input_partition, mark.input_offset)
        except (CodecError, UnicodeDecodeError) as error:
            raise InspectError(
                f"the changelog record at {target.changelog_topic}[{partition}]@{offset} is"
                f" not what its key says ({error}): check --application-id"
            ) from error
        entry = CommittedObject(parse_identity(identity)[2], event_id, *place, written, None)
        if identity not in found or entry.input_offset > found[identity].input_offset:
            found[identity] = entry
    return found


def accepted_events(
    target: ReconcileTarget, accepted: Iterable[CommittedObject], meter: Meter
) -> dict[tuple[int, int], ObjectEvent]:
    """(partition, offset) -> the input event of each accepted one, for those the input
    topic still holds (and that are that event: the same id)."""
    wanted: dict[int, dict[int, str]] = defaultdict(dict)
    for entry in accepted:
        wanted[entry.input_partition][entry.input_offset] = entry.event_id
    found: dict[tuple[int, int], ObjectEvent] = {}
    for partition, offsets in sorted(wanted.items()):
        start, stop = min(offsets), max(offsets) + 1
        meter.expect(stop - start)
        for record in read_partition(
            target.kafka,
            target.input_topic,
            partition,
            start=start,
            stop=stop,
            group=target.group,
            meter=meter,
        ):
            expected = offsets.get(record.offset)
            if expected is None or record.value is None:
                continue
            try:
                event = target.framing.decode(OBJECT_EVENT, record.value)
            except CodecError:
                continue  # the worker rejected what it could not decode: never accepted
            if event.id == expected:
                found[(partition, record.offset)] = event
    return found
