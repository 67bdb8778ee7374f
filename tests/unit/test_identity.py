"""Object identity, the Kafka key (docs/design.md §2.1)."""

from __future__ import annotations

import pytest

from seqgate.schemas.identity import S3_SCHEME, object_identity, parse_identity


def test_s3_identity() -> None:
    assert S3_SCHEME == "s3"
    assert object_identity("s3", "example-input", "incoming/June report+final.csv") == (
        "s3://example-input/incoming/June report+final.csv"
    )


@pytest.mark.parametrize(
    "key",
    [
        "HappyFace.jpg",
        "incoming/June report+final.csv",  # space and plus stay distinct
        "a%2Fb",  # a literal percent sequence is not decoded again
        "café €.txt",
        "dir//double//slashes/",
        "nested://looks/like/a/uri",
        "/leading-slash",
        " ",
        "line\nbreak",
    ],
)
def test_key_is_verbatim_and_round_trips(key: str) -> None:
    identity = object_identity("s3", "bucket", key)
    assert identity == f"s3://bucket/{key}"
    assert parse_identity(identity) == ("s3", "bucket", key)


@pytest.mark.parametrize("scheme", ["s3", "minio", "gs", "azure-blob", "b2", "x.y+z"])
def test_schemes_round_trip(scheme: str) -> None:
    assert parse_identity(object_identity(scheme, "b", "k")) == (scheme, "b", "k")


def test_providers_do_not_share_a_namespace() -> None:
    assert object_identity("s3", "b", "k") != object_identity("minio", "b", "k")


@pytest.mark.parametrize(
    ("bucket", "match"),
    [("", "bucket name is empty"), ("a/b", "contains '/'"), ("/", "contains '/'")],
)
def test_invalid_bucket(bucket: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        object_identity("s3", bucket, "key")


def test_empty_key_is_refused() -> None:
    with pytest.raises(ValueError, match="object key is empty"):
        object_identity("s3", "bucket", "")


@pytest.mark.parametrize("scheme", ["", "S3", "3s", "s3:", "s3/", "s 3", "é"])
def test_invalid_scheme(scheme: str) -> None:
    with pytest.raises(ValueError, match="scheme"):
        object_identity(scheme, "bucket", "key")


@pytest.mark.parametrize(
    ("identity", "match"),
    [
        ("", "no '://'"),
        ("s3:/bucket/key", "no '://'"),
        ("bucket/key", "no '://'"),
        ("s3://bucket", "no '/' after the bucket"),
        ("s3://", "no '/' after the bucket"),
        ("s3:///key", "bucket name is empty"),
        ("s3://bucket/", "object key is empty"),
        ("://bucket/key", "scheme"),
        ("S3://bucket/key", "scheme"),
        ("s 3://bucket/key", "scheme"),
    ],
)
def test_parse_malformed(identity: str, match: str) -> None:
    with pytest.raises(ValueError, match=match) as caught:
        parse_identity(identity)
    assert "malformed object identity" in str(caught.value)


def test_parse_splits_at_the_first_separators() -> None:
    assert parse_identity("s3://b/x://y/z") == ("s3", "b", "x://y/z")
    assert parse_identity("minio://photos/2024/01/a b+c%41.jpg") == (
        "minio",
        "photos",
        "2024/01/a b+c%41.jpg",
    )


def test_an_events_identity_uses_its_providers_scheme() -> None:
    from seqgate.schemas.identity import event_identity, scheme_of_source

    assert event_identity("gcs", "media", "a/b.png") == "gs://media/a/b.png"
    assert event_identity("s3", "b", "k") == "s3://b/k"
    assert scheme_of_source("azure") == "azure"
