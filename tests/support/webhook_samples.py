"""Sample bodies and signatures of the webhook providers (B2, Box, Cloudinary, Appwrite).

The builders return documents shaped like the providers' own, with every
member overridable (``ABSENT`` from :mod:`tests.support.builders` leaves one out). The
signing helpers follow each provider's documented recipe, written here
independently of the verifiers under test.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from typing import Any
from urllib.parse import unquote_to_bytes

from hypothesis import strategies as st

from tests.support.builders import ABSENT
from tests.support.strategies import json_documents as shared_json_documents


def _present(members: dict[str, Any]) -> dict[str, Any]:
    return {name: value for name, value in members.items() if value is not ABSENT}


def body_bytes(document: object) -> bytes:
    """A document as a provider would send it: compact JSON, UTF-8."""
    return json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def new_key() -> str:
    """A fresh random signing key, as a provider console would generate one."""
    return secrets.token_urlsafe(32)


# --------------------------------------------------------------------------- B2


def b2_event(**members: Any) -> dict[str, Any]:
    """One element of a B2 notification's ``events`` array (an upload by default)."""
    event: dict[str, Any] = {
        "accountId": "e85c6a500333",
        "bucketId": "aea8c5bc362ae55070130333",
        "bucketName": "example-photos",
        "contentSha1": "f6c2ec3b5ddf5bbf4a1b6bb0e6ab7e3d0d4bd1b2",
        "eventId": "c0a4ee2e-8d76-4d54-b6d4-8f5e1f6b9a01",
        "eventTimestamp": 1764064800123,
        "eventType": "b2:ObjectCreated:Upload",
        "eventVersion": 1,
        "matchedRuleName": "photoUploads",
        "objectName": "2026/summer trip/beach+sunset.jpg",
        "objectSize": 2457600,
        "objectVersionId": "4_zaea8c5bc362ae55070130333_f1000000000000001_d20261125_m100000"
        "_c000_v0001000_t0001",
    }
    event.update(members)
    return _present(event)


def b2_body(*events: dict[str, Any]) -> dict[str, Any]:
    return {"events": list(events)}


def b2_signature(body: bytes, secret: str) -> str:
    """The ``x-bz-event-notification-signature`` value B2 sends for ``body``."""
    return "v1=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


# --------------------------------------------------------------------------- Box


def box_source(**members: Any) -> dict[str, Any]:
    """A Box file as webhook ``source`` (full form, as sent for uploads)."""
    source: dict[str, Any] = {
        "id": "1442259386371",
        "type": "file",
        "file_version": {
            "type": "file_version",
            "id": "1577392874771",
            "sha1": "85136c79cbf9fe36bb9d05d0639c70c265c18d37",
        },
        "sequence_id": "2",
        "etag": "2",
        "sha1": "85136c79cbf9fe36bb9d05d0639c70c265c18d37",
        "name": "Q3 report.pdf",
        "description": "",
        "size": 629644,
        "path_collection": {
            "total_count": 2,
            "entries": [
                {
                    "type": "folder",
                    "id": "0",
                    "sequence_id": None,
                    "etag": None,
                    "name": "All Files",
                },
                {
                    "type": "folder",
                    "id": "163742927441",
                    "sequence_id": "0",
                    "etag": "0",
                    "name": "Reports",
                },
            ],
        },
        "created_at": "2026-11-25T02:00:00-08:00",
        "modified_at": "2026-11-25T02:00:00-08:00",
        "parent": {
            "type": "folder",
            "id": "163742927441",
            "sequence_id": "0",
            "etag": "0",
            "name": "Reports",
        },
        "item_status": "active",
    }
    source.update(members)
    return _present(source)


def box_event(trigger: str = "FILE.UPLOADED", **members: Any) -> dict[str, Any]:
    """A Box webhook V2 body."""
    event: dict[str, Any] = {
        "type": "webhook_event",
        "id": "7c3a1f0e-5b2d-4e8a-9f61-2d0b8c4e7a13",
        "created_at": "2026-11-25T02:00:01-08:00",
        "trigger": trigger,
        "webhook": {"id": "5514817", "type": "webhook"},
        "created_by": {
            "type": "user",
            "id": "20318822",
            "name": "Ada Example",
            "login": "ada@example.com",
        },
        "source": box_source(),
        "additional_info": [],
    }
    event.update(members)
    return _present(event)


def box_trashed_source(file_id: str = "1442259386371") -> dict[str, Any]:
    """The bare ``source`` Box sends with FILE.TRASHED and FILE.DELETED."""
    return {"id": file_id, "type": "file"}


def box_headers(
    body: bytes,
    timestamp: str,
    primary_key: str | None,
    secondary_key: str | None,
) -> dict[str, str]:
    """The headers of a Box delivery of ``body`` signed with the given keys."""

    def sign(key: str) -> str:
        digest = hmac.new(key.encode(), body + timestamp.encode(), hashlib.sha256).digest()
        return base64.b64encode(digest).decode()

    headers = {
        "BOX-DELIVERY-ID": "f96bb54b-ee16-4fc5-aa65-8c2d9e5b546f",
        "BOX-DELIVERY-TIMESTAMP": timestamp,
        "BOX-SIGNATURE-ALGORITHM": "HmacSHA256",
        "BOX-SIGNATURE-VERSION": "1",
    }
    if primary_key is not None:
        headers["BOX-SIGNATURE-PRIMARY"] = sign(primary_key)
    if secondary_key is not None:
        headers["BOX-SIGNATURE-SECONDARY"] = sign(secondary_key)
    return headers


# --------------------------------------------------------------------------- Cloudinary

CLOUD_NAME = "demo-cloud"


