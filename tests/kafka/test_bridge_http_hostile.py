"""`seqgate bridge http` under hostile and mixed input, against the real broker.

Every answer is checked against what reached Kafka, request by request: each
request carries unique keys (events) or unique bytes (rejected records), the topics
are read back with a ``read_committed`` consumer, and 200 must mean that all of
the request's records are there, anything else that none is. The bridge's
counters must equal what the topics hold.

An event that cannot be encoded (an integer above the Avro ``long`` range) is
made by wrapping the normalizer: whatever validation the parsers add, the
publisher must stay robust to a record it cannot write.
"""

from __future__ import annotations

import asyncio
import dataclasses
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic
from seqgate_devtools.samples import s3_notification, s3_record, to_text

import seqgate.connectors.sources.http_server as http_source
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.publish.rejections import MAX_RAW_BYTES
from seqgate.connectors.sources.http_settings import HttpSettings
from seqgate.schemas.records import ObjectEvent
from tests.support import http_bridge as bridge_http
from tests.support.http_bridge import Running, Topicset, http_bridge, put, scenario

pytestmark = pytest.mark.kafka

topics = bridge_http.topics  # the fixture: fresh events and rejected topics per test

UNENCODABLE = 2**64  # above Avro's long: OBJECT_EVENT.encode refuses it
POISON_PREFIX = "poison/"


def poison(monkeypatch: pytest.MonkeyPatch) -> None:
    """Events whose key starts with ``poison/`` get a size Avro cannot hold."""
    real = http_source.normalize

    def normalize(raw: bytes, origin: str, *args: Any) -> ParseResult:
        result = real(raw, origin, *args)
        return ParseResult(tuple(_poisoned(item) for item in result.items))

    monkeypatch.setattr(http_source, "normalize", normalize)


def _poisoned(item: Any) -> Any:
    if isinstance(item, ObjectEvent) and item.key.startswith(POISON_PREFIX):
        return dataclasses.replace(item, size=UNENCODABLE)
    return item


def two_records(good_key: str, bad_key: str) -> bytes:
    return to_text(
        s3_notification(
            s3_record(key=good_key, sequencer="a1"), s3_record(key=bad_key, sequencer="a2")
        )
    ).encode()


async def until(condition: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.005)


async def in_one_group(
    server: Running, requests: list[tuple[str, bytes]]
) -> list[tuple[int, dict[str, Any]]]:
    """POST ``requests`` (route, body) so that they form one group: submitted together,
    served by one flush. The publishing thread is held meanwhile, behind an opener
    request (its own group, answered 200); the answers of ``requests``, in order."""
    group = server.bridge.publisher
    gate = threading.Event()
    group._executor.submit(gate.wait)
    try:
        opener = asyncio.create_task(server.post("s3", put("opener.txt")))
        await until(lambda: group._drainer is not None and not group._pending, "the opener")
        sent = [asyncio.create_task(server.post(route, body)) for route, body in requests]
        await until(lambda: len(group._pending) == len(requests), "the group to form")
    finally:
        gate.set()
    assert (await opener)[0] == 200
    return list(await asyncio.gather(*sent))


