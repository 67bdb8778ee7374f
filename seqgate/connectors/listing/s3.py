"""List an S3 bucket (or an S3-compatible store's) with ListObjectsV2 or ListObjectVersions.

Only ListObjectsV2, ListObjectVersions and GetBucketVersioning are called, so that the
S3 endpoints of Supabase Storage and Backblaze B2 answer it too.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from seqgate.connectors.errors import ListingError
from seqgate.schemas.listing import ListedObject, plain_etag

__all__ = ["list_s3", "listing_client"]

_log = logging.getLogger(__name__)

_CONNECT_TIMEOUT_S = 10
_READ_TIMEOUT_S = 60
_MAX_ATTEMPTS = 2

_HINTS = {
    "NoSuchBucket": "check --bucket and --endpoint-url",
    "AccessDenied": "the credentials need s3:ListBucket (and s3:ListBucketVersions on a"
    " versioned bucket)",
    "InvalidAccessKeyId": "check the access key id (AWS_ACCESS_KEY_ID or the profile)",
    "SignatureDoesNotMatch": "check the secret access key (AWS_SECRET_ACCESS_KEY or the profile)",
    "ExpiredToken": "renew the session credentials",
    "PermanentRedirect": "the bucket is in another region: pass its --region",
    "AuthorizationHeaderMalformed": "the bucket is in another region: pass its --region",
}

# Refusals of GetBucketVersioning that S3-compatible stores answer instead of a status.
_VERSIONING_UNSUPPORTED = {"NotImplemented", "AccessDenied", "MethodNotAllowed", "501", "405"}


def listing_client(endpoint_url: str | None = None, region: str | None = None) -> Any:
    """A boto3 S3 client that gives up on an unreachable endpoint within about 20 s."""
    import boto3  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from botocore.config import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        Config,
    )

    config = Config(
        connect_timeout=_CONNECT_TIMEOUT_S,
        read_timeout=_READ_TIMEOUT_S,
        retries={"max_attempts": _MAX_ATTEMPTS, "mode": "standard"},
    )
    return boto3.session.Session().client(
        "s3", region_name=region, endpoint_url=endpoint_url, config=config
    )


def list_s3(
    bucket: str,
    *,
    prefix: str = "",
    endpoint_url: str | None = None,
    region: str | None = None,
    page_size: int = 1000,
    client: Any = None,
) -> Iterator[ListedObject]:
    """The objects of `bucket` under `prefix` as they are now, in key order.

    On a bucket whose versioning is Enabled or Suspended, each key's latest version (none
    for a key whose latest version is a delete marker); else ListObjectsV2, version_id
    None. `page_size` is MaxKeys. Raises ListingError, also in the middle of a listing.
    """
    s3 = client if client is not None else listing_client(endpoint_url, region)
    where = _where(s3, endpoint_url)
    if _is_versioned(s3, bucket, where):
        pages = _pages(s3, "list_object_versions", bucket, prefix, page_size)
        yield from _guarded(_latest_versions(pages), bucket, where)
    else:
        pages = _pages(s3, "list_objects_v2", bucket, prefix, page_size)
        yield from _guarded(_current_objects(pages), bucket, where)


def _where(s3: Any, endpoint_url: str | None) -> str:
    if endpoint_url:
        return endpoint_url
    try:
        return str(s3.meta.endpoint_url)
    except AttributeError:
        return "the default S3 endpoint"


def _pages(s3: Any, operation: str, bucket: str, prefix: str, page_size: int) -> Iterator[Any]:
    paginator = s3.get_paginator(operation)
    # No EncodingType here: botocore then asks for url encoding itself and decodes every
    # key exactly; one passed by the caller would come back still encoded.
    pages: Iterator[Any] = paginator.paginate(
        Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": page_size}
    )
    return pages


def _current_objects(pages: Iterable[Any]) -> Iterator[ListedObject]:
    for page in pages:
        for item in page.get("Contents", ()):
            yield _listed(item, None)


def _latest_versions(pages: Iterable[Any]) -> Iterator[ListedObject]:
    for page in pages:
        for item in page.get("Versions", ()):
            if item.get("IsLatest"):
                version = item.get("VersionId")
                yield _listed(item, None if version in (None, "null") else str(version))


def _listed(item: Any, version_id: str | None) -> ListedObject:
    modified: datetime = item["LastModified"]
    size = item.get("Size")
    return ListedObject(
        key=str(item["Key"]),
        version_id=version_id,
        etag=plain_etag(item.get("ETag")),
        last_modified_ms=int(modified.timestamp() * 1000),
        size=None if size is None else int(size),
    )


def _guarded(objects: Iterator[ListedObject], bucket: str, where: str) -> Iterator[ListedObject]:
    from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        BotoCoreError,
        ClientError,
    )

    try:
        yield from objects
    except (BotoCoreError, ClientError) as error:
        raise _listing_error(bucket, where, error) from error


def _is_versioned(s3: Any, bucket: str, where: str) -> bool:
    from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        BotoCoreError,
        ClientError,
    )

    try:
        answer = s3.get_bucket_versioning(Bucket=bucket)
    except ClientError as error:
        code = _code(error)
        if code not in _VERSIONING_UNSUPPORTED:
            raise _listing_error(bucket, where, error) from error
        _log.info(
            "s3 bucket %r at %s refused GetBucketVersioning (%s): listing current objects"
            " with ListObjectsV2, without version ids",
            bucket,
            where,
            code,
        )
        return False
    except BotoCoreError as error:
        raise _listing_error(bucket, where, error) from error
    return answer.get("Status") in ("Enabled", "Suspended")


def _code(error: Any) -> str:
    response = getattr(error, "response", None) or {}
    code = response.get("Error", {}).get("Code")
    if code:
        return str(code)
    return str(response.get("ResponseMetadata", {}).get("HTTPStatusCode", ""))


def _listing_error(bucket: str, where: str, error: Exception) -> ListingError:
    from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        ClientError,
        NoCredentialsError,
        PartialCredentialsError,
    )
    from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        ConnectionError as BotoConnectionError,
    )

    if isinstance(error, BotoConnectionError):
        return ListingError(
            f"s3 endpoint {where} did not answer listing bucket {bucket!r}"
            f" ({type(error).__name__}); check --endpoint-url and the network"
        )
    if isinstance(error, NoCredentialsError | PartialCredentialsError):
        return ListingError(
            f"no AWS credentials to list s3 bucket {bucket!r} at {where}; set"
            " AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY or AWS_PROFILE"
        )
    if isinstance(error, ClientError):
        code = _code(error)
        if code == "NoSuchBucket":
            return ListingError(
                f"s3 bucket {bucket!r} does not exist at {where} (NoSuchBucket; check"
                " --bucket and --endpoint-url)"
            )
        hint = _HINTS.get(code, "check --bucket, --endpoint-url and the credentials")
        message = " ".join(str(error.response.get("Error", {}).get("Message", "")).split())
        return ListingError(
            f"s3 refused listing bucket {bucket!r} at {where}: {code} {message}".rstrip()
            + f" ({hint})"
        )
    text = " ".join(str(error).split())
    return ListingError(
        f"listing s3 bucket {bucket!r} at {where} failed: {type(error).__name__}: {text}"
        " (check --endpoint-url and the network)"
    )
