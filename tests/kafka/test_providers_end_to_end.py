"""Every provider into one pipeline: signed routes -> object-events -> worker -> outbox.

One in-process HTTP bridge (:func:`tests.support.http_bridge.http_bridge`) serves ``/s3``,
``/eventbridge`` and the seven provider routes with the signing set-up of
:mod:`tests.kafka.test_bridge_webhooks`. For every provider the workload holds at least two
distinct writes of one object and one write of another; each request is sent two or three
times byte for byte (a redelivery) and the whole list is shuffled with a fixed seed (the
reordering). Then a worker runs until it has caught up, and the test checks from outside:

* every redelivery was published with the same event id, and distinct changes with
  distinct ids (docs/design.md §4);
* each input's outcome is the one the ordering rules predict, computed here independently
  (docs/design.md §3): for the ordered sources (S3, Azure) a write is accepted iff its sequencer is
  above the highest one seen for its object, in arrival order (an older write arriving after
  a newer one is ``stale``); for the dedupe-only ones, one acceptance per distinct change;
  other kinds than ``created`` are ``filtered``;
* the outbox holds exactly the predicted accepted events, ``seqgate verify`` agrees, every
  provider appears, and the worker's counters satisfy the conservation law (docs/design.md §1.1);
* ``seqgate parse`` recognizes the body of one request of each auto-detected provider.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import random
import subprocess
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
from seqgate_devtools.samples import (
    eventbridge_event,
    form_encode_key,
    s3_notification,
    s3_record,
    to_bytes,
)

from seqgate.connectors.auth.appwrite import APPWRITE_SIGNATURE_HEADER
from seqgate.connectors.auth.b2 import B2_SIGNATURE_HEADER
from seqgate.connectors.parsers.appwrite import APPWRITE_EVENTS_HEADER
from seqgate.schemas.codec import OUTBOX_RECORD
from seqgate.schemas.records import OutboxRecord
from seqgate.streams.tools.verify import verify
from tests.support import azure_samples, gcs_samples, supabase_samples
from tests.support import http_bridge as bridge_http
from tests.support import webhook_requests as bridge_webhooks
from tests.support.environment import clean_env
from tests.support.gcs_tokens import claims, sign
from tests.support.http_bridge import EB_AUTH, EB_HEADER, Topicset, http_bridge, scenario
from tests.support.kafka_helpers import (
    caught_up,
    read_all,
    verify_target,
    wait_for,
    worker_config,
    worker_thread,
)
from tests.support.paths import REPO
from tests.support.webhook_requests import GCS_AUDIENCE, SECRET_HEADER, Request, Secrets, send
from tests.support.webhook_samples import (
    APPWRITE_URL,
    CLOUD_NAME,
    appwrite_events,
    appwrite_file,
    appwrite_signature,
    b2_body,
    b2_event,
    b2_signature,
    body_bytes,
    box_event,
    box_headers,
    box_source,
    cloudinary_signature,
    cloudinary_upload,
)

pytestmark = pytest.mark.kafka

topics = bridge_http.topics  # fresh events / outbox / rejected topics per test
keys = bridge_webhooks.keys  # the routes' generated secrets and Google's signing key

SEED = 20261125
PROVIDERS = ("s3", "gcs", "azure", "supabase", "b2", "box", "cloudinary", "appwrite")
ORDERED = frozenset({"s3", "azure"})  # the default ordered sources (docs/design.md §3)
AUTO_DETECTED = ("gcs", "azure", "supabase", "b2", "box")  # what `seqgate parse` recognizes
S3_TOKEN = "s3-end-to-end"
DELETE_MARKER = "ObjectRemoved:DeleteMarkerCreated"
K = TypeVar("K")
V = TypeVar("V")
ONE_PUBLISHED = {"published": 1, "filtered": 0, "ignored": 0, "rejected": 0}


@dataclass(frozen=True)
class Change:
    """One change of one object as a provider reports it, and the signed request carrying it."""

    source: str  # ObjectEvent.source
    route: str
    label: str  # names the change (and, for S3, the envelope reporting it)
    request: Request
    identity: str  # the Kafka key: <scheme>://<bucket>/<key>
    kind: str = "created"
    position: str | None = None  # ordered sources: the sequencer (fixed width, hex)
    event_id: str | None = None  # the provider's own event id, where it has one


# ---- the workload, provider by provider --------------------------------------------------------


def s3_changes() -> list[Change]:
    bucket = "mixed-input"
    photo, notes = "mixed/June photo+1 100%.jpg", "mixed/notes.txt"
    auth = {"Authorization": f"Bearer {S3_TOKEN}"}

    def native(label: str, key: str, sequencer: str, event: str = "ObjectCreated:Put") -> Change:
        record = s3_record(
            bucket=bucket, key=form_encode_key(key), sequencer=sequencer, event_name=event
        )
        kind = "created" if event.startswith("ObjectCreated") else "removed"  # a delete marker
        body = to_bytes(s3_notification(record))
        return Change(
            "s3", "s3", label, Request(body, auth), f"s3://{bucket}/{key}", kind, sequencer
        )

    bridged_id = "5a1c7e02-8d43-4b6f-9e21-0c3d4b5a6f70"
    bridged = to_bytes(
        eventbridge_event(
            bucket=bucket, key=photo, sequencer="00000000000000A2", event_id=bridged_id
        )
    )
    return [
        native("photo#1", photo, "00000000000000A1"),
        native("photo#2", photo, "00000000000000A2"),
        native("photo#3", photo, "00000000000000A3"),
        # The same write as photo#2, reported by EventBridge too (its own id, same sequencer).
        Change(
            "s3",
            "eventbridge",
            "photo#2 via eventbridge",
            Request(bridged, EB_AUTH),
            f"s3://{bucket}/{photo}",
            position="00000000000000A2",
            event_id=bridged_id,
        ),
        native("notes#1", notes, "00000000000000B1"),
        native("notes deleted", notes, "00000000000000B2", DELETE_MARKER),  # filtered
    ]


def gcs_changes(keys: Secrets) -> list[Change]:
    now = time.time()
    token = sign(keys.google, claims(aud=GCS_AUDIENCE, iat=now - 60, exp=now + 3540))
    auth = {"Authorization": f"Bearer {token}"}
    bucket = gcs_samples.BUCKET

    def finalized(label: str, name: str, generation: str, message_id: str) -> Change:
        resource = gcs_samples.object_resource(name=name, generation=generation)
        attributes = gcs_samples.notification_attributes(name=name, generation=generation)
        message = gcs_samples.pubsub_message(resource, attributes, message_id=message_id)
        body = body_bytes(gcs_samples.push_envelope(message))
        return Change("gcs", "gcs", label, Request(body, auth), f"gs://{bucket}/{name}")

    photo, other = gcs_samples.NAME, "2026/other trip.jpg"
    return [
        finalized("photo#1", photo, "1764064800000001", "8417395018764301"),
        finalized("photo#2", photo, "1764064800000002", "8417395018764302"),
        finalized("other#1", other, "1764064800000003", "8417395018764303"),
    ]


def azure_changes(keys: Secrets) -> list[Change]:
    bucket = f"{azure_samples.ACCOUNT}.{azure_samples.CONTAINER}"
    photo, other = azure_samples.BLOB, "incoming/second file.csv"

    def created(label: str, blob: str, n: int, cloud: bool = False) -> Change:
        sequencer = f"0000000000000442000000000002896{n}"  # fixed width: compared as strings
        event_id = f"e0c1a3b5-000{n}-4c2e-9d1f-0a1b2c3d4e0{n}"
        subject = azure_samples.blob_subject(blob=blob)
        data = azure_samples.blob_data(sequencer=sequencer, url=azure_samples.blob_url(blob=blob))
        if cloud:  # CloudEvents 1.0, the secret in a header
            document: Any = azure_samples.cloud_event(event_id=event_id, subject=subject, data=data)
            request = Request(body_bytes(document), {SECRET_HEADER: keys.azure})
        else:  # the Event Grid schema, an array, the secret in the query
            document = [
                azure_samples.event_grid_event(event_id=event_id, subject=subject, data=data)
            ]
            request = Request(body_bytes(document), query=f"?code={keys.azure}")
        return Change(
            "azure",
            "azure",
            label,
            request,
            f"azure://{bucket}/{blob}",
            "created",
            sequencer,
            event_id,
        )

    return [
        created("photo#1", photo, 1),
        created("photo#2", photo, 2),
        created("photo#3", photo, 3),
        created("other#1", other, 4, cloud=True),
    ]


def supabase_changes(keys: Secrets) -> list[Change]:
    bucket, photo, other = supabase_samples.BUCKET, supabase_samples.NAME, "users/7/cv.pdf"
    auth = {SECRET_HEADER: keys.supabase}
    first = supabase_samples.object_row(version="0b3c9d2a-0001-4f0a-9b8c-7d6e5f4a3b2c")
    second = supabase_samples.object_row(
        version="0b3c9d2a-0002-4f0a-9b8c-7d6e5f4a3b2c",
        metadata=supabase_samples.object_metadata(etag='"0cc175b9c0f1b6a831c399e269772661"'),
        updated_at="2026-11-25T10:05:00.000000+00:00",
    )
    other_row = supabase_samples.object_row(
        row_id="7a9e2c4d-1b3f-4e5a-8c6d-0e1f2a3b4c5d",
        name=other,
        version="0b3c9d2a-0003-4f0a-9b8c-7d6e5f4a3b2c",
    )

    def change(label: str, document: dict[str, Any], name: str) -> Change:
        request = Request(body_bytes(document), auth)
        return Change("supabase", "supabase", label, request, f"supabase://{bucket}/{name}")

    return [
        change("photo#1", supabase_samples.insert(first), photo),
        change("photo#2", supabase_samples.update(second, first), photo),  # a new version
        change("other#1", supabase_samples.insert(other_row), other),
    ]


def b2_changes(keys: Secrets) -> list[Change]:
    def uploaded(label: str, name: str, event_id: str, version: str) -> Change:
        event = b2_event(eventId=event_id, objectName=name, objectVersionId=version)
        body = body_bytes(b2_body(event))
        request = Request(body, {B2_SIGNATURE_HEADER: b2_signature(body, keys.b2)})
        identity = f"b2://{event['bucketName']}/{name}"
        return Change("b2", "b2", label, request, identity, event_id=f"b2-{event_id}")

    photo, other = "2026/summer trip/beach+sunset.jpg", "2026/other.png"
    return [
        uploaded("photo#1", photo, "c0a4ee2e-0001-4d54-b6d4-8f5e1f6b9a01", "4_z_f1_v0001"),
        uploaded("photo#2", photo, "c0a4ee2e-0002-4d54-b6d4-8f5e1f6b9a02", "4_z_f1_v0002"),
        uploaded("other#1", other, "c0a4ee2e-0003-4d54-b6d4-8f5e1f6b9a03", "4_z_f2_v0001"),
    ]


def box_changes(keys: Secrets) -> list[Change]:
    fresh = dt.datetime.now(dt.UTC).isoformat()  # Box signs its delivery time

    def uploaded(label: str, file_id: str, n: int) -> Change:
        version = {**box_source()["file_version"], "id": f"157739287477{n}"}
        event_id = f"7c3a1f0e-000{n}-4e8a-9f61-2d0b8c4e7a13"
        event = box_event(id=event_id, source=box_source(id=file_id, file_version=version))
        body = body_bytes(event)
        request = Request(body, box_headers(body, fresh, keys.box_primary, None))
        identity = f"box://files/{file_id}"
        return Change("box", "box", label, request, identity, event_id=f"box-{event_id}")

    report, slides = "1442259386371", "1442259386999"
    return [
        uploaded("report#1", report, 1),
        uploaded("report#2", report, 2),  # a new version of the file
        uploaded("slides#1", slides, 3),
    ]


def cloudinary_changes(keys: Secrets) -> list[Change]:
    stamp = str(int(time.time()))

    def uploaded(label: str, public_id: str, request_id: str, version: int) -> Change:
        document = cloudinary_upload(request_id=request_id, public_id=public_id, version=version)
        body = body_bytes(document)
        headers = {
            "X-Cld-Timestamp": stamp,
            "X-Cld-Signature": cloudinary_signature(body, stamp, keys.cloudinary),
        }
        identity = f"cloudinary://{CLOUD_NAME}/image/upload/{public_id}"
        return Change(
            "cloudinary",
            "cloudinary",
            label,
            Request(body, headers),
            identity,
            event_id=f"cloudinary-{request_id}",
        )

    shoes, hat = "products/red shoes+laces", "products/blue hat"
    return [
        uploaded("shoes#1", shoes, "799b7a3e1f2b4c5d6e7f8091a2b3c401", 1764064800),
        uploaded("shoes#2", shoes, "799b7a3e1f2b4c5d6e7f8091a2b3c402", 1764064900),  # overwrite
        uploaded("hat#1", hat, "799b7a3e1f2b4c5d6e7f8091a2b3c403", 1764065000),
    ]


def appwrite_changes(keys: Secrets) -> list[Change]:
    bucket = "avatars"

    def change(label: str, file_id: str, action: str, when: str, signature: str) -> Change:
        document = appwrite_file(
            **{"$id": file_id, "$createdAt": when, "$updatedAt": when, "signature": signature}
        )
        body = body_bytes(document)
        headers = {
            APPWRITE_EVENTS_HEADER: appwrite_events(bucket, file_id, action),
            APPWRITE_SIGNATURE_HEADER: appwrite_signature(APPWRITE_URL, body, keys.appwrite),
        }
        kind = "created" if action == "create" else "metadata_changed"
        return Change(
            "appwrite",
            "appwrite",
            label,
            Request(body, headers),
            f"appwrite://{bucket}/{file_id}",
            kind,
        )

    portrait, banner = "6745a1b2c3d4e5f60718", "6745a1b2c3d4e5f60799"
    return [
        change("portrait#1", portrait, "create", "2026-11-25T10:00:00.123+00:00", "5d41402a01"),
        # Deleted and created again under the same id, with new content: a second write.
        change("portrait#2", portrait, "create", "2026-11-25T10:07:00.456+00:00", "5d41402a02"),
        change(
            "portrait renamed", portrait, "update", "2026-11-25T10:08:00.789+00:00", "5d41402a02"
        ),
        change("banner#1", banner, "create", "2026-11-25T10:09:00.000+00:00", "7e1b2c3d01"),
    ]


def all_changes(keys: Secrets) -> list[Change]:
    return [
        *s3_changes(),
        *gcs_changes(keys),
        *azure_changes(keys),
        *supabase_changes(keys),
        *b2_changes(keys),
        *box_changes(keys),
        *cloudinary_changes(keys),
        *appwrite_changes(keys),
    ]


def deliveries(changes: list[Change], seed: int = SEED) -> list[Change]:
    """Every request two times, the first change of each provider three times; shuffled."""
    sent: list[Change] = []
    firsts: set[str] = set()
    for change in changes:
        copies = 2 if change.source in firsts else 3
        firsts.add(change.source)
        sent.extend([change] * copies)
    random.Random(seed).shuffle(sent)
    return sent


# ---- the prediction (docs/design.md §3, written independently of seqgate/streams/rules/policy.py)
# ----------


def predict(sent: list[Change]) -> list[str]:
    """The outcome of each delivery, in arrival order."""
    watermarks: dict[str, int] = {}
    seen: set[tuple[str, str]] = set()
    outcomes: list[str] = []
    for change in sent:
        if change.kind != "created":
            outcomes.append("filtered")
        elif change.source in ORDERED:
            assert change.position is not None
            position, mark = int(change.position, 16), watermarks.get(change.identity)
            if mark is None or position > mark:
                watermarks[change.identity] = position
                outcomes.append("accepted")
            else:
                outcomes.append("duplicate" if position == mark else "stale")
        else:  # dedupe-only: one acceptance per distinct change (= distinct event id)
            first = (change.route, change.label) not in seen
            seen.add((change.route, change.label))
            outcomes.append("accepted" if first else "duplicate")
    return outcomes


def grouped(items: Iterable[tuple[K, V]]) -> dict[K, list[V]]:
    """The values of each key, in the order given."""
    groups: dict[K, list[V]] = defaultdict(list)
    for key, value in items:
        groups[key].append(value)
    return dict(groups)


# ---- the test ------------------------------------------------------------------------------------


def test_every_provider_through_one_pipeline_with_redeliveries_and_reordering(
    keys: Secrets, topics: Topicset, tmp_path: Path
) -> None:
    changes = all_changes(keys)
    sent = deliveries(changes)
    expected = predict(sent)
    assert {change.source for change in changes} == set(PROVIDERS)
    # The seed must reorder: for S3 and Azure, a write whose every copy arrives after a
    # newer write of its object, so that it is never accepted, only stale.
    outcomes_of = grouped([((c.route, c.label), o) for c, o in zip(sent, expected, strict=True)])
    for source in ORDERED:
        overtaken = [
            label
            for (route, label), found in outcomes_of.items()
            if route == source and set(found) == {"stale"}
        ]
        assert overtaken, f"seed {SEED} overtakes no {source} write: pick another"

    settings = dataclasses.replace(
        keys.settings(s3_token=S3_TOKEN, eventbridge_header=EB_HEADER), s3_enabled=True
    )

    async def body() -> None:
        async with http_bridge(topics, settings) as server:
            for change in sent:
                status, reply = await send(server, change.route, change.request)
                assert (status, reply) == (200, ONE_PUBLISHED), (change.route, change.label)
            assert server.bridge.tally.as_dict()["published"] == len(sent)

    scenario(body)
    assert topics.rejected_records() == []

    # Published: one event per request, in arrival order per object (one partition each).
    published = topics.published()
    assert len(published) == len(sent)
    events_of = grouped([(key.decode(), event) for _, key, event in published])
    sent_of = grouped([(change.identity, change) for change in sent])
    assert events_of.keys() == sent_of.keys()
    ids: dict[tuple[str, str], set[str]] = defaultdict(set)
    for identity, events in events_of.items():
        for change, event in zip(sent_of[identity], events, strict=True):
            assert (event.source, event.kind) == (change.source, change.kind), change.label
            assert event.origin == f"http:{change.route}"
            if change.position is not None:  # S3 positions are lower-cased (canonical form)
                assert event.position == change.position.lower()
            if change.event_id is not None:
                assert event.id == change.event_id, (change.source, change.label)
            ids[(change.route, change.label)].add(event.id)
    redelivered_differently = {what: found for what, found in ids.items() if len(found) != 1}
    assert redelivered_differently == {}, "a redelivery came out with another event id"
    id_of = {what: found.pop() for what, found in ids.items()}
    assert len(set(id_of.values())) == len(id_of) == len(changes), "distinct changes share an id"

    # The worker, until it has committed the whole input.
    config = worker_config(topics.bootstrap, topics.events, tmp_path)
    started = time.monotonic()
    with worker_thread(config) as running:
        wait_for(caught_up(topics.bootstrap, config), 60, "the worker to catch up")
    assert running.errors == []
    worker_seconds = time.monotonic() - started

    # Each input's outcome, per object in arrival order, as predicted.
    decisions = sorted(running.decisions, key=lambda d: (d.partition, d.offset))
    decided = grouped([(d.identity, str(d.outcome)) for d in decisions])
    predicted = grouped([(c.identity, outcome) for c, outcome in zip(sent, expected, strict=True)])
    assert decided == predicted

    # The outbox: exactly the predicted accepted events, per object in arrival order.
    outbox: list[tuple[str, OutboxRecord]] = []
    for record in read_all(topics.bootstrap, config.outbox_topic):
        assert record.key is not None
        outbox.append((record.key.decode(), OUTBOX_RECORD.decode(record.value or b"")))
    outbox.sort(key=lambda item: (item[1].input_partition, item[1].input_offset))
    found = grouped([(key, (r.event.source, r.event.id)) for key, r in outbox])
    accepted = [c for c, outcome in zip(sent, expected, strict=True) if outcome == "accepted"]
    wanted = grouped([(c.identity, (c.source, id_of[(c.route, c.label)])) for c in accepted])
    assert found == wanted
    assert {r.event.source for _, r in outbox} == set(PROVIDERS)
    for identity in {c.identity for c in accepted if c.source in ORDERED}:
        # Positions strictly increase per object, each record naming its predecessor.
        positions = [r.event.position or "" for key, r in outbox if key == identity]
        assert positions == sorted(set(positions)), identity
        chain = [r.previous_position for key, r in outbox if key == identity]
        assert chain == [None, *positions[:-1]], identity

    # verify (docs/design.md §5.7) agrees.
    report = verify(verify_target(config))
    assert report.ok(), report
    assert report.totals()["inputs"] == len(sent)
    assert report.totals()["found"] == len(outbox)

    # The conservation law, from the worker's counters.
    totals = running.worker.counters.totals()
    outcomes = Counter(expected)
    assert totals == {name: outcomes.get(name, 0) for name in totals}
    assert (
        totals["accepted"] + totals["duplicate"] + totals["stale"] + totals["filtered"]
        == len(published)
        == len(sent)
    )
    assert totals["ignored"] == totals["rejected"] == 0
    assert totals["accepted"] == len(outbox)
    print(
        f"\n{len(sent)} requests, {len(changes)} changes; outcomes {dict(outcomes)};"
        f" worker caught up in {worker_seconds:.1f}s"
    )

    # `seqgate parse` recognizes each auto-detected provider's body, with the route's event id.
    files: dict[str, Path] = {}
    for source in AUTO_DETECTED:
        first = next(c for c in changes if c.source == source)
        files[source] = tmp_path / f"{source}.json"
        files[source].write_bytes(first.request.body)
    done = subprocess.run(
        [sys.executable, "-m", "seqgate.cli", "parse", *map(str, files.values())],
        capture_output=True,
        env=clean_env(),
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    lines = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert len(lines) == len(AUTO_DETECTED), lines
    for source, path in files.items():
        [line] = [line for line in lines if line["origin"] == f"file:{path}:1"]
        first = next(c for c in changes if c.source == source)
        assert (line["status"], line["source"]) == ("event", source), line
        assert line["id"] == id_of[(first.route, first.label)], (source, line)
