"""The provider routes of `seqgate bridge http` (seqgate/connectors/sources/webhook_routes.py)
against the broker.

For each provider (GCS, Azure, Supabase, B2, Box, Cloudinary, Appwrite) one case holds a
request signed as the provider signs it, and the refused variants: forged (403), missing
(401) and, where the provider signs a time, replayed (403; for GCS an expired token). The
refused requests go first and carry the same body as the accepted one, so the exact list of
events read afterwards (no duplicate, no rejected record) proves that none of them was written.
Keys and secrets are generated here. The server runs in this process
(:func:`tests.support.http_bridge.http_bridge`); two tests run the real command.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from seqgate.connectors.auth.appwrite import APPWRITE_SIGNATURE_HEADER
from seqgate.connectors.auth.b2 import B2_SIGNATURE_HEADER
from seqgate.connectors.parsers.appwrite import APPWRITE_EVENTS_HEADER, parse_appwrite
from seqgate.connectors.parsers.cloudinary import parse_cloudinary
from seqgate.connectors.parsers.gcs import parse_gcs
from seqgate.connectors.parsers.supabase import parse_supabase
from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.connectors.sources.webhook_routes import WEBHOOK_ROUTES
from seqgate.schemas.identity import event_identity
from seqgate.schemas.records import ObjectEvent
from tests.support import azure_samples, gcs_samples, supabase_samples
from tests.support import http_bridge as bridge_http
from tests.support.gcs_tokens import claims, sign
from tests.support.http_bridge import (
    PARTITIONS,
    Running,
    Topicset,
    command,
    http_bridge,
    in_thread,
    post_to,
    scenario,
)
from tests.support.partitioning import java_partition
from tests.support.webhook_requests import GCS_AUDIENCE, SECRET_HEADER, Request, Secrets, send
from tests.support.webhook_requests import keys as keys
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
    cloudinary_signature,
    cloudinary_upload,
    new_key,
)

pytestmark = pytest.mark.kafka

topics = bridge_http.topics  # the fixture: fresh events and rejected topics per test

ORIGIN = "WebHook-Request-Origin"


@dataclass(frozen=True)
class Expected:
    """One event the accepted request must publish, and its partition key."""

    identity: str
    kind: str
    event_id: str | None = None  # None: compared with the parser's own output instead


@dataclass(frozen=True)
class Case:
    route: str
    accepted: list[Request]
    refused: list[tuple[str, Request, int]]  # (what, request, status)
    expected: list[Expected]
    parsed: list[ObjectEvent] = field(default_factory=list)  # the provider parser's events


def _now() -> float:
    return time.time()


def _iso(seconds: float) -> str:
    return dt.datetime.fromtimestamp(seconds, dt.UTC).isoformat()


def gcs_case(keys: Secrets) -> Case:
    body = body_bytes(gcs_samples.push_envelope(gcs_samples.notification()))
    now = _now()
    fresh = claims(aud=GCS_AUDIENCE, iat=now - 60, exp=now + 3540)
    expired = claims(aud=GCS_AUDIENCE, iat=now - 7200, exp=now - 3600)

    def bearer(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    return Case(
        "gcs",
        [Request(body, bearer(sign(keys.google, fresh)))],
        [
            ("forged", Request(body, bearer(sign(keys.forger, fresh))), 403),
            ("missing", Request(body), 401),
            ("expired", Request(body, bearer(sign(keys.google, expired))), 403),
            ("not bearer", Request(body, {"Authorization": "Basic eDp5"}), 401),
        ],
        [
            # The record key is the identity: scheme gs for source gcs (docs/design.md §2.1).
            Expected(f"gs://{gcs_samples.BUCKET}/{gcs_samples.NAME}", "created")
        ],
        list(parse_gcs(json.loads(body), "http:gcs").events),
    )


def azure_case(keys: Secrets) -> Case:
    grid = body_bytes([azure_samples.event_grid_event()])
    other_blob = "incoming/second file.csv"
    cloud = body_bytes(
        azure_samples.cloud_event(
            event_id="9f0c2d4e-001e-001b-66ab-eeb76e069632",
            subject=azure_samples.blob_subject(blob=other_blob),
            data=azure_samples.blob_data(sequencer="00000000000004420000000000028964"),
        )
    )
    bucket = f"{azure_samples.ACCOUNT}.{azure_samples.CONTAINER}"
    return Case(
        "azure",
        [
            Request(grid, query=f"?code={keys.azure}"),
            Request(cloud, {SECRET_HEADER: keys.azure}),  # CloudEvents, the header form
        ],
        [
            ("forged", Request(grid, query="?code=not-the-secret"), 403),
            ("forged header", Request(grid, {SECRET_HEADER: "nope"}, f"?code={keys.azure}"), 403),
            ("missing", Request(grid), 401),
        ],
        [
            Expected(f"azure://{bucket}/{azure_samples.BLOB}", "created", azure_samples.EVENT_ID),
            Expected(
                f"azure://{bucket}/{other_blob}", "created", "9f0c2d4e-001e-001b-66ab-eeb76e069632"
            ),
        ],
    )


def supabase_case(keys: Secrets) -> Case:
    body = body_bytes(supabase_samples.insert())
    return Case(
        "supabase",
        [Request(body, {SECRET_HEADER: keys.supabase})],
        [
            ("forged", Request(body, {SECRET_HEADER: keys.supabase + "x"}), 403),
            ("missing", Request(body, {"Authorization": f"Bearer {keys.supabase}"}), 401),
        ],
        [Expected(f"supabase://{supabase_samples.BUCKET}/{supabase_samples.NAME}", "created")],
        list(parse_supabase(json.loads(body), "http:supabase").events),
    )


def b2_case(keys: Secrets) -> Case:
    event = b2_event()
    body = body_bytes(b2_body(event))
    return Case(
        "b2",
        [Request(body, {B2_SIGNATURE_HEADER: b2_signature(body, keys.b2)})],
        [
            ("forged", Request(body, {B2_SIGNATURE_HEADER: b2_signature(body, new_key())}), 403),
            ("missing", Request(body), 401),
        ],
        [
            Expected(
                f"b2://{event['bucketName']}/{event['objectName']}",
                "created",
                f"b2-{event['eventId']}",
            )
        ],
    )


def box_case(keys: Secrets) -> Case:
    event = box_event()
    body = body_bytes(event)
    now = _now()
    fresh, stale = _iso(now), _iso(now - 20 * 60)
    return Case(
        "box",
        [Request(body, box_headers(body, fresh, keys.box_primary, None))],
        [
            ("forged", Request(body, box_headers(body, fresh, new_key(), new_key())), 403),
            ("missing", Request(body, {"BOX-DELIVERY-TIMESTAMP": fresh}), 401),
            ("replayed", Request(body, box_headers(body, stale, keys.box_primary, None)), 403),
        ],
        [Expected(f"box://files/{event['source']['id']}", "created", f"box-{event['id']}")],
    )


def cloudinary_case(keys: Secrets) -> Case:
    body = body_bytes(cloudinary_upload())
    now = int(_now())

    def signed(timestamp: int, secret: str) -> dict[str, str]:
        stamp = str(timestamp)
        return {
            "X-Cld-Timestamp": stamp,
            "X-Cld-Signature": cloudinary_signature(body, stamp, secret),
        }

    return Case(
        "cloudinary",
        [Request(body, signed(now, keys.cloudinary))],
        [
            ("forged", Request(body, signed(now, new_key())), 403),
            ("missing", Request(body, {"X-Cld-Timestamp": str(now)}), 401),
            ("replayed", Request(body, signed(now - 3 * 3600, keys.cloudinary)), 403),
        ],
        [Expected(f"cloudinary://{CLOUD_NAME}/image/upload/products/red shoes+laces", "created")],
        list(parse_cloudinary(json.loads(body), "http:cloudinary", cloud_name=CLOUD_NAME).events),
    )


def appwrite_case(keys: Secrets) -> Case:
    document = appwrite_file()
    body = body_bytes(document)
    events = appwrite_events(document["bucketId"], document["$id"], "create")

    def signed(url: str, key: str) -> dict[str, str]:
        return {
            APPWRITE_EVENTS_HEADER: events,
            APPWRITE_SIGNATURE_HEADER: appwrite_signature(url, body, key),
        }

    local_url = "http://127.0.0.1:8080/appwrite"
    return Case(
        "appwrite",
        [Request(body, signed(APPWRITE_URL, keys.appwrite))],
        [
            ("forged", Request(body, signed(APPWRITE_URL, new_key())), 403),
            ("another URL", Request(body, signed(local_url, keys.appwrite)), 403),
            ("missing", Request(body, {APPWRITE_EVENTS_HEADER: events}), 401),
        ],
        [Expected(f"appwrite://{document['bucketId']}/{document['$id']}", "created")],
        list(parse_appwrite(json.loads(body), "http:appwrite", events=events).events),
    )


CASES = {
    "gcs": gcs_case,
    "azure": azure_case,
    "supabase": supabase_case,
    "b2": b2_case,
    "box": box_case,
    "cloudinary": cloudinary_case,
    "appwrite": appwrite_case,
}


@pytest.mark.parametrize("provider", WEBHOOK_ROUTES)
def test_a_provider_route_refuses_forgeries_and_publishes_signed_requests(
    provider: str, keys: Secrets, topics: Topicset, caplog: pytest.LogCaptureFixture
) -> None:
    assert tuple(CASES) == WEBHOOK_ROUTES  # every route has its case here, and only those
    case = CASES[provider](keys)

    async def body() -> None:
        async with http_bridge(topics, keys.settings()) as server:
            for what, request, status in case.refused:
                assert (await send(server, case.route, request))[0] == status, what
            assert server.bridge.stats.counts["auth_failures"] == len(case.refused)
            assert dict(server.bridge.auth_failures) == {case.route: len(case.refused)}
            published = 0
            for request in case.accepted:
                status, reply = await send(server, case.route, request)
                assert (status, reply["rejected"]) == (200, 0), reply
                published += reply["published"]
                # Read at once: the 200 came after Kafka's acknowledgement.
                assert len(await in_thread(topics.published)) == published
            assert published == len(case.expected)

    scenario(body)
    refusals = [r for r in caplog.records if r.getMessage().startswith("refused an unauth")]
    assert [(r.route, r.status) for r in refusals] == [  # type: ignore[attr-defined]
        (case.route, status) for _, _, status in case.refused
    ]
    found = topics.published()
    assert [(key.decode(), event.kind, event.origin) for _, key, event in found] == [
        (expected.identity, expected.kind, f"http:{case.route}") for expected in case.expected
    ]
    for (partition, key, event), expected in zip(found, case.expected, strict=True):
        assert key.decode() == event_identity(event.source, event.bucket, event.key)
        assert partition == java_partition(key, PARTITIONS)
        if expected.event_id is not None:
            assert event.id == expected.event_id
    if case.parsed:  # ids derived by the provider's rules: as its parser gives them
        assert [event for _, _, event in found] == case.parsed
    assert topics.rejected_records() == []


CREDENTIAL_HEADERS = {
    "gcs": ("Authorization",),
    "azure": (SECRET_HEADER,),
    "supabase": (SECRET_HEADER,),
    "b2": (B2_SIGNATURE_HEADER,),
    "box": ("BOX-SIGNATURE-PRIMARY", "BOX-DELIVERY-TIMESTAMP"),
    "cloudinary": ("X-Cld-Signature", "X-Cld-Timestamp"),
    "appwrite": (APPWRITE_SIGNATURE_HEADER,),
}


def spoiled(request: Request, name: str) -> list[tuple[str, bytes]]:
    """The request's headers as bytes, with bytes no UTF-8 text holds after header ``name``."""
    return [
        (key, value.encode() + (bridge_http.NOT_UTF8 if key.lower() == name.lower() else b""))
        for key, value in request.headers.items()
    ]


