"""Builders of Google Cloud Storage notifications as Pub/Sub delivers them (test fixtures).

The object resource follows the JSON API's ``storage#object`` (int64 values
such as ``generation`` and ``size`` written as decimal strings); the attributes
are those a notification configuration attaches; the message and envelopes are
Pub/Sub's push and pull forms, with ``data`` in standard base64.
"""

from __future__ import annotations

import base64
import json
from typing import Any
from urllib.parse import quote

ABSENT: Any = object()
"""A member value that means: leave the member out."""

BUCKET = "media-uploads"
NAME = "2026/summer trip/beach+sunset 100%.jpg"
GENERATION = "1764064800123456"
NOTIFICATION_CONFIG = "projects/_/buckets/media-uploads/notificationConfigs/7"
SUBSCRIPTION = "projects/seqgate-demo/subscriptions/gcs-events-push"


def _present(members: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in members.items() if value is not ABSENT}


def object_resource(
    *,
    bucket: Any = BUCKET,
    name: Any = NAME,
    generation: Any = GENERATION,
    metageneration: Any = "1",
    size: Any = "2457600",
    etag: Any = "CIDe8pLzjIoDEAE=",
    content_type: Any = "image/jpeg",
    time_created: Any = "2026-11-25T10:00:00.123Z",
    updated: Any = "2026-11-25T10:00:00.123Z",
    time_deleted: Any = ABSENT,
    kind: Any = "storage#object",
) -> dict[str, Any]:
    """The JSON API object resource GCS puts (base64) in ``data`` with JSON_API_V1."""
    encoded = quote(name, safe="") if isinstance(name, str) else "x"
    return _present(
        {
            "kind": kind,
            "id": f"{bucket}/{name}/{generation}",
            "selfLink": f"https://www.googleapis.com/storage/v1/b/{bucket}/o/{encoded}",
            "mediaLink": f"https://storage.googleapis.com/download/storage/v1/b/{bucket}/o/"
            f"{encoded}?generation={generation}&alt=media",
            "name": name,
            "bucket": bucket,
            "generation": generation,
            "metageneration": metageneration,
            "contentType": content_type,
            "storageClass": "STANDARD",
            "size": size,
            "md5Hash": "1B2M2Y8AsgTpgAmY7PhCfg==",
            "crc32c": "AAAAAA==",
            "etag": etag,
            "timeCreated": time_created,
            "updated": updated,
            "timeStorageClassUpdated": time_created,
            "timeDeleted": time_deleted,
        }
    )


def notification_attributes(
    *,
    event_type: Any = "OBJECT_FINALIZE",
    bucket: Any = BUCKET,
    name: Any = NAME,
    generation: Any = GENERATION,
    payload_format: Any = "JSON_API_V1",
    event_time: Any = "2026-11-25T10:00:00.123456Z",
    overwrote_generation: Any = ABSENT,
    overwritten_by_generation: Any = ABSENT,
) -> dict[str, Any]:
    """The Pub/Sub attributes of one GCS notification."""
    return _present(
        {
            "notificationConfig": NOTIFICATION_CONFIG,
            "eventType": event_type,
            "payloadFormat": payload_format,
            "bucketId": bucket,
            "objectId": name,
            "objectGeneration": generation,
            "eventTime": event_time,
            "overwroteGeneration": overwrote_generation,
            "overwrittenByGeneration": overwritten_by_generation,
        }
    )


def encode_data(value: Any) -> str:
    """Standard base64 of ``value``: bytes as they are, a str as UTF-8, anything else as JSON."""
    if isinstance(value, str):
        value = value.encode("utf-8")
    elif not isinstance(value, bytes):
        value = json.dumps(value).encode("utf-8")
    return base64.b64encode(value).decode("ascii")


def pubsub_message(
    resource: Any,
    attributes: Any,
    *,
    message_id: str = "8417395018764212",
    publish_time: str = "2026-11-25T10:00:00.456Z",
) -> dict[str, Any]:
    """A Pub/Sub message; ``resource`` None means payload NONE (no ``data``)."""
    message: dict[str, Any] = {
        "attributes": attributes,
        "messageId": message_id,
        "message_id": message_id,
        "publishTime": publish_time,
        "publish_time": publish_time,
    }
    if resource is not None:
        message["data"] = encode_data(resource)
    return message


def push_envelope(message: Any, subscription: str = SUBSCRIPTION) -> dict[str, Any]:
    """The body a push subscription POSTs."""
    return {"message": message, "subscription": subscription}


def pull_response(*messages: Any) -> dict[str, Any]:
    """A ``projects.subscriptions.pull`` response holding ``messages``."""
    return {
        "receivedMessages": [
            {"ackId": f"ack-{index}-RVNEUAYWLF1GSFE3GQhoUQ5PXiM", "message": message}
            for index, message in enumerate(messages)
        ]
    }


def notification(
    event_type: str = "OBJECT_FINALIZE",
    *,
    payload: bool = True,
    resource: dict[str, Any] | None = None,
    **attribute_overrides: Any,
) -> dict[str, Any]:
    """A pulled message for one change: the resource (unless ``payload`` is off) and attributes."""
    attribute_overrides.setdefault("payload_format", "JSON_API_V1" if payload else "NONE")
    attributes = notification_attributes(event_type=event_type, **attribute_overrides)
    body = None
    if payload:
        body = object_resource() if resource is None else resource
    return pubsub_message(body, attributes)
