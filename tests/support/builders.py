"""Test-only helpers shared by the parser tests.

Product-level sample notifications live in :mod:`seqgate_devtools.samples`; this
module holds what only tests need: damaging a sample member by member, MinIO's
key escaping written independently of the parser, the tricky keys of the
``tricky_keys`` fixtures, an independent copy of the event-id formula, and the
"exactly one event / one rejection" checks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from seqgate.connectors.parsers.results import ParseResult
from seqgate.schemas.reasons import Rejection
from seqgate.schemas.records import ObjectEvent

ABSENT: Any = object()
"""A member value that means: leave the member out of the document."""


# --------------------------------------------------------------------------- documents


def put(document: dict[str, Any], path: Sequence[str], value: Any) -> dict[str, Any]:
    """Write ``value`` at ``path`` in ``document`` (ABSENT removes the member); return it.

    The value is written as given: None is a JSON null, and a value of the
    wrong type stays wrong, so tests can build every broken variant.
    """
    *parents, name = path
    parent = document
    for step in parents:
        parent = parent[step]
    if value is ABSENT:
        parent.pop(name, None)
    else:
        parent[name] = value
    return document


def with_members(
    document: dict[str, Any], paths: Mapping[str, Sequence[str]], members: Mapping[str, Any]
) -> dict[str, Any]:
    """``document`` with each of ``members`` written (see :func:`put`) at its path in ``paths``."""
    for name, value in members.items():
        put(document, paths[name], value)
    return document


# --------------------------------------------------------------------------- keys


_GO_UNRESERVED = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~")


def go_query_escape(key: str) -> str:
    """Go's ``url.QueryEscape``, as MinIO applies it to ``s3.object.key``.

    Unreserved ``A-Za-z0-9-_.~`` kept, space as ``+``, every other UTF-8 byte
    as ``%XX`` with uppercase hex (so ``/`` is ``%2F`` and ``*`` is ``%2A``).
    """
    parts: list[str] = []
    for byte in key.encode("utf-8"):
        if byte in _GO_UNRESERVED:
            parts.append(chr(byte))
        elif byte == 0x20:
            parts.append("+")
        else:
            parts.append(f"%{byte:02X}")
    return "".join(parts)


LONG_KEY = "r\u00e9pertoire/" * 85 + "f.gz"
"""Exactly 1024 bytes of UTF-8, S3's maximum."""

TRICKY_KEYS = [
    "incoming/June report+final.csv",
    "100%.txt",
    "100%25.txt",
    "a%2Fb",
    "//double//slash///end/",
    "données/été 2024/café €.txt",
    "写真/猫.jpg",
    "\U0001f600 smile.png",
    "  leading and trailing  ",
    "a+b=c&d?e#f;g,h:i@j$k.txt",
    "tilde~under_score-dash.dot",
    LONG_KEY,
]
"""The decoded names of the records of tests/fixtures/{s3,minio}/tricky_keys*.json, in order."""


def assert_tricky_keys(result: ParseResult) -> None:
    """``result`` is one event per tricky key, in order, each with its own id."""
    assert result.rejections == []
    assert [event.key for event in result.events] == TRICKY_KEYS
    assert len(result.events[-1].key.encode("utf-8")) == 1024
    assert len({event.id for event in result.events}) == len(TRICKY_KEYS)


# --------------------------------------------------------------------------- results


def sequencer_id(prefix: str, kind: str, identity: str, canonical_sequencer: str) -> str:
    """The event id of docs/design.md §4.1, written independently of the parsers."""
    material = "\x1f".join([kind, identity, canonical_sequencer]).encode()
    return prefix + hashlib.sha256(material).hexdigest()[:32]


def only_event(result: ParseResult) -> ObjectEvent:
    """The one event of ``result``, which holds nothing else."""
    assert result.rejections == [] and result.ignored == [], result
    [event] = result.events
    return event


def only_rejection(result: ParseResult) -> Rejection:
    """The one rejection of ``result``, which holds nothing else."""
    assert result.events == [] and result.ignored == [], result
    [rejection] = result.rejections
    return rejection