@pytest.mark.parametrize("provider", list(CASES))
def test_a_credential_that_is_not_utf8_is_refused_with_403(
    provider: str, keys: Secrets, topics: Topicset, caplog: pytest.LogCaptureFixture
) -> None:
    case = CASES[provider](keys)
    carriers = [
        (request, name)
        for name in CREDENTIAL_HEADERS[provider]
        for request in case.accepted
        if name.lower() in {key.lower() for key in request.headers}
    ]
    assert len(carriers) == len(CREDENTIAL_HEADERS[provider])

    async def body() -> None:
        async with http_bridge(topics, keys.settings()) as server:
            for request, name in carriers:
                target = f"{case.route}{request.query}"
                status = await server.post_raw(target, request.body, spoiled(request, name))
                assert status == 403, name
            refusals = len(carriers)
            if provider == "azure":  # the CloudEvents handshake reads the header too
                handshake = [
                    (SECRET_HEADER, bridge_http.NOT_UTF8),
                    (ORIGIN, b"eventgrid.azure.net"),
                ]
                assert await server.post_raw("azure", b"", handshake, method="OPTIONS") == 403
                refusals += 1
            assert dict(server.bridge.auth_failures) == {case.route: refusals}
            for request in case.accepted:  # had a refused one been written, it would show
                assert (await send(server, case.route, request))[0] == 200

    scenario(body)
    assert len(topics.published()) == len(case.expected)
    assert topics.rejected_records() == []
    assert not [record for record in caplog.records if record.exc_info], "a traceback was logged"


