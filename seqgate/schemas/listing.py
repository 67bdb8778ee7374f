"""One object as a bucket listing shows it: what `seqgate reconcile` compares with state.

A listing is the provider's own account of what a bucket holds now (S3's
ListObjectsV2 / ListObjectVersions, Azure's List Blobs). It carries no ordering
marker: S3 puts the sequencer only in notifications, so a listed object can be
compared with an accepted event by version or ETag, never ordered against it
(docs/reconcile.md).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ListedObject", "plain_etag"]


@dataclass(frozen=True, slots=True)
class ListedObject:
    """The current state of one object in a listing.

    `key` is the decoded key (as the parsers decode a notification's key);
    `version_id` is the current version where the bucket keeps versions (the
    listing's latest version), else None; `etag` is in `plain_etag` form;
    `last_modified_ms` is the provider's last-modified time, epoch milliseconds.
    """

    key: str
    version_id: str | None
    etag: str | None
    last_modified_ms: int
    size: int | None


def plain_etag(etag: str | None) -> str | None:
    """An ETag as notifications spell it: without the surrounding double quotes that
    listings and HTTP headers add (S3 `"d41d8..."`, Azure `"0x8D..."`), lowercased
    for comparison (S3 lowercases its hex; Azure's are case-insensitive hex too)."""
    if etag is None:
        return None
    text = etag.strip()
    if text.startswith("W/"):  # a weak validator: the same value for comparison here
        text = text[2:]
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    return text.lower() or None
