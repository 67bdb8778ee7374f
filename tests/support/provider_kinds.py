"""Each provider's table of event types to kinds, as docs/kinds.md documents them."""

from __future__ import annotations

from collections.abc import Mapping

from seqgate.connectors.parsers.appwrite import APPWRITE_ACTION_KINDS
from seqgate.connectors.parsers.azure import AZURE_KINDS
from seqgate.connectors.parsers.b2 import B2_EVENT_KINDS
from seqgate.connectors.parsers.box import BOX_TRIGGER_KINDS

PROVIDER_KIND_TABLES: dict[str, Mapping[str, str]] = {
    "Azure Blob": AZURE_KINDS,
    "Backblaze B2": B2_EVENT_KINDS,
    "Box": BOX_TRIGGER_KINDS,
    "Appwrite": APPWRITE_ACTION_KINDS,
}
