"""The layout of the state's keys, which are the changelog's keys (docs/design.md §2.5).

* an object identity (`s3://bucket/key`) → its `Watermark` (ordered sources);
* NUL `seen` NUL <event id> → a `SeenEvent` (dedupe-only sources);
* NUL `latest` NUL <identity> → a `SeenEvent`: the object's latest event accepted without
  a position (by the dedupe rule, or a reconciled one), for `seqgate reconcile`
  (docs/reconcile.md); kept like a watermark, never purged;
* NUL `stream-time` → the partition's highest record time of a dedupe-only
  event, as ASCII digits.

Identities never start with NUL, so the four never collide. Pure: the rules
decide changes to this table and the store keeps it (`seqgate.streams.state.store`).
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "LATEST_PREFIX",
    "SEEN_PREFIX",
    "STREAM_TIME_KEY",
    "decode_stream_time",
    "encode_stream_time",
    "latest_key",
    "seen_key",
    "watermark_key",
]

SEEN_PREFIX: Final = b"\x00seen\x00"
STREAM_TIME_KEY: Final = b"\x00stream-time"
LATEST_PREFIX: Final = b"\x00latest\x00"


def watermark_key(identity: str) -> bytes:
    return identity.encode("utf-8")


def seen_key(event_id: str) -> bytes:
    return SEEN_PREFIX + event_id.encode("utf-8")


def latest_key(identity: str) -> bytes:
    return LATEST_PREFIX + identity.encode("utf-8")


def encode_stream_time(value: int) -> bytes:
    return str(value).encode("ascii")


def decode_stream_time(value: bytes) -> int:
    return int(value.decode("ascii"))
