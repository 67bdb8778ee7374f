"""List an Azure Blob Storage container with List Blobs (azure-storage-blob).

Only current blobs are listed: without `include=versions` List Blobs leaves out older
versions, snapshots and soft-deleted blobs, and gives the current version's id where the
account keeps versions.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from seqgate.connectors.errors import ListingError
from seqgate.schemas.listing import ListedObject, plain_etag

__all__ = ["azure_bucket", "list_azure"]

_CONNECT_TIMEOUT_S = 10
_READ_TIMEOUT_S = 60
_RETRIES = 1
# The SDK's default first backoff is 15 s, which made an unreachable endpoint take 18 s.
_BACKOFF_S = 2

_HINTS = {
    "AuthenticationFailed": "check the account key or SAS token in the connection string",
    "AuthorizationFailure": "check the account key or SAS token, and that it may list this"
    " container",
    "AuthorizationPermissionMismatch": "the identity needs the Storage Blob Data Reader role",
    "NoAuthenticationInformation": "give a connection string or a credential",
    "InvalidAuthenticationInfo": "check the credential",
}


def list_azure(
    container: str,
    *,
    prefix: str = "",
    connection_string: str | None = None,
    account_url: str | None = None,
    credential: Any = None,
    page_size: int = 5000,
) -> Iterator[ListedObject]:
    """The current blobs of `container` under `prefix`, in name order.

    `version_id` is the current version's id where the account keeps versions, else None;
    `page_size` is List Blobs' maxresults. Raises ListingError, also in the middle of a
    listing.
    """
    client = _container_client(container, connection_string, account_url, credential)
    where = str(client.url)
    from azure.core.exceptions import AzureError

    try:
        pages = client.list_blobs(name_starts_with=prefix or None, results_per_page=page_size)
        for page in pages.by_page():
            for blob in page:
                yield _listed(blob)
    except AzureError as error:
        raise _listing_error(container, where, error) from error


def azure_bucket(container: str, connection_string: str) -> str:
    """The bucket seqgate's identities give the container: `<account>.<container>`, the
    account lowercased (docs/sources.md: a container's name is unique only within its
    account), the account named by the connection string."""
    client = _container_client(container, connection_string, None, None)
    account = str(client.account_name or "").lower()
    if not account:
        raise ListingError(
            f"azure container {container!r}: the connection string names no account"
            " (AccountName=...)"
        )
    return f"{account}.{container}"


def _container_client(
    container: str, connection_string: str | None, account_url: str | None, credential: Any
) -> Any:
    from azure.storage.blob import ContainerClient

    options: dict[str, Any] = {
        "connection_timeout": _CONNECT_TIMEOUT_S,
        "read_timeout": _READ_TIMEOUT_S,
        "retry_total": _RETRIES,
        "initial_backoff": _BACKOFF_S,
    }
    try:
        if connection_string:
            return ContainerClient.from_connection_string(
                connection_string, container, credential=credential, **options
            )
        if account_url:
            return ContainerClient(account_url, container, credential=credential, **options)
    except ValueError as error:
        raise ListingError(
            f"azure container {container!r}: {error} (check --azure-connection-string)"
        ) from error
    raise ListingError(
        f"no way to reach azure container {container!r}: give a connection string"
        " (AZURE_STORAGE_CONNECTION_STRING) or an account URL with a credential"
    )


def _listed(blob: Any) -> ListedObject:
    modified: datetime = blob.last_modified
    version = getattr(blob, "version_id", None)
    size = getattr(blob, "size", None)
    return ListedObject(
        key=str(blob.name),
        version_id=None if version is None else str(version),
        etag=plain_etag(blob.etag),
        last_modified_ms=int(modified.timestamp() * 1000),
        size=None if size is None else int(size),
    )


def _listing_error(container: str, where: str, error: Exception) -> ListingError:
    from azure.core.exceptions import ClientAuthenticationError, ServiceRequestError

    raw = getattr(error, "error_code", None)
    code = str(getattr(raw, "value", raw) or "")
    if isinstance(error, ServiceRequestError):
        return ListingError(
            f"azure endpoint {where} did not answer listing container {container!r}"
            f" ({type(error).__name__}); check --azure-connection-string and"
            " the network"
        )
    if code == "ContainerNotFound":
        return ListingError(
            f"azure container {container!r} does not exist at {where} (ContainerNotFound;"
            " check --bucket and the account)"
        )
    if isinstance(error, ClientAuthenticationError) or code in _HINTS:
        hint = _HINTS.get(code, "check the credential")
        return ListingError(
            f"azure refused listing container {container!r} at {where}:"
            f" {code or type(error).__name__} ({hint})"
        )
    text = " ".join(str(error).split())[:300]
    return ListingError(
        f"listing azure container {container!r} at {where} failed:"
        f" {code or type(error).__name__}: {text} (check the container, the account and"
        " the network)"
    )