def test_azure_handshakes_are_answered_and_never_written(keys: Secrets, topics: Topicset) -> None:
    validation = azure_samples.validation_event("0f1e2d3c-handshake")
    raw = body_bytes([validation])
    origin = {"WebHook-Request-Origin": "eventgrid.azure.net"}

    async def options(server: Running, query: str, headers: dict[str, str]) -> Any:
        async with server.session.options(f"/azure{query}", headers=headers) as response:
            await response.read()
            return response.status, response.headers

    async def body() -> None:
        async with http_bridge(topics, keys.settings()) as server:
            # Event Grid schema: the validation event POSTed to the configured URL.
            assert await server.post(f"azure?code={keys.azure}", raw) == (
                200,
                {"validationResponse": "0f1e2d3c-handshake"},
            )
            assert (await server.post("azure", raw))[0] == 401
            assert (await server.post("azure?code=wrong", raw))[0] == 403
            # CloudEvents: OPTIONS with WebHook-Request-Origin.
            status, headers = await options(server, f"?code={keys.azure}", origin)
            assert status == 200
            assert headers["WebHook-Allowed-Origin"] == "eventgrid.azure.net"
            assert headers["WebHook-Allowed-Rate"] == "*"
            status, _ = await options(server, "", {**origin, SECRET_HEADER: keys.azure})
            assert status == 200
            assert (await options(server, "", origin))[0] == 401
            assert (await options(server, "", {**origin, SECRET_HEADER: "wrong"}))[0] == 403
            assert (await options(server, f"?code={keys.azure}", {}))[0] == 400
            counts = server.bridge.stats.counts
            assert (counts["handshakes"], counts["auth_failures"]) == (3, 4)
            assert server.bridge.tally.as_dict()["ignored"] == 1

    scenario(body)
    assert topics.published() == []
    assert topics.rejected_records() == []


