"""The whole messages of seqgate.schemas.identity's refusals: the worker rejects an
event whose identity cannot be built with this text as its reason."""

from __future__ import annotations

import pytest

from seqgate.schemas.identity import object_identity, parse_identity


def _refusal(scheme: str, bucket: str, key: str) -> str:
    with pytest.raises(ValueError) as raised:
        object_identity(scheme, bucket, key)
    return str(raised.value)


def test_a_bucket_with_a_slash_is_refused_saying_why() -> None:
    assert _refusal("s3", "a/b", "k") == (
        "cannot build an object identity: bucket name 'a/b' contains '/': bucket names"
        " never do, and the identity could not be parsed back"
    )


def test_an_empty_bucket_or_key_is_refused_saying_what_was_expected() -> None:
    assert _refusal("s3", "", "k") == (
        "cannot build an object identity: the bucket name is empty: expected a non-empty name"
    )
    assert _refusal("s3", "b", "") == (
        "cannot build an object identity: the object key is empty: expected the object's name"
    )


@pytest.mark.parametrize("scheme", ["S3", "3s", "", "s3:", "s_3"])
def test_an_invalid_scheme_is_refused_with_the_rule(scheme: str) -> None:
    assert _refusal(scheme, "b", "k") == (
        f"cannot build an object identity: scheme {scheme!r} is not valid: expected"
        " lowercase ASCII starting with a letter (letters, digits, '+', '-', '.'), e.g. 's3'"
    )


def test_a_valid_scheme_of_every_allowed_character_builds_and_parses_back() -> None:
    identity = object_identity("x9+.-edge", "b", "k")
    assert identity == "x9+.-edge://b/k"
    assert parse_identity(identity) == ("x9+.-edge", "b", "k")
