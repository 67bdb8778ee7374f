"""The ``source`` values the bridge writes: one per provider parser (docs/design.md §2.2).

The worker refuses an event whose source is not one of these
(``unknown_source``), and its policy names them to choose each one's trust.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "APPWRITE_SOURCE",
    "AZURE_SOURCE",
    "B2_SOURCE",
    "BOX_SOURCE",
    "CLOUDINARY_SOURCE",
    "GCS_SOURCE",
    "KNOWN_SOURCES",
    "MINIO_SOURCE",
    "S3_SOURCE",
    "SUPABASE_SOURCE",
    "Source",
]


class Source(StrEnum):
    """Which provider's notification an event was parsed from."""

    S3 = "s3"
    MINIO = "minio"
    AZURE = "azure"
    GCS = "gcs"
    SUPABASE = "supabase"
    B2 = "b2"
    BOX = "box"
    CLOUDINARY = "cloudinary"
    APPWRITE = "appwrite"


KNOWN_SOURCES: Final[frozenset[str]] = frozenset(source.value for source in Source)
"""Every ``source`` value the bridge writes."""

# The sources as plain str, as the parsers write them: the codec and the field
# limits take only exact str values (type(value) is str), never an enum member.
S3_SOURCE: Final = Source.S3.value
"""Events parsed from Amazon S3 records (MinIO's: ``minio``)."""
MINIO_SOURCE: Final = Source.MINIO.value
"""Events parsed from MinIO records."""
AZURE_SOURCE: Final = Source.AZURE.value
"""Events parsed from Azure Blob Storage."""
GCS_SOURCE: Final = Source.GCS.value
"""Events parsed from GCS notifications."""
SUPABASE_SOURCE: Final = Source.SUPABASE.value
"""Events parsed from Supabase Storage webhooks."""
B2_SOURCE: Final = Source.B2.value
"""Events parsed from Backblaze B2 event notifications."""
BOX_SOURCE: Final = Source.BOX.value
"""Events parsed from Box webhooks."""
CLOUDINARY_SOURCE: Final = Source.CLOUDINARY.value
"""Events parsed from Cloudinary notifications."""
APPWRITE_SOURCE: Final = Source.APPWRITE.value
"""Events parsed from Appwrite Storage webhooks."""
