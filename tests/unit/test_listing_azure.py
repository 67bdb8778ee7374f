"""`list_azure` against Azurite: names, prefixes, pages, ETags and the errors."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest
from azure.storage.blob import BlobServiceClient, ContainerClient

from seqgate.connectors.errors import ListingError
from seqgate.connectors.listing.azure import list_azure
from tests.support.azurite import azurite_blob, connection_string

HAZARD_NAMES = [
    "June report+final.csv",
    "literal%2Bplus.txt",
    "spaced name .txt",
    "unicode/Zürich-日本.txt",
    "folder/",
    "a//b",
]


@pytest.fixture(scope="module")
def azurite() -> Iterator[str]:
    with azurite_blob() as connection:
        yield connection


def _container(azurite: str, name: str, blobs: dict[str, bytes]) -> ContainerClient:
    container = BlobServiceClient.from_connection_string(azurite).create_container(name)
    for blob, data in blobs.items():
        container.upload_blob(blob, data)
    return container


def test_hazard_names_come_back_exactly(azurite: str) -> None:
    _container(azurite, "hazards", {name: name.encode() for name in HAZARD_NAMES})
    listed = list(list_azure("hazards", connection_string=azurite))
    assert [o.key for o in listed] == sorted(HAZARD_NAMES)
    assert {o.version_id for o in listed} == {None}


def test_fields_are_what_get_blob_properties_says(azurite: str) -> None:
    container = _container(azurite, "fields", {"one+two": b"x" * 1234})
    (listed,) = list_azure("fields", connection_string=azurite)
    properties = container.get_blob_client("one+two").get_blob_properties()
    assert listed.etag == properties.etag.strip('"').lower()
    assert listed.etag is not None and not listed.etag.startswith('"')
    assert listed.size == properties.size == 1234
    assert listed.last_modified_ms == int(properties.last_modified.timestamp() * 1000)


def test_a_prefix_lists_only_its_names(azurite: str) -> None:
    names = ["in/a", "in/b c", "in+/d", "inside", "out/a"]
    _container(azurite, "prefixed", dict.fromkeys(names, b""))
    listed = list_azure("prefixed", prefix="in/", connection_string=azurite)
    assert [o.key for o in listed] == ["in/a", "in/b c"]
    listed = list_azure("prefixed", prefix="in+", connection_string=azurite)
    assert [o.key for o in listed] == ["in+/d"]


def test_small_pages_list_every_name_once(azurite: str) -> None:
    names = [f"k{i:02d}" for i in range(7)]
    _container(azurite, "paged", dict.fromkeys(names, b""))
    listed = list_azure("paged", connection_string=azurite, page_size=2)
    assert [o.key for o in listed] == names


def test_pages_are_asked_for_one_at_a_time_and_a_failure_midway_is_a_listing_error(
    azurite: str,
) -> None:
    container = _container(azurite, "midway", dict.fromkeys(["a", "b", "c"], b""))
    listing = list_azure("midway", connection_string=azurite, page_size=2)
    first = [next(listing).key, next(listing).key]
    container.delete_container()
    with pytest.raises(ListingError, match=r"'midway'.*ContainerNotFound"):
        next(listing)
    assert first == ["a", "b"]


def test_a_deleted_blob_is_not_listed(azurite: str) -> None:
    container = _container(azurite, "deleted", {"kept": b"1", "gone": b"2"})
    container.delete_blob("gone")
    assert [o.key for o in list_azure("deleted", connection_string=azurite)] == ["kept"]


def test_a_missing_container_is_a_listing_error_naming_it(azurite: str) -> None:
    with pytest.raises(ListingError) as raised:
        list(list_azure("no-such-container", connection_string=azurite))
    message = str(raised.value)
    assert "'no-such-container' does not exist" in message and "ContainerNotFound" in message
    assert "\n" not in message


def test_a_wrong_key_is_a_listing_error_naming_the_code(azurite: str) -> None:
    _container(azurite, "guarded", {"a": b""})
    wrong = azurite.replace("AccountKey=Eby8", "AccountKey=Xby8")
    with pytest.raises(
        ListingError, match=r"azure refused listing container 'guarded'.*: AuthorizationFailure \("
    ):
        list(list_azure("guarded", connection_string=wrong))


def test_no_connection_is_a_listing_error() -> None:
    with pytest.raises(ListingError, match="connection string"):
        list(list_azure("any"))


def test_an_unreachable_endpoint_fails_quickly_naming_it() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(ListingError) as raised:
        list(list_azure("any", connection_string=connection_string(port)))
    assert time.monotonic() - started < 10
    assert f"127.0.0.1:{port}" in str(raised.value) and "did not answer" in str(raised.value)
