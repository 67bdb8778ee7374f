"""Listing a bucket through its provider's API: what a bucket holds now, for `seqgate reconcile`.

`list_s3` (S3 and S3-compatible stores) and `list_azure` (Azure Blob Storage) yield one
`seqgate.schemas.listing.ListedObject` per current object; every failure they expect is a
`ListingError` naming the bucket or container, the provider's error code and the fix.
"""

from __future__ import annotations

from seqgate.connectors.errors import ListingError

__all__ = ["ListingError"]
