"""Event ids of S3-style records, which carry no per-event id (docs/design.md §4.1)."""

from __future__ import annotations

import hashlib
import json

from seqgate.schemas.identity import sequencer_event_id
from seqgate.schemas.ordering import AWS_SEQUENCER_ORDER

__all__ = ["fallback_event_id", "s3_event_id"]


def s3_event_id(kind: str, identity: str, sequencer: str) -> str:
    """The stable id of an S3 event (docs/design.md §4.1).

    ``"s3-"`` + the first 32 hex digits of SHA-256 over kind, identity and the
    sequencer's canonical form under the ``aws`` order, joined by U+001F.
    Depends on nothing but its arguments, so every redelivery gets the same id.
    Raises ValueError when ``sequencer`` is not hex.
    """
    return sequencer_event_id("s3-", kind, identity, AWS_SEQUENCER_ORDER.canonical(sequencer))


def fallback_event_id(
    prefix: str,
    kind: str,
    identity: str,
    version_id: str | None,
    event_time: str | None,
    etag: str | None,
    record: object,
) -> str:
    """The stable id of an event whose record carries no sequencer (docs/design.md §4.1).

    ``prefix`` (``"s3-"``, ``"minio-"``) + the first 32 hex digits of SHA-256
    over a JSON array: kind, identity, version id, event time and ETag when
    at least one of the last three is present; otherwise kind, identity and
    the whole record (keys sorted). The material is a JSON array, so it never
    equals the U+001F-joined material of a sequencer id (which starts with a
    kind, never with ``[``) and its fields cannot run into each other. Uses
    nothing but the record, so a redelivery gets the same id. Never raises.
    """
    material: list[object] = [kind, identity]
    if version_id is None and event_time is None and etag is None:
        material += ["record", record]
    else:
        material += ["fields", version_id, event_time, etag]
    try:
        text = json.dumps(material, ensure_ascii=True, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        # A record that JSON cannot write (keys of mixed types, absurd nesting):
        # no decoded JSON document is like this; fall back to what was parsed.
        text = json.dumps([kind, identity, "unserializable"], ensure_ascii=True)
    return prefix + hashlib.sha256(text.encode("ascii")).hexdigest()[:32]