def test_bad_input_is_rejected_by_the_providers_parser(keys: Secrets, topics: Topicset) -> None:
    malformed = b'{"events": [{"eventType": '
    s3_shaped = bridge_http.put("not-a-box-event.txt")

    async def body() -> None:
        async with http_bridge(topics, keys.settings()) as server:
            signed = {B2_SIGNATURE_HEADER: b2_signature(malformed, keys.b2)}
            assert await server.post("b2", malformed, signed) == (
                200,
                {"published": 0, "filtered": 0, "ignored": 0, "rejected": 1},
            )
            # No shape recognition: an S3 notification sent to /box is not Box's.
            now = _iso(_now())
            box = box_headers(s3_shaped, now, None, keys.box_secondary)  # the secondary key
            assert (await server.post("box", s3_shaped, box))[0] == 200

    scenario(body)
    letters = {letter.origin: letter for letter in topics.rejected_records()}
    assert set(letters) == {"http:b2", "http:box"}
    assert (letters["http:b2"].raw, letters["http:b2"].reason) == (malformed, "malformed_json")
    assert letters["http:box"].raw == s3_shaped
    assert letters["http:box"].reason != "malformed_json"
    assert topics.published() == []


def test_unconfigured_provider_routes_are_not_served(topics: Topicset) -> None:
    async def body() -> None:
        async with http_bridge(topics, HttpSettings()) as server:
            for route in WEBHOOK_ROUTES:
                assert (await server.post(route, b"{}"))[0] == 404, route
            async with server.session.options("/azure") as response:
                assert response.status == 404

    scenario(body)
    assert topics.published() == []


