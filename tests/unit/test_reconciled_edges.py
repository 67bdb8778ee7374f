"""The repairs of seqgate.schemas.reconciled field by field, and their ids as the module
documents them: a prefix and the first 32 hex digits of SHA-256 over the parts joined by
U+001F. An id must not change between versions: publishing the same drift again has to
find the id the worker already accepted."""

from __future__ import annotations

import hashlib

from seqgate.schemas.kinds import CREATED, REMOVED
from seqgate.schemas.listing import ListedObject
from seqgate.schemas.reconciled import (
    ABSENT_EVENT_NAME,
    PRESENT_EVENT_NAME,
    absent_event,
    absent_id,
    expectation,
    present_event,
    present_id,
)

IDENTITY = "s3://bucket/dir/key"


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def test_an_expectation_is_accepted_and_the_digest_of_the_event_id() -> None:
    assert expectation("s3-abc") == "accepted-" + _digest("s3-abc")
    assert expectation(None) is None


def test_an_absent_id_digests_the_identity_and_the_superseded_event() -> None:
    assert absent_id(IDENTITY, "s3-abc") == "reconcile-absent-" + _digest(IDENTITY, "s3-abc")


def test_a_present_id_digests_identity_version_etag_and_time_empty_when_absent() -> None:
    full = ListedObject("dir/key", "v1", "etag1", 1_700_000_000_123, 5)
    assert present_id(IDENTITY, full) == "reconcile-present-" + _digest(
        IDENTITY, "v1", "etag1", "1700000000123"
    )
    bare = ListedObject("dir/key", None, None, 7, None)
    assert present_id(IDENTITY, bare) == "reconcile-present-" + _digest(IDENTITY, "", "", "7")


def test_a_present_event_carries_the_listing_and_names_the_accepted_event() -> None:
    listed = ListedObject("dir/key", "v1", "etag1", 1_700_000_000_123, 5)
    event = present_event("s3", "bucket", listed, "s3-abc")
    assert (event.id, event.source, event.bucket, event.key, event.kind) == (
        present_id(IDENTITY, listed),
        "s3",
        "bucket",
        "dir/key",
        CREATED,
    )
    assert (event.event_name, event.position, event.version_id, event.size, event.etag) == (
        PRESENT_EVENT_NAME,
        expectation("s3-abc"),
        "v1",
        5,
        "etag1",
    )
    assert (event.event_time, event.origin) == ("2023-11-14T22:13:20.123Z", "reconcile:bucket")


def test_an_absent_event_supersedes_the_accepted_event_and_carries_nothing_else() -> None:
    event = absent_event("s3", "bucket", "dir/key", "s3-abc")
    assert (event.id, event.source, event.bucket, event.key, event.kind) == (
        absent_id(IDENTITY, "s3-abc"),
        "s3",
        "bucket",
        "dir/key",
        REMOVED,
    )
    assert (event.event_name, event.position, event.origin) == (
        ABSENT_EVENT_NAME,
        expectation("s3-abc"),
        "reconcile:bucket",
    )
    assert (event.version_id, event.size, event.etag, event.event_time) == (None,) * 4
