"""`seqgate bridge http` against the real broker.

Most tests run the server in this process (``seqgate.connectors.sources.http_server.serve`` on a
free
loopback port, a real ``EventPublisher``) so that the SNS certificate fetcher and the
subscription confirmation can be faked; a few run the real command as a subprocess
(its address read from the ``listening on`` line) for the CLI, Kafka outage and SIGTERM.

Checks from outside: the events in the events topic (keyed by identity, origin
``http:<route>``), the rejected records with the exact bodies, and — read right after
the 200, without waiting — that a reply never precedes Kafka's acknowledgement.
Refused requests (authentication) are followed by one accepted request, so that an
empty topic apart from it proves that nothing of theirs was written.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hmac
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from seqgate_devtools.samples import eventbridge_event, s3_notification, s3_record, to_text

from seqgate.connectors.auth.sns_signature import SnsVerifier
from seqgate.connectors.publish.filters import EventFilter
from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.schemas.codec import OUTBOX_RECORD
from seqgate.streams.tools.verify import verify
from tests.support.http_bridge import (
    EB_AUTH,
    EB_HEADER,
    MINIO_AUTH,
    MINIO_TOKEN,
    NOT_UTF8,
    PARTITIONS,
    Topicset,
    command,
    http_bridge,
    in_thread,
    post_to,
    put,
    scenario,
)
from tests.support.http_bridge import topics as topics
from tests.support.kafka_helpers import (
    caught_up,
    read_all,
    verify_target,
    wait_for,
    worker_config,
    worker_thread,
)
from tests.support.partitioning import java_partition
from tests.support.paths import REPO
from tests.support.sns_certificates import (
    SUBSCRIBE_URL,
    TOPIC,
    SnsSigner,
    handshake,
    new_signer,
    notification,
)

pytestmark = pytest.mark.kafka

MALFORMED = b'{"Records": ['


# ---- the server in this process ------------------------------------------------------------------


@dataclass
class FakeConfirmations:
    urls: list[str] = field(default_factory=list)

    def __call__(self, url: str) -> None:
        self.urls.append(url)


def all_routes(signer: SnsSigner, confirmations: FakeConfirmations, **extra: Any) -> HttpSettings:
    return HttpSettings(
        minio_token=MINIO_TOKEN,
        eventbridge_header=EB_HEADER,
        sns=SnsVerifier(topic_arns=frozenset({TOPIC}), fetch_certificate=signer.fetch),
        confirm_subscription=confirmations,
        **extra,
    )


# ---- every route end to end ----------------------------------------------------------------------


def test_every_route_publishes_and_answers_only_after_kafka(topics: Topicset) -> None:
    signer = new_signer()
    confirmations = FakeConfirmations()
    now = _now()
    minio_body = (REPO / "tests/fixtures/minio/created_post.json").read_bytes()  # MinIO's own
    sns_body = to_text(
        signer.sign(notification(put("via%2Fsns.txt", "b2").decode(), when=now), "1")
    ).encode()
    eventbridge_body = to_text(eventbridge_event(key="from eventbridge.txt")).encode()

    async def body() -> None:
        async with http_bridge(topics, all_routes(signer, confirmations)) as server:
            expected = [
                ("s3", put("native%2Fa+b.txt", "a1"), {}, "native/a b.txt"),
                ("minio", minio_body, MINIO_AUTH, "2026/summer trip/beach+sunset.jpg"),
                ("sns", sns_body, {}, "via/sns.txt"),
                ("eventbridge", eventbridge_body, EB_AUTH, "from eventbridge.txt"),
            ]
            keys_so_far: list[str] = []
            for route, raw, headers, key in expected:
                status, reply = await server.post(route, raw, headers)
                assert (status, reply) == (
                    200,
                    {"published": 1, "filtered": 0, "ignored": 0, "rejected": 0},
                ), route
                keys_so_far.append(key)
                # Read at once, no waiting: the 200 came after Kafka's acknowledgement.
                found = await in_thread(topics.published)
                assert sorted(event.key for _, _, event in found) == sorted(keys_so_far)
                assert {event.origin for _, _, event in found if event.key == key} == {
                    f"http:{route}"
                }
            assert server.bridge.summary()["published"] == 4

    scenario(body)
    events = topics.published()
    sources = {event.key: event.source for _, _, event in events}
    assert sources["2026/summer trip/beach+sunset.jpg"] == "minio"
    assert sources["native/a b.txt"] == "s3"
    for partition, key, event in events:
        assert key.decode().endswith(f"://{event.bucket}/{event.key}")
        assert partition == java_partition(key, PARTITIONS)
    assert topics.rejected_records() == []


def test_bad_input_is_rejected_with_its_exact_bytes(topics: Topicset) -> None:
    signer = new_signer()
    multi = to_text(
        s3_notification(
            s3_record(key="multi-ok.txt", sequencer="d4"),
            s3_record(key="multi-bad.txt", sequencer="d5", event_version="3.0"),
        )
    ).encode()
    not_utf8 = b'{"Records": "\xff\xfe"}'
    signed_garbage = to_text(signer.sign(notification("this is not JSON", when=_now()))).encode()

    async def body() -> None:
        async with http_bridge(topics, all_routes(signer, FakeConfirmations())) as server:
            assert await server.post("s3", MALFORMED) == (
                200,
                {"published": 0, "filtered": 0, "ignored": 0, "rejected": 1},
            )
            assert (await server.post("minio", not_utf8, MINIO_AUTH))[0] == 200
            assert (await server.post("eventbridge", b"[1, 2]", EB_AUTH))[0] == 200
            assert (await server.post("sns", signed_garbage))[0] == 200
            status, reply = await server.post("s3", multi)
            assert (status, reply["published"], reply["rejected"]) == (200, 1, 1)

    scenario(body)
    letters = {(letter.origin, letter.raw): letter for letter in topics.rejected_records()}
    assert set(letters) == {
        ("http:s3", MALFORMED),
        ("http:minio", not_utf8),
        ("http:eventbridge", b"[1, 2]"),
        ("http:sns", signed_garbage),
        ("http:s3", multi),
    }
    assert letters[("http:s3", MALFORMED)].reason == "malformed_json"
    assert letters[("http:minio", not_utf8)].reason == "malformed_json"
    assert letters[("http:eventbridge", b"[1, 2]")].reason == "not_a_notification"
    assert letters[("http:sns", signed_garbage)].reason == "malformed_json"
    assert letters[("http:s3", multi)].record_index == 1
    assert letters[("http:s3", multi)].reason == "unsupported_schema_version"
    assert [event.key for _, _, event in topics.published()] == ["multi-ok.txt"]


def test_filters_apply_and_are_counted(topics: Topicset) -> None:
    async def body() -> None:
        event_filter = EventFilter.build(exclude_prefixes=["generated/"])
        async with http_bridge(topics, HttpSettings(), event_filter) as server:
            assert await server.post("s3", put("generated%2Fout.csv")) == (
                200,
                {"published": 0, "filtered": 1, "ignored": 0, "rejected": 0},
            )
            assert (await server.post("s3", put("incoming%2Fin.csv")))[0] == 200
            assert server.bridge.tally.as_dict() == {
                "messages": 2,
                "published": 1,
                "filtered": 1,
                "ignored": 0,
                "rejected": 0,
            }

    scenario(body)
    assert [event.key for _, _, event in topics.published()] == ["incoming/in.csv"]


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


# ---- authentication ------------------------------------------------------------------------------


def test_minio_and_eventbridge_refuse_a_missing_or_wrong_secret(
    topics: Topicset, monkeypatch: pytest.MonkeyPatch
) -> None:
    compared: list[tuple[bytes, bytes]] = []
    real_compare = hmac.compare_digest

    def spy(a: Any, b: Any) -> bool:
        compared.append((a, b))
        return real_compare(a, b)

    monkeypatch.setattr(hmac, "compare_digest", spy)
    signer = new_signer()
    body_ok = put("ok.txt")

    async def body() -> None:
        settings = all_routes(signer, FakeConfirmations(), s3_token="s3-s3cr3t")
        async with http_bridge(topics, settings) as server:
            refused = [
                ("minio", {}, 401),
                ("minio", {"Authorization": "Basic bWluaW86eA=="}, 401),
                ("minio", {"Authorization": "Bearer wrong"}, 403),
                ("minio", {"Authorization": f"Bearer {MINIO_TOKEN}x"}, 403),
                ("eventbridge", {}, 401),
                ("eventbridge", {EB_HEADER[0]: "wrong"}, 403),
                ("eventbridge", {"Authorization": f"Bearer {EB_HEADER[1]}"}, 401),
                ("s3", {}, 401),
                ("s3", {"Authorization": "Bearer nope"}, 403),
            ]
            for route, headers, status in refused:
                assert (await server.post(route, body_ok, headers))[0] == status, (route, headers)
            assert server.bridge.stats.counts["auth_failures"] == len(refused)
            assert dict(server.bridge.auth_failures) == {"minio": 4, "eventbridge": 3, "s3": 2}
            # One accepted request: had a refused one been written, it would show now.
            ok = {"Authorization": "Bearer s3-s3cr3t"}
            assert (await server.post("s3", put("accepted.txt"), ok))[0] == 200

    scenario(body)
    assert [event.key for _, _, event in topics.published()] == ["accepted.txt"]
    assert topics.rejected_records() == []
    assert (b"wrong", b"eb-s3cr3t") in compared
    assert (f"{MINIO_TOKEN}x".encode(), MINIO_TOKEN.encode()) in compared


def test_a_credential_that_is_not_utf8_is_refused_with_403(
    topics: Topicset, caplog: pytest.LogCaptureFixture
) -> None:
    signer = new_signer()
    body_ok = put("ok.txt")
    bearer = b"Bearer " + NOT_UTF8
    refused = [
        ("s3", [("Authorization", bearer)]),
        ("s3", [("Authorization", b"Bearer s3-s3cr3t" + NOT_UTF8)]),
        ("minio", [("Authorization", bearer)]),
        ("minio", [("Authorization", NOT_UTF8 + b" " + MINIO_TOKEN.encode())]),
        ("eventbridge", [(EB_HEADER[0], NOT_UTF8)]),
        ("eventbridge", [(EB_HEADER[0], EB_HEADER[1].encode() + NOT_UTF8)]),
    ]

    async def body() -> None:
        settings = all_routes(signer, FakeConfirmations(), s3_token="s3-s3cr3t")
        async with http_bridge(topics, settings) as server:
            for route, headers in refused:
                assert await server.post_raw(route, body_ok, headers) == 403, (route, headers)
            assert server.bridge.stats.counts["auth_failures"] == len(refused)
            assert dict(server.bridge.auth_failures) == {"s3": 2, "minio": 2, "eventbridge": 2}
            ok = [("Authorization", b"Bearer s3-s3cr3t")]
            assert await server.post_raw("s3", put("accepted.txt"), ok) == 200

    scenario(body)
    assert [event.key for _, _, event in topics.published()] == ["accepted.txt"]
    assert topics.rejected_records() == []
    assert not [record for record in caplog.records if record.exc_info], "a traceback was logged"


def test_routes_without_a_secret_are_not_served(topics: Topicset) -> None:
    async def body() -> None:
        async with http_bridge(topics, HttpSettings()) as server:
            for route in ("minio", "eventbridge", "sns", "nowhere"):
                assert (await server.post(route, put("x.txt"), MINIO_AUTH))[0] == 404, route
            async with server.session.get("/s3") as response:
                assert response.status == 405

    scenario(body)
    assert topics.published() == []


def test_sns_signatures_topics_and_timestamps(topics: Topicset) -> None:
    signer = new_signer()
    forger = new_signer("forger")
    confirmations = FakeConfirmations()
    now = _now()
    good_v1 = signer.sign(notification(put("v1.txt").decode(), when=now), "1")
    good_v2 = signer.sign(notification(put("v2.txt").decode(), when=now), "2")
    tampered = {**good_v2, "Message": put("tampered.txt").decode()}
    forged = forger.sign(notification(put("forged.txt").decode(), when=now))
    evil_url = "https://sns.eu-west-1.amazonaws.com.evil.example/cert.pem"
    signer.served[evil_url] = signer.certificate
    outside = signer.sign(
        {**notification(put("outside.txt").decode(), when=now), "SigningCertURL": evil_url}
    )
    other_topic = "arn:aws:sns:eu-west-1:123456789012:not-ours"
    wrong_topic = signer.sign(notification(put("topic.txt").decode(), topic=other_topic, when=now))
    stale = signer.sign(
        notification(put("stale.txt").decode(), when=now - dt.timedelta(seconds=3700))
    )

    async def body() -> None:
        async with http_bridge(topics, all_routes(signer, confirmations)) as server:
            assert (await server.post("sns", to_text(good_v1).encode()))[0] == 200
            assert (await server.post("sns", to_text(good_v2).encode()))[0] == 200
            for document in (tampered, forged, outside, wrong_topic, stale):
                assert (await server.post("sns", to_text(document).encode()))[0] == 403
            assert (await server.post("sns", b"not json"))[0] == 403
            # Handshakes: a configured topic is confirmed, another refused.
            confirm = to_text(signer.sign(handshake(when=now))).encode()
            status, reply = await server.post("sns", confirm)
            assert (status, reply) == (200, {"status": "subscription_confirmed"})
            assert confirmations.urls == [SUBSCRIBE_URL]
            other = to_text(signer.sign(handshake(topic=other_topic, when=now))).encode()
            assert (await server.post("sns", other))[0] == 403
            assert confirmations.urls == [SUBSCRIBE_URL]
            unsubscribe = signer.sign(handshake("UnsubscribeConfirmation", when=now))
            assert (await server.post("sns", to_text(unsubscribe).encode()))[0] == 200
            assert server.bridge.stats.counts["auth_failures"] == 7
            assert server.bridge.stats.counts["subscriptions_confirmed"] == 1

    scenario(body)
    assert sorted(event.key for _, _, event in topics.published()) == ["v1.txt", "v2.txt"]
    assert topics.rejected_records() == []


def test_a_failed_subscription_confirmation_answers_503(topics: Topicset) -> None:
    signer = new_signer()

    def unreachable(url: str) -> None:
        raise OSError("connection refused")

    async def body() -> None:
        settings = HttpSettings(
            sns=all_routes(signer, FakeConfirmations()).sns, confirm_subscription=unreachable
        )
        async with http_bridge(topics, settings) as server:
            confirm = to_text(signer.sign(handshake(when=_now()))).encode()
            assert (await server.post("sns", confirm))[0] == 503
            assert server.bridge.stats.counts["confirm_failures"] == 1

    scenario(body)


# ---- limits --------------------------------------------------------------------------------------


def test_a_body_above_the_limit_is_refused_with_413(topics: Topicset) -> None:
    big = put("big.txt") + b" " * 2000

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(5):
            yield b" " * 1000

    async def body() -> None:
        async with http_bridge(topics, HttpSettings(max_body_bytes=1500)) as server:
            assert (await server.post("s3", big))[0] == 413
            # Without a Content-Length (chunked), the limit holds while reading.
            async with server.session.post("/s3", data=chunks()) as response:
                assert response.status == 413
            assert server.bridge.stats.counts["too_large"] == 2
            assert (await server.post("s3", put("small.txt")))[0] == 200

    scenario(body)
    assert [event.key for _, _, event in topics.published()] == ["small.txt"]
    assert topics.rejected_records() == []


def test_concurrent_requests_are_all_acknowledged(topics: Topicset) -> None:
    count = 60

    async def body() -> None:
        async with http_bridge(topics, HttpSettings()) as server:
            replies = await asyncio.gather(
                *(server.post("s3", put(f"c/{n}.txt", f"{n:x}")) for n in range(count))
            )
            assert [status for status, _ in replies] == [200] * count
            assert server.bridge.tally.published == count

    scenario(body)
    assert sorted(event.key for _, _, event in topics.published()) == sorted(
        f"c/{n}.txt" for n in range(count)
    )


def test_shutdown_answers_the_requests_in_flight(topics: Topicset) -> None:
    """Stop while a request waits for Kafka (unreachable: its flush takes 1.5 s): it is answered."""

    async def body() -> None:
        settings = HttpSettings()
        async with http_bridge(
            topics, settings, bootstrap="127.0.0.1:1", delivery_timeout_ms=1500
        ) as server:
            in_flight = asyncio.create_task(server.post("s3", put("late.txt")))
            deadline = time.monotonic() + 30
            while server.bridge.stats.counts["requests"] == 0:
                assert time.monotonic() < deadline, "the request never arrived"
                await asyncio.sleep(0.01)
            stopping = asyncio.create_task(server.stop())
            status, _ = await asyncio.wait_for(in_flight, 60)
            await asyncio.wait_for(stopping, 60)
            assert status == 503
            assert server.bridge.stats.counts["publish_failures"] == 1

    scenario(body)


# ---- the command ---------------------------------------------------------------------------------


def test_the_command_serves_until_sigterm(topics: Topicset) -> None:
    with command(
        "--events-topic",
        topics.events,
        "--rejected-topic",
        topics.rejected,
        "--minio-token",
        MINIO_TOKEN,
        bootstrap=topics.bootstrap,
    ) as process:
        address = process.address()
        assert address.startswith("http://127.0.0.1:")
        assert asyncio.run(post_to(f"{address}/s3", put("cli.txt"))) == 200
        assert asyncio.run(post_to(f"{address}/minio", put("x.txt"))) == 401
        assert asyncio.run(post_to(f"{address}/eventbridge", put("x.txt"))) == 404
        status, summary, seconds = process.stop()
    assert status == 0, "".join(process.stderr)
    assert seconds < 15
    assert summary["messages"] == 1
    assert summary["published"] == 1
    assert summary["auth_failures"] == 1
    assert "Traceback" not in "".join(process.stderr)
    assert [event.key for _, _, event in topics.published()] == ["cli.txt"]


def test_sigterm_while_idle_exits_0_promptly(kafka_bootstrap: str) -> None:
    with command(bootstrap=kafka_bootstrap) as process:
        process.address()
        status, summary, seconds = process.stop()
    assert status == 0, "".join(process.stderr)
    assert seconds < 10
    assert summary["messages"] == 0


@pytest.mark.kafka
def test_records_kafka_refuses_are_answered_503_and_acknowledge_nothing(
    kafka_bootstrap: str, unique_name: str
) -> None:
    # Kafka answers but has no such topics (auto-creation is off): every delivery fails,
    # as while the brokers are down (tests/kafka/test_bridge_outage.py bounces a real one).
    absent = ["--events-topic", f"{unique_name}.absent", "--rejected-topic", f"{unique_name}.gone"]
    with command("--delivery-timeout-ms", "1500", *absent, bootstrap=kafka_bootstrap) as process:
        address = process.address()
        assert asyncio.run(post_to(f"{address}/s3", put("lost.txt"))) == 503
        status, summary, _ = process.stop()
    assert status == 0, "".join(process.stderr)
    assert summary["messages"] == 0
    assert summary["published"] == 0
    assert summary["publish_failures"] == 1


@pytest.mark.parametrize(
    ("options", "s3_status"),
    [
        (("--allow-unauthenticated",), 200),
        (("--s3-token", "s3-s3cr3t"), 401),
        (("--no-s3", "--minio-token", MINIO_TOKEN), 404),
    ],
)
def test_a_public_address_starts_when_s3_is_authenticated_off_or_allowed_open(
    topics: Topicset, options: tuple[str, ...], s3_status: int
) -> None:
    with command(
        "--host",
        "0.0.0.0",
        "--events-topic",
        topics.events,
        "--rejected-topic",
        topics.rejected,
        *options,
        bootstrap=topics.bootstrap,
    ) as process:
        address = process.address()
        assert address.startswith("http://0.0.0.0:")
        local = address.replace("0.0.0.0", "127.0.0.1")
        assert asyncio.run(post_to(f"{local}/s3", put("public.txt"))) == s3_status
        status, _, _ = process.stop()
    assert status == 0, "".join(process.stderr)
    expected = ["public.txt"] if s3_status == 200 else []
    assert [event.key for _, _, event in topics.published()] == expected


def test_the_default_loopback_address_serves_an_open_s3_route(kafka_bootstrap: str) -> None:
    with command("--host", "localhost", bootstrap=kafka_bootstrap) as process:
        process.address()
        status, _, _ = process.stop()
    assert status == 0, "".join(process.stderr)


def test_http_notifications_reach_the_outbox_through_the_worker(
    topics: Topicset, tmp_path: Path
) -> None:
    with command(
        "--events-topic",
        topics.events,
        "--rejected-topic",
        topics.rejected,
        bootstrap=topics.bootstrap,
    ) as process:
        address = process.address()
        for sequencer in ("a1", "a1", "b2"):  # a redelivery, then a newer write
            assert asyncio.run(post_to(f"{address}/s3", put("doc.txt", sequencer))) == 200
        status, _, _ = process.stop()
    assert status == 0, "".join(process.stderr)
    config = worker_config(topics.bootstrap, topics.events, tmp_path)
    with worker_thread(config) as running:
        wait_for(caught_up(topics.bootstrap, config), 60, "the worker to catch up")
    assert not running.errors
    records = read_all(topics.bootstrap, config.outbox_topic)
    outbox = [OUTBOX_RECORD.decode(r.value or b"") for r in records]
    assert [(r.event.key, r.event.position) for r in outbox] == [
        ("doc.txt", "a1"),
        ("doc.txt", "b2"),
    ]
    assert verify(verify_target(config)).ok()