def test_kafka_down_answers_503(keys: Secrets, topics: Topicset) -> None:
    raw = body_bytes(supabase_samples.insert())

    async def body() -> None:
        async with http_bridge(
            topics, keys.settings(), bootstrap="127.0.0.1:1", delivery_timeout_ms=1500
        ) as server:
            status, _ = await server.post("supabase", raw, {SECRET_HEADER: keys.supabase})
            assert status == 503
            assert server.bridge.stats.counts["publish_failures"] == 1

    scenario(body)


# ---- the command ---------------------------------------------------------------------------------


def test_the_command_serves_the_provider_routes(
    keys: Secrets, topics: Topicset, tmp_path: Path
) -> None:
    jwks = tmp_path / "google-jwks.json"
    jwks.write_text(keys.jwks())
    now = time.time()
    token = sign(keys.google, claims(aud=GCS_AUDIENCE, iat=now - 60, exp=now + 3540))
    gcs_body = body_bytes(gcs_samples.push_envelope(gcs_samples.notification()))
    cld_body = body_bytes(cloudinary_upload())
    stamp = str(int(now))
    cld_headers = {
        "X-Cld-Timestamp": stamp,
        "X-Cld-Signature": cloudinary_signature(cld_body, stamp, keys.cloudinary, "sha256"),
    }
    sha1_headers = {
        **cld_headers,
        "X-Cld-Signature": cloudinary_signature(cld_body, stamp, keys.cloudinary, "sha1"),
    }
    with command(
        "--events-topic",
        topics.events,
        "--rejected-topic",
        topics.rejected,
        "--gcs-audience",
        GCS_AUDIENCE,
        "--gcs-jwks-file",
        str(jwks),
        "--cloudinary-api-secret",
        keys.cloudinary,
        "--cloudinary-cloud-name",
        CLOUD_NAME,
        "--cloudinary-signature-algorithm",
        "sha256",
        bootstrap=topics.bootstrap,
    ) as process:
        address = process.address()
        gcs_auth = {"Authorization": f"Bearer {token}"}
        assert asyncio.run(post_to(f"{address}/gcs", gcs_body, gcs_auth)) == 200
        assert asyncio.run(post_to(f"{address}/gcs", gcs_body)) == 401
        assert asyncio.run(post_to(f"{address}/cloudinary", cld_body, cld_headers)) == 200
        assert asyncio.run(post_to(f"{address}/cloudinary", cld_body, sha1_headers)) == 403
        assert asyncio.run(post_to(f"{address}/b2", cld_body)) == 404
        status, summary, _ = process.stop()
    stderr = "".join(process.stderr)
    assert status == 0, stderr
    assert "routes: /s3, /gcs, /cloudinary" in stderr
    assert (summary["published"], summary["auth_failures"]) == (2, 2)
    assert sorted(event.source for _, _, event in topics.published()) == ["cloudinary", "gcs"]
