"""`list_s3` against moto's S3 server: keys, prefixes, pages, versions and the errors."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest

from seqgate.connectors.errors import ListingError
from seqgate.connectors.listing.s3 import list_s3, listing_client
from seqgate.schemas.listing import ListedObject
from tests.support.moto_helpers import AWS_ENV, aws_client, moto_server

HAZARD_KEYS = [
    "June report+final.csv",
    "literal%2Bplus.txt",
    "spaced key .txt",
    "unicode/Zürich-日本.txt",
    "folder/",
    "a//b",
    "tab\there",
]


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


@pytest.fixture
def s3(endpoint: str) -> Any:
    return aws_client("s3", endpoint)


@pytest.fixture(autouse=True)
def _credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in AWS_ENV.items():
        monkeypatch.setenv(name, value)


def _bucket(s3: Any, name: str, *, versioned: bool = False) -> str:
    s3.create_bucket(Bucket=name)
    if versioned:
        s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": "Enabled"})
    return name


def _listed(bucket: str, endpoint: str, **options: Any) -> list[ListedObject]:
    return list(list_s3(bucket, endpoint_url=endpoint, region="us-east-1", **options))


def test_hazard_keys_come_back_decoded_exactly(s3: Any, endpoint: str) -> None:
    bucket = _bucket(s3, "hazards")
    for key in HAZARD_KEYS:
        s3.put_object(Bucket=bucket, Key=key, Body=key.encode())
    listed = _listed(bucket, endpoint)
    assert [o.key for o in listed] == sorted(HAZARD_KEYS)
    assert {o.version_id for o in listed} == {None}


def test_fields_are_what_head_object_says(s3: Any, endpoint: str) -> None:
    bucket = _bucket(s3, "fields")
    s3.put_object(Bucket=bucket, Key="one+two", Body=b"x" * 1234)
    (listed,) = _listed(bucket, endpoint)
    head = s3.head_object(Bucket=bucket, Key="one+two")
    assert listed.etag == head["ETag"].strip('"')
    assert not listed.etag.startswith('"')
    assert listed.size == head["ContentLength"] == 1234
    assert listed.last_modified_ms == int(head["LastModified"].timestamp() * 1000)


def test_a_prefix_lists_only_its_keys(s3: Any, endpoint: str) -> None:
    bucket = _bucket(s3, "prefixed")
    for key in ["in/a", "in/b c", "in+/d", "inside", "out/a"]:
        s3.put_object(Bucket=bucket, Key=key, Body=b"")
    assert [o.key for o in _listed(bucket, endpoint, prefix="in/")] == ["in/a", "in/b c"]
    assert [o.key for o in _listed(bucket, endpoint, prefix="in+")] == ["in+/d"]


@pytest.mark.parametrize("versioned", [False, True])
def test_small_pages_list_every_key_once(s3: Any, endpoint: str, versioned: bool) -> None:
    bucket = _bucket(s3, f"paged-{str(versioned).lower()}", versioned=versioned)
    keys = [f"k{i:02d}" for i in range(7)]
    for key in keys:
        s3.put_object(Bucket=bucket, Key=key, Body=b"")
    client = _counting_client(endpoint)
    listed = list(list_s3(bucket, page_size=2, client=client.client))
    assert [o.key for o in listed] == keys
    assert client.list_calls == 4


class _CountingClient:
    """A real client whose listing requests are counted (a botocore event hook)."""

    def __init__(self, endpoint: str) -> None:
        self.client = listing_client(endpoint, "us-east-1")
        self.list_calls = 0
        self.client.meta.events.register("before-call.s3.ListObjectsV2", self._count)
        self.client.meta.events.register("before-call.s3.ListObjectVersions", self._count)

    def _count(self, **_: Any) -> None:
        self.list_calls += 1


def _counting_client(endpoint: str) -> _CountingClient:
    return _CountingClient(endpoint)


def test_a_versioned_bucket_lists_each_keys_latest_version(s3: Any, endpoint: str) -> None:
    bucket = _bucket(s3, "versioned", versioned=True)
    s3.put_object(Bucket=bucket, Key="kept", Body=b"first")
    latest = s3.put_object(Bucket=bucket, Key="kept", Body=b"second, longer")
    s3.put_object(Bucket=bucket, Key="deleted", Body=b"gone")
    s3.delete_object(Bucket=bucket, Key="deleted")
    older = s3.put_object(Bucket=bucket, Key="rolled back", Body=b"older")
    newer = s3.put_object(Bucket=bucket, Key="rolled back", Body=b"newer!")
    s3.delete_object(Bucket=bucket, Key="rolled back", VersionId=newer["VersionId"])
    listed = {o.key: o for o in _listed(bucket, endpoint, page_size=2)}
    assert sorted(listed) == ["kept", "rolled back"]
    assert listed["kept"].version_id == latest["VersionId"]
    assert listed["kept"].etag == latest["ETag"].strip('"')
    assert listed["kept"].size == len(b"second, longer")
    assert listed["rolled back"].version_id == older["VersionId"]
    assert listed["rolled back"].size == len(b"older")


def test_a_suspended_bucket_still_lists_versions(s3: Any, endpoint: str) -> None:
    bucket = _bucket(s3, "suspended", versioned=True)
    before = s3.put_object(Bucket=bucket, Key="before", Body=b"v1")
    s3.put_object(Bucket=bucket, Key="deleted", Body=b"v1")
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Suspended"})
    s3.put_object(Bucket=bucket, Key="since", Body=b"v2")
    s3.delete_object(Bucket=bucket, Key="deleted")
    listed = _listed(bucket, endpoint)
    assert [(o.key, o.version_id) for o in listed] == [
        ("before", before["VersionId"]),
        ("since", None),
    ]


def test_a_refused_get_bucket_versioning_falls_back_to_list_objects_v2(
    s3: Any, endpoint: str, caplog: pytest.LogCaptureFixture
) -> None:
    bucket = _bucket(s3, "no-versioning-api", versioned=True)
    s3.put_object(Bucket=bucket, Key="a", Body=b"")
    client = listing_client(endpoint, "us-east-1")
    client.meta.events.register("before-call.s3.GetBucketVersioning", _not_implemented)
    with caplog.at_level("INFO", logger="seqgate.connectors.listing.s3"):
        listed = list(list_s3(bucket, client=client))
    assert [(o.key, o.version_id) for o in listed] == [("a", None)]
    (record,) = [r for r in caplog.records if r.name == "seqgate.connectors.listing.s3"]
    assert record.levelname == "INFO"
    assert "NotImplemented" in record.getMessage() and bucket in record.getMessage()


def _not_implemented(**_: Any) -> tuple[Any, dict[str, Any]]:
    """What Supabase Storage's S3 endpoint answers to GetBucketVersioning."""
    from botocore.awsrequest import AWSResponse

    error = {"Error": {"Code": "NotImplemented", "Message": "not implemented"}}
    return AWSResponse("", 501, {}, None), error  # type: ignore[no-untyped-call]