def test_an_unencodable_event_fails_no_other_request_of_its_group(
    topics: Topicset, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    poison(monkeypatch)
    poisoned = two_records("mixed/ok.txt", f"{POISON_PREFIX}bad.txt")
    others = 38

    async def body() -> None:
        async with http_bridge(topics, HttpSettings()) as server:
            requests = [("s3", put(f"group/{n}.txt", f"{n + 1:x}")) for n in range(others)]
            *answers, bad = await in_one_group(server, [*requests, ("s3", poisoned)])
            assert [status for status, _ in answers] == [200] * others
            assert bad == (200, {"published": 1, "filtered": 0, "ignored": 0, "rejected": 1})
            summary = server.bridge.summary()
            assert (summary["published"], summary["rejected"]) == (others + 2, 1)
            assert summary["publish_failures"] == 0

    scenario(body)
    keys = sorted(event.key for _, _, event in topics.published())
    assert keys == sorted(
        ["opener.txt", "mixed/ok.txt", *(f"group/{n}.txt" for n in range(others))]
    )
    [letter] = topics.rejected_records()
    assert (letter.raw, letter.reason, letter.record_index) == (poisoned, "invalid_field", 1)
    assert "size" in letter.message
    assert not [record for record in caplog.records if record.exc_info], "a traceback was logged"


# ---- a hostile mix -------------------------------------------------------------------------------

TOKEN = "hostile-s3cr3t"
MAX_BODY = 1_200_000  # above the producer's message.max.bytes (1,000,000): "too large to copy"


@dataclass(frozen=True)
class Sent:
    """One request of the mix, and what reached Kafka must show for it if it was accepted."""

    kind: str
    body: bytes
    headers: list[tuple[str, bytes]]
    status: int  # the answer it must get
    keys: tuple[str, ...] = ()  # the keys of its events
    rejection: str | None = None  # the reason of its rejected record (raw: its body)


def bearer(token: bytes) -> list[tuple[str, bytes]]:
    return [("Authorization", b"Bearer " + token)]


def hostile_mix() -> list[Sent]:
    good = bearer(TOKEN.encode())
    mix: list[Sent] = []
    for n in range(100):
        mix.append(
            Sent("valid", put(f"valid/{n}.txt", f"{n + 1:x}"), good, 200, (f"valid/{n}.txt",))
        )
    for n in range(10):
        keys = (f"pair/{n}/a.txt", f"pair/{n}/b.txt")
        mix.append(Sent("pair", two_records(*keys), good, 200, keys))
    for n in range(30):
        body = b'{"Records": [{"malformed": %d' % n
        mix.append(Sent("malformed", body, good, 200, rejection="malformed_json"))
    for n in range(10):
        ok, bad = f"mixed/{n}.txt", f"{POISON_PREFIX}{n}.txt"
        mix.append(Sent("unencodable", two_records(ok, bad), good, 200, (ok,), "invalid_field"))
    for n in range(20):
        mix.append(Sent("wrong token", put(f"wrong/{n}.txt"), bearer(b"nope"), 403))
    for n in range(10):
        mix.append(Sent("no token", put(f"missing/{n}.txt"), [], 401))
    for n in range(10):
        spoiled = bearer(TOKEN.encode() + b"\xff\xfe")
        mix.append(Sent("not UTF-8 token", put(f"utf8/{n}.txt"), spoiled, 403))
    for n in range(5):
        mix.append(Sent("oversized", put(f"big/{n}.txt") + b" " * MAX_BODY, good, 413))
    for n in range(5):
        # Malformed and under the body limit, but larger than Kafka takes in one record: its
        # rejected record keeps the first MAX_RAW_BYTES (before: refused, 503 forever).
        body = b"[%d," % n + b" " * 1_050_000
        mix.append(Sent("too large to copy", body, good, 200, rejection="malformed_json"))
    return mix


def test_every_answer_of_a_hostile_mix_matches_what_reached_kafka(
    topics: Topicset, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    poison(monkeypatch)
    mix = hostile_mix()
    assert len(mix) == 200
    order = list(range(len(mix)))
    random.Random(7).shuffle(order)  # kinds interleaved, so groups mix them
    statuses: dict[int, int] = {}
    summary: dict[str, int] = {}

    async def body() -> None:
        settings = HttpSettings(s3_token=TOKEN, max_body_bytes=MAX_BODY)
        async with http_bridge(topics, settings) as server:

            async def send(index: int) -> None:
                sent = mix[index]
                statuses[index] = await server.post_raw("s3", sent.body, sent.headers)

            await asyncio.gather(*(send(index) for index in order))
            summary.update(server.bridge.summary())

    scenario(body)
    events = Counter(event.key for _, _, event in topics.published())
    letters = Counter((letter.raw, letter.reason) for letter in topics.rejected_records())
    wrong = Counter(
        (sent.kind, statuses[index])
        for index, sent in enumerate(mix)
        if statuses[index] != sent.status
    )
    assert not wrong, f"(kind, answer) of the wrongly answered requests: {wrong}"
    for sent in mix:
        mine = [events[key] for key in sent.keys]
        kept = sent.body[:MAX_RAW_BYTES]  # what a rejected record keeps of it
        letter = letters[(kept, sent.rejection)] if sent.rejection else None
        if sent.status == 200:  # every record of it, once
            assert mine == [1] * len(sent.keys), sent.kind
            assert letter == (1 if sent.rejection else None), sent.kind
        else:  # nothing of it
            assert not any(mine) and not letter, sent.kind
            assert not any(raw == kept for raw, _ in letters), sent.kind
    expected_events = [key for sent in mix if sent.status == 200 for key in sent.keys]
    expected_letters = [sent for sent in mix if sent.status == 200 and sent.rejection]
    assert sorted(events.elements()) == sorted(expected_events)  # nothing else either
    assert sum(letters.values()) == len(expected_letters)
    statuses_of = Counter(statuses.values())
    assert summary["published"] == sum(events.values())
    assert summary["rejected"] == sum(letters.values())
    assert summary["messages"] == statuses_of[200]
    assert summary["auth_failures"] == statuses_of[401] + statuses_of[403]
    assert summary["too_large"] == statuses_of[413]
    assert summary["publish_failures"] == statuses_of[503]
    truncated = [letter for letter in topics.rejected_records() if len(letter.raw) == MAX_RAW_BYTES]
    assert len(truncated) == 5
    assert all("of the 1050003 bytes received; SHA-256" in t.message for t in truncated)
    assert not [record for record in caplog.records if record.exc_info], "a traceback was logged"


def test_a_request_kafka_refuses_part_of_is_answered_503_and_no_other(
    topics: Topicset, unique_name: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The broker itself refuses one request's rejected record (above the rejected topic's
    max.message.bytes): that request alone is answered 503 - though its event was written,
    a partial failure - and the requests it shared a flush with are answered 200."""
    small = Topicset(topics.bootstrap, topics.events, f"{unique_name}.small-rejected")
    admin = AdminClient({"bootstrap.servers": topics.bootstrap})
    limit = {"max.message.bytes": "20000"}
    for future in admin.create_topics([NewTopic(small.rejected, 1, 1, config=limit)]).values():
        future.result(30)
    refused = (
        to_text(
            s3_notification(
                s3_record(key="partial/ok.txt", sequencer="b1"),
                s3_record(key="partial/bad.txt", sequencer="b2", event_version="3.0"),
            )
        ).encode()
        + b" " * 30_000
    )
    others = 20

    async def body() -> None:
        async with http_bridge(small, HttpSettings()) as server:
            requests = [("s3", put(f"beside/{n}.txt", f"{n + 1:x}")) for n in range(others)]
            *answers, partial = await in_one_group(server, [*requests, ("s3", refused)])
            assert [status for status, _ in answers] == [200] * others
            assert partial[0] == 503
            summary = server.bridge.summary()
            assert (summary["published"], summary["rejected"]) == (others + 1, 0)
            assert summary["publish_failures"] == 1

    scenario(body)
    keys = sorted(event.key for _, _, event in small.published())
    # Written although answered 503: the sender's retry delivers it again (deduplicated).
    expected = ["opener.txt", "partial/ok.txt", *(f"beside/{n}.txt" for n in range(others))]
    assert keys == sorted(expected)
    assert small.rejected_records() == []
    assert not [record for record in caplog.records if record.exc_info], "a traceback was logged"
