"""Object identity: the Kafka key of every event (docs/design.md §2.1).

An identity is ``<scheme>://<bucket>/<key>``:

* ``scheme`` names the provider namespace (``s3`` for Amazon S3, ``minio``,
  ``gs``, ...). It is lowercase ASCII in URI-scheme form (a letter, then
  letters, digits, ``+``, ``-`` or ``.``), so it never contains ``:`` or ``/``.
* ``bucket`` is non-empty and never contains ``/``.
* ``key`` is the object's real name: decoded exactly once by the connector,
  then kept verbatim (spaces, ``+``, ``%``, further ``/`` and even ``://``
  stay as they are). It is non-empty; every supported provider requires a
  name for an object.

Because neither the scheme nor the bucket can contain the separators, the
string parses back unambiguously: the scheme ends at the first ``://``, the
bucket at the next ``/``, and the rest is the key.

:func:`sequencer_event_id` derives an event's id from its identity (docs/design.md §4.1),
one construction for every provider that sends sequencers.
"""

from __future__ import annotations

import hashlib
import re
from typing import Final

__all__ = [
    "S3_SCHEME",
    "SCHEMES_OF_SOURCES",
    "event_identity",
    "identity_partition",
    "java_murmur2",
    "object_identity",
    "parse_identity",
    "scheme_of_source",
    "sequencer_event_id",
]

S3_SCHEME: Final = "s3"

_SCHEME: Final = re.compile(r"[a-z][a-z0-9+.-]*")
_SEPARATOR: Final = "://"
_ID_SEPARATOR: Final = "\x1f"


# Schemes already found valid (at most a few dozen kept): an identity is built for
# every event the bridge publishes and every record the worker decides, with a
# handful of schemes, and the regular expression was most of that cost.
_VALID_SCHEMES: set[str] = set()
_KEEP_SCHEMES: Final = 64


def _check_scheme(scheme: str, context: str) -> None:
    if scheme in _VALID_SCHEMES:
        return
    if _SCHEME.fullmatch(scheme) is None:
        raise ValueError(
            f"{context}: scheme {scheme!r} is not valid: expected lowercase ASCII "
            "starting with a letter (letters, digits, '+', '-', '.'), e.g. 's3'"
        )
    if len(_VALID_SCHEMES) < _KEEP_SCHEMES:
        _VALID_SCHEMES.add(scheme)


def _check_bucket(bucket: str, context: str) -> None:
    if not bucket:
        raise ValueError(f"{context}: the bucket name is empty: expected a non-empty name")
    if "/" in bucket:
        raise ValueError(
            f"{context}: bucket name {bucket!r} contains '/': bucket names never do, "
            "and the identity could not be parsed back"
        )


def _check_key(key: str, context: str) -> None:
    if not key:
        raise ValueError(f"{context}: the object key is empty: expected the object's name")


def object_identity(scheme: str, bucket: str, key: str) -> str:
    """Return the identity ``<scheme>://<bucket>/<key>`` of one object.

    ``key`` must already be decoded; it is used verbatim. Raises ValueError
    for an invalid scheme, an empty bucket, a bucket containing ``/`` or an
    empty key.
    """
    context = "cannot build an object identity"
    _check_scheme(scheme, context)
    _check_bucket(bucket, context)
    _check_key(key, context)
    return f"{scheme}{_SEPARATOR}{bucket}/{key}"


# Where a provider's identity scheme is not its source name (docs/design.md §2.1 names GCS
# objects gs://, the scheme of Google's own tools, while the source says "gcs").
SCHEMES_OF_SOURCES: Final = {"gcs": "gs"}


def scheme_of_source(source: str) -> str:
    """The identity scheme of events whose ``source`` is ``source``."""
    return SCHEMES_OF_SOURCES.get(source, source)


def event_identity(source: str, bucket: str, key: str) -> str:
    """The identity of an event's object, from the event's ``source``, ``bucket`` and ``key``."""
    return object_identity(scheme_of_source(source), bucket, key)


def parse_identity(identity: str) -> tuple[str, str, str]:
    """Split an identity back into ``(scheme, bucket, key)``.

    The exact inverse of :func:`object_identity`. Raises ValueError, naming
    what is wrong, when ``identity`` is not a well-formed identity.
    """
    context = f"malformed object identity {identity!r}"
    scheme, separator, rest = identity.partition(_SEPARATOR)
    if not separator:
        raise ValueError(f"{context}: expected '<scheme>://<bucket>/<key>', found no '://'")
    _check_scheme(scheme, context)
    bucket, slash, key = rest.partition("/")
    if not slash:
        raise ValueError(
            f"{context}: expected '<scheme>://<bucket>/<key>', found no '/' after the bucket"
        )
    _check_bucket(bucket, context)
    _check_key(key, context)
    return scheme, bucket, key


def sequencer_event_id(prefix: str, kind: str, identity: str, canonical_sequencer: str) -> str:
    """The stable id of an event that carries a sequencer (docs/design.md §4.1).

    ``prefix`` (``"s3-"``, ``"minio-"``) + the first 32 hex digits of SHA-256
    over the kind, the object identity and the sequencer in the canonical form
    of the provider's order, joined by U+001F. Depends on nothing but its
    arguments, so every redelivery gets the same id.
    """
    material = _ID_SEPARATOR.join([kind, identity, canonical_sequencer])
    return prefix + hashlib.sha256(material.encode("utf-8")).hexdigest()[:32]


_MASK32 = 0xFFFFFFFF


def java_murmur2(data: bytes) -> int:
    """`org.apache.kafka.common.utils.Utils.murmur2` as a signed 32-bit Java int."""
    m = 0x5BD1E995
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK32
    for i in range(0, length - length % 4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * m) & _MASK32
        k ^= k >> 24
        k = (k * m) & _MASK32
        h = (h * m) & _MASK32
        h ^= k
    tail = length & ~3
    remainder = length % 4
    if remainder == 3:
        h ^= data[tail + 2] << 16
    if remainder >= 2:
        h ^= data[tail + 1] << 8
    if remainder >= 1:
        h ^= data[tail]
        h = (h * m) & _MASK32
    h ^= h >> 13
    h = (h * m) & _MASK32
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def identity_partition(identity: str, partitions: int) -> int:
    """The input (and changelog) partition of an object: murmur2 of its identity, as the
    bridge's producers (`partitioner=murmur2_random`) and the Java client place it."""
    return (java_murmur2(identity.encode("utf-8")) & 0x7FFFFFFF) % partitions