def test_a_missing_bucket_is_a_listing_error_naming_it(endpoint: str) -> None:
    with pytest.raises(ListingError) as raised:
        _listed("no-such-bucket", endpoint)
    message = str(raised.value)
    assert "'no-such-bucket' does not exist" in message and "NoSuchBucket" in message
    assert endpoint in message and "\n" not in message


def test_a_failure_in_the_middle_keeps_what_was_yielded(s3: Any, endpoint: str) -> None:
    bucket = _bucket(s3, "midway")
    for key in ["a", "b", "c"]:
        s3.put_object(Bucket=bucket, Key=key, Body=b"")
    listing = list_s3(bucket, endpoint_url=endpoint, region="us-east-1", page_size=2)
    first = [next(listing).key, next(listing).key]
    for key in ["a", "b", "c"]:
        s3.delete_object(Bucket=bucket, Key=key)
    s3.delete_bucket(Bucket=bucket)
    with pytest.raises(ListingError, match=r"'midway'.*NoSuchBucket"):
        next(listing)
    assert first == ["a", "b"]


def test_an_unreachable_endpoint_fails_quickly_naming_it() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    started = time.monotonic()
    with pytest.raises(ListingError) as raised:
        _listed("any-bucket", closed)
    assert time.monotonic() - started < 10
    assert closed in str(raised.value) and "--endpoint-url" in str(raised.value)


def test_no_credentials_is_a_listing_error_saying_where_to_set_them(
    s3: Any, endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    bucket = _bucket(s3, "no-credentials")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(
        ListingError, match=r"no AWS credentials.*'no-credentials'.*AWS_ACCESS_KEY_ID"
    ):
        _listed(bucket, endpoint)