def cloudinary_upload(**members: Any) -> dict[str, Any]:
    """A Cloudinary ``upload`` notification."""
    document: dict[str, Any] = {
        "notification_type": "upload",
        "timestamp": "2026-11-25T10:00:00+00:00",
        "request_id": "799b7a3e1f2b4c5d6e7f8091a2b3c4d5",
        "asset_id": "3515c6000a548515f1134043f9785c2f",
        "public_id": "products/red shoes+laces",
        "version": 1764064800,
        "version_id": "7d2cc533bee9ff39f7da7414b61fce7e",
        "width": 1920,
        "height": 1080,
        "format": "jpg",
        "resource_type": "image",
        "created_at": "2026-11-25T10:00:00Z",
        "tags": [],
        "bytes": 120253,
        "type": "upload",
        "etag": "2c1c4a9f3b7f5d3a6e0c9f3e1a2b4c5d",
        "placeholder": False,
        "url": "http://res.cloudinary.com/demo-cloud/image/upload/v1764064800/products/red%20shoes%2Blaces.jpg",
        "secure_url": "https://res.cloudinary.com/demo-cloud/image/upload/v1764064800/products/red%20shoes%2Blaces.jpg",
        "asset_folder": "products",
        "display_name": "red shoes+laces",
        "original_filename": "red shoes+laces",
        "api_key": "614335564976464",
        "notification_context": {
            "triggered_at": "2026-11-25T10:00:00.517Z",
            "triggered_by": {"source": "api", "id": "614335564976464"},
        },
        "signature_key": "614335564976464",
    }
    document.update(members)
    return _present(document)


def cloudinary_resource(**members: Any) -> dict[str, Any]:
    """One element of a ``delete`` notification's ``resources``."""
    resource: dict[str, Any] = {
        "resource_type": "image",
        "type": "upload",
        "asset_id": "3515c6000a548515f1134043f9785c2f",
        "public_id": "products/red shoes+laces",
        "version": 1764064800,
        "asset_folder": "products",
        "display_name": "red shoes+laces",
    }
    resource.update(members)
    return _present(resource)


def cloudinary_delete(*resources: Any, **members: Any) -> dict[str, Any]:
    """A Cloudinary ``delete`` notification."""
    document: dict[str, Any] = {
        "notification_type": "delete",
        "resources": list(resources) or [cloudinary_resource()],
        "notification_context": {
            "triggered_at": "2026-11-25T11:30:00.204Z",
            "triggered_by": {"source": "ui", "id": "ada@example.com"},
        },
        "signature_key": "614335564976464",
    }
    document.update(members)
    return _present(document)


def cloudinary_rename(**members: Any) -> dict[str, Any]:
    """A Cloudinary ``rename`` notification."""
    document: dict[str, Any] = {
        "notification_type": "rename",
        "asset_id": "3515c6000a548515f1134043f9785c2f",
        "from_public_id": "products/red shoes+laces",
        "to_public_id": "archive/red shoes+laces",
        "resource_type": "image",
        "type": "upload",
        "version": 1764064800,
        "notification_context": {
            "triggered_at": "2026-11-25T12:00:00.000Z",
            "triggered_by": {"source": "ui", "id": "ada@example.com"},
        },
        "signature_key": "614335564976464",
    }
    document.update(members)
    return _present(document)


def cloudinary_signature(body: bytes, timestamp: str, secret: str, algorithm: str = "sha1") -> str:
    """The ``X-Cld-Signature`` Cloudinary sends: hex digest of body, timestamp, secret."""
    return hashlib.new(algorithm, body + timestamp.encode() + secret.encode()).hexdigest()


# --------------------------------------------------------------------------- Appwrite

APPWRITE_URL = "https://hooks.example.com/appwrite/storage?tenant=a%20b"


def appwrite_file(**members: Any) -> dict[str, Any]:
    """An Appwrite storage file document, the body of a storage webhook."""
    document: dict[str, Any] = {
        "$id": "6745a1b2c3d4e5f60718",
        "bucketId": "avatars",
        "$createdAt": "2026-11-25T10:00:00.123+00:00",
        "$updatedAt": "2026-11-25T10:00:00.123+00:00",
        "$permissions": ['read("any")'],
        "name": "portrait.png",
        "signature": "5d41402abc4b2a76b9719d911017c592",
        "mimeType": "image/png",
        "sizeOriginal": 48213,
        "chunksTotal": 1,
        "chunksUploaded": 1,
    }
    document.update(members)
    return _present(document)


def appwrite_events(bucket: str, file_id: str, action: str) -> str:
    """``X-Appwrite-Webhook-Events`` as Appwrite sends it: every matching pattern."""
    names = []
    for b in (bucket, "*"):
        for f in (file_id, "*"):
            names.append(f"buckets.{b}.files.{f}.{action}")
    for b in (bucket, "*"):
        for f in (file_id, "*"):
            names.append(f"buckets.{b}.files.{f}")
    names += [f"buckets.{bucket}.files", "buckets.*.files", f"buckets.{bucket}", "buckets.*"]
    return ",".join(names)


def appwrite_signature(url: str, body: bytes, key: str) -> str:
    """``X-Appwrite-Webhook-Signature``: base64 HMAC-SHA1 of the decoded URL and the body."""
    digest = hmac.new(key.encode(), unquote_to_bytes(url) + body, hashlib.sha1).digest()
    return base64.b64encode(digest).decode()


# --------------------------------------------------------------------------- arbitrary JSON


def json_documents(*member_names: str) -> st.SearchStrategy[Any]:
    """Arbitrary JSON values whose objects often use ``member_names`` (a provider's vocabulary)."""
    return shared_json_documents(member_names)
