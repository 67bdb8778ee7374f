"""Every provider's parser by name, for callers that know what they received.

`seqgate parse --provider NAME` uses this to read bodies that do not say where they come
from (a Cloudinary notification needs its cloud name, an Appwrite body the action header
that came with it) or to insist on one provider's rules.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from seqgate.connectors.parsers.appwrite import parse_appwrite
from seqgate.connectors.parsers.azure import parse_azure
from seqgate.connectors.parsers.b2 import parse_b2
from seqgate.connectors.parsers.box import parse_box
from seqgate.connectors.parsers.cloudinary import parse_cloudinary
from seqgate.connectors.parsers.gcs import parse_gcs
from seqgate.connectors.parsers.results import ParseResult
from seqgate.connectors.parsers.supabase import parse_supabase

__all__ = ["PROVIDERS", "provider_parser"]

Parser = Callable[[object, str], ParseResult]

PROVIDERS: Final = ("gcs", "azure", "supabase", "b2", "box", "cloudinary", "appwrite")
"""The providers beyond the S3 family (which `normalize` recognizes by itself)."""

_SIMPLE: Final[dict[str, Parser]] = {
    "gcs": parse_gcs,
    "azure": parse_azure,
    "supabase": parse_supabase,
    "b2": parse_b2,
    "box": parse_box,
}


def provider_parser(
    name: str, *, cloud_name: str | None = None, appwrite_events: str | None = None
) -> Parser:
    """The parser of provider ``name``. Cloudinary needs ``cloud_name``; Appwrite takes the
    value of the ``X-Appwrite-Webhook-Events`` header that came with the body.

    Raises ValueError naming what is missing or unknown.
    """
    if name in _SIMPLE:
        return _SIMPLE[name]
    if name == "cloudinary":
        if not cloud_name:
            raise ValueError("a Cloudinary body does not name its cloud: give the cloud name")
        cloud = cloud_name
        return lambda document, origin: parse_cloudinary(document, origin, cloud_name=cloud)
    if name == "appwrite":
        events = appwrite_events
        return lambda document, origin: parse_appwrite(document, origin, events=events)
    raise ValueError(f"unknown provider {name!r}: expected one of {', '.join(PROVIDERS)}")
