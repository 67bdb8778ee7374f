"""Azure Event Grid deliveries for tests: Blob Storage events in both delivery schemas.

Built from the structures Azure documents for Blob Storage events: the Event
Grid schema (``topic``, ``eventType``, ``eventTime``, ``metadataVersion``) and
CloudEvents 1.0 (``source``, ``type``, ``time``, ``specversion``) share the
same ``data``. Pass :data:`tests.support.builders.ABSENT` to leave a member out.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from tests.support.builders import ABSENT

SUBSCRIPTION = "5f3e1a2b-7c4d-4e8f-9a0b-1c2d3e4f5a6b"
ACCOUNT = "contosomedia"
CONTAINER = "uploads"
BLOB = "2026/summer trip/beach+sunset 100%.jpg"
SEQUENCER = "00000000000004420000000000028963"
EVENT_ID = "831e1650-001e-001b-66ab-eeb76e069631"
EVENT_TIME = "2026-11-25T10:00:00.9584103Z"
ETAG = "0x8D4BCC2E4835CD0"


def account_resource(account: str = ACCOUNT) -> str:
    """The ARM resource id of a storage account: the ``topic`` / ``source``."""
    return (
        f"/subscriptions/{SUBSCRIPTION}/resourceGroups/media-rg/providers/Microsoft.Storage"
        f"/storageAccounts/{account}"
    )


def blob_subject(container: str = CONTAINER, blob: str = BLOB) -> str:
    """The ``subject`` of a blob event: the blob's name as written, not encoded."""
    return f"/blobServices/default/containers/{container}/blobs/{blob}"


def blob_url(container: str = CONTAINER, blob: str = BLOB, endpoint: str = "blob") -> str:
    """``data.url``: the blob's URL, its name percent-encoded."""
    return f"https://{ACCOUNT}.{endpoint}.core.windows.net/{container}/{quote(blob, safe='/')}"


def _present(members: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in members.items() if value is not ABSENT}


def blob_data(
    *,
    api: Any = "PutBlob",
    sequencer: Any = SEQUENCER,
    etag: Any = ETAG,
    content_length: Any = 2457600,
    content_type: Any = "image/jpeg",
    version_id: Any = ABSENT,
    url: Any = None,
) -> dict[str, Any]:
    """The ``data`` of a BlobCreated event (also used, trimmed, for the other types)."""
    return _present(
        {
            "api": api,
            "clientRequestId": "6d79dbfb-0e37-4fc4-981f-442c9ca65760",
            "requestId": "831e1650-001e-001b-66ab-eeb76e000000",
            "eTag": etag,
            "contentType": content_type,
            "contentLength": content_length,
            "blobType": "BlockBlob",
            "versionId": version_id,
            "url": blob_url() if url is None else url,
            "sequencer": sequencer,
            "storageDiagnostics": {"batchId": "b68529f3-68cd-4744-baa4-3c0498ec19f0"},
        }
    )


def deleted_data(*, api: Any = "DeleteBlob", sequencer: Any = SEQUENCER) -> dict[str, Any]:
    """The ``data`` of a BlobDeleted event: no ETag, no length."""
    return _present(
        {
            "api": api,
            "requestId": "4c2359fe-001e-00ba-0e04-585868000000",
            "contentType": "image/jpeg",
            "blobType": "BlockBlob",
            "url": blob_url(),
            "sequencer": sequencer,
            "storageDiagnostics": {"batchId": "b68529f3-68cd-4744-baa4-3c0498ec19f0"},
        }
    )


def event_grid_event(
    *,
    event_type: Any = "Microsoft.Storage.BlobCreated",
    event_id: Any = EVENT_ID,
    topic: Any = None,
    subject: Any = None,
    event_time: Any = EVENT_TIME,
    data: Any = None,
    metadata_version: Any = "1",
) -> dict[str, Any]:
    """One event in the Event Grid schema (deliveries are arrays of these)."""
    return _present(
        {
            "topic": account_resource() if topic is None else topic,
            "subject": blob_subject() if subject is None else subject,
            "eventType": event_type,
            "eventTime": event_time,
            "id": event_id,
            "data": blob_data() if data is None else data,
            "dataVersion": "",
            "metadataVersion": metadata_version,
        }
    )


def cloud_event(
    *,
    event_type: Any = "Microsoft.Storage.BlobCreated",
    event_id: Any = EVENT_ID,
    source: Any = None,
    subject: Any = None,
    event_time: Any = EVENT_TIME,
    data: Any = None,
    specversion: Any = "1.0",
) -> dict[str, Any]:
    """One event in the CloudEvents 1.0 schema (delivered alone or in an array)."""
    return _present(
        {
            "source": account_resource() if source is None else source,
            "subject": blob_subject() if subject is None else subject,
            "type": event_type,
            "time": event_time,
            "id": event_id,
            "data": blob_data() if data is None else data,
            "specversion": specversion,
        }
    )


def validation_event(code: Any = "512d38b6-c7b8-40c8-89fe-f46f9e9622b6") -> dict[str, Any]:
    """Event Grid's subscription-validation handshake (Event Grid schema)."""
    return {
        "id": "2d1781af-3a4c-4d7c-bd0c-e34b19da4e66",
        "topic": account_resource(),
        "subject": "",
        "data": {
            "validationCode": code,
            "validationUrl": "https://rp-eastus2.eventgrid.azure.net:553/eventsubscriptions/"
            "seqgate/validate?id=512d38b6-c7b8-40c8-89fe-f46f9e9622b6&t=2026-11-25T10:00:00Z"
            "&apiVersion=2018-05-01-preview&token=1A1A1A1A",
        },
        "eventType": "Microsoft.EventGrid.SubscriptionValidationEvent",
        "eventTime": "2026-11-25T09:59:58.1234567Z",
        "metadataVersion": "1",
        "dataVersion": "1",
    }
