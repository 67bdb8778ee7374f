"""Azure Blob Storage events delivered by Azure Event Grid, in both delivery schemas.

* **Event Grid schema**: a JSON array of events with ``id``, ``topic`` (the
  storage account's resource id), ``subject``, ``eventType``, ``eventTime``,
  ``data``, ``dataVersion`` and ``metadataVersion`` (``"1"``).
* **CloudEvents 1.0**: one event (structured mode) or an array (batch mode)
  with ``specversion`` (``"1.0"``), ``type``, ``source`` (the account's
  resource id), ``subject``, ``id``, ``time`` and ``data``.

``data`` is the same in both, so an event with ``specversion`` is read as a
CloudEvent and any other as an Event Grid event. Each event of an array is
parsed on its own with its ``record_index``; a single CloudEvent object is the
whole message (index None). No JSON input makes the parser raise.

Identity: ``azure://<account>.<container>/<blob path>``. The container is
Azure's bucket (one system topic serves every container of an account), but
its name is unique only within the account, which therefore qualifies it.
Account names are 3-24 lowercase letters and digits, container names
lowercase letters, digits and ``-`` (or ``$root``, ``$web``): neither holds
``.`` or ``/``, so the bucket splits back unambiguously; bucket filters select
containers and prefix filters see blob paths, as for S3. The account comes
from ``topic`` / ``source`` (``.../storageAccounts/<account>``), lowercased:
ARM ids are case-insensitive and account names lowercase, so this only merges
spellings of one account (unique per Azure cloud, which is not named).

Container and blob path come from ``subject``
(``/blobServices/default/containers/<container>/blobs/<path>``), which holds
the name as written: nothing is decoded, so a ``%`` or ``+`` is never misread.
``data.url`` percent-encodes it and its host differs between the blob and dfs
endpoints, so it is not used.

Event type -> outcome:

* ``Microsoft.Storage.BlobCreated`` -> ``created`` only when ``data.api`` is a
  committed write (:data:`COMMITTED_WRITE_APIS`). Data Lake Storage Gen2 sends
  one for ``CreateFile`` (an empty file opened) and SFTP for ``SftpCreate``;
  ``FlushWithClose`` / ``SftpCommit`` commit the content later with their own.
  Those are *ignored* (``azure_uncommitted_write``): they never announce
  content, so they are neither a kind to filter nor an error. Another API is
  ``unsupported_event_type``, so a new API shows in the rejected records. On
  hierarchical-namespace accounts a ``CopyBlob`` that does not finish at once
  reports BlobCreated when it *starts*; nothing tells, so it is ``created``.
* ``Microsoft.Storage.BlobDeleted`` -> ``removed`` (any API).
* ``Microsoft.Storage.BlobRenamed`` -> ``created`` for the destination named by
  ``subject``: tools that write a temporary name and rename it (Spark, Hadoop)
  announce their output only this way. The source name is only in
  ``data.sourceUrl``, URL-encoded, and one event yields one item, so its
  removal is not reported: a reconciliation listing finds it.
* ``Microsoft.Storage.BlobTierChanged`` -> ``storage_class_changed`` (the access
  tier is Azure's storage class); ``Microsoft.Storage.AsyncOperationInitiated``
  (a rehydration from the archive tier began) -> ``restore_started``.
* Other ``Microsoft.Storage.*`` types (directories, policy runs, storage tasks:
  :data:`AZURE_UNMAPPED_TYPES`) name no single blob: ``unsupported_event_type``.
* ``Microsoft.EventGrid.SubscriptionValidationEvent`` (the Event Grid schema's
  handshake, answered with :func:`validation_response`) and
  ``...SubscriptionDeletedEvent`` are ignored (``azure_subscription_validation``,
  ``azure_subscription_deleted``). CloudEvents subscriptions shake hands with an
  HTTP ``OPTIONS`` request instead: :func:`cloudevents_handshake_headers`.
* Any other type, or a ``topic`` / ``source`` that is not a storage account,
  is ``wrong_event_source``.

``position`` is ``data.sequencer`` lowercased. Azure calls it an opaque string
that orders the events of one blob name by ordinary string comparison. It is
hex of a fixed width (32 digits in Azure's flat-namespace examples, 48 with a
hierarchical namespace), so it is validated as hex (``invalid_sequencer``) but
its width is not enforced; at equal widths the processor's ``aws`` order is
exactly that string comparison. Required for ``created`` and ``removed``,
optional (validated when present) for the other kinds.

The event id is Event Grid's own ``id`` (docs/design.md §4.1), the same in both schemas
and on every redelivery. ``version_id`` is ``data.versionId`` (blob
versioning), ``size`` ``data.contentLength``, ``etag`` ``data.eTag``,
``event_time`` ``eventTime`` / ``time``. Event Grid signs nothing: a shared
secret in the endpoint's query string or a delivery header is checked by
:func:`seqgate.connectors.auth.azure.verify_azure_secret`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Final

from seqgate.connectors.parsers.identity_check import checked_identity
from seqgate.connectors.parsers.json_fields import (
    check_text,
    index_path,
    member_path,
    notification_object,
    object_member,
    optional_size,
    optional_string,
    required_member,
    required_string,
    sequencer_member,
    show,
)
from seqgate.connectors.parsers.results import Ignored, ParsedItem, ParseResult
from seqgate.schemas.errors import RecordRejected
from seqgate.schemas.kinds import (
    CREATED,
    REMOVED,
    RESTORE_STARTED,
    STORAGE_CLASS_CHANGED,
)
from seqgate.schemas.reasons import Rejection, RejectReason
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import AZURE_SOURCE

__all__ = [
    "AZURE_KINDS",
    "AZURE_SCHEME",
    "AZURE_UNMAPPED_TYPES",
    "COMMITTED_WRITE_APIS",
    "SUBSCRIPTION_DELETED_EVENT",
    "SUBSCRIPTION_VALIDATION_EVENT",
    "UNCOMMITTED_WRITE_APIS",
    "cloudevents_handshake_headers",
    "looks_like_azure",
    "parse_azure",
    "validation_response",
]

AZURE_SCHEME: Final = "azure"
"""The identity scheme: ``azure://<account>.<container>/<blob path>``."""

BLOB_CREATED: Final = "Microsoft.Storage.BlobCreated"
BLOB_DELETED: Final = "Microsoft.Storage.BlobDeleted"
BLOB_RENAMED: Final = "Microsoft.Storage.BlobRenamed"
SUBSCRIPTION_VALIDATION_EVENT: Final = "Microsoft.EventGrid.SubscriptionValidationEvent"
SUBSCRIPTION_DELETED_EVENT: Final = "Microsoft.EventGrid.SubscriptionDeletedEvent"

AZURE_KINDS: Final[Mapping[str, str]] = MappingProxyType(
    {
        BLOB_CREATED: CREATED,
        BLOB_DELETED: REMOVED,
        BLOB_RENAMED: CREATED,
        "Microsoft.Storage.BlobTierChanged": STORAGE_CLASS_CHANGED,
        "Microsoft.Storage.AsyncOperationInitiated": RESTORE_STARTED,
    }
)
"""The storage event types seqgate maps, and their kinds (BlobCreated: committed APIs only)."""

AZURE_UNMAPPED_TYPES: Final[Mapping[str, str]] = MappingProxyType(
    {
        "Microsoft.Storage.DirectoryCreated": "a directory (hierarchical namespace), not a blob",
        "Microsoft.Storage.DirectoryRenamed": "a directory: the blobs it moves are not named",
        "Microsoft.Storage.DirectoryDeleted": "a directory: the blobs it deletes are not named",
        "Microsoft.Storage.BlobInventoryPolicyCompleted": "an inventory run, not a blob change",
        "Microsoft.Storage.LifecyclePolicyCompleted": "a lifecycle policy run, not a blob change",
    }
    | {
        f"Microsoft.Storage.StorageTask{what}": "a storage task, not a blob change"
        for what in ("Queued", "Completed", "AssignmentQueued", "AssignmentCompleted")
    }
)
"""Documented storage event types seqgate deliberately does not map, and why."""

COMMITTED_WRITE_APIS: Final = frozenset(
    {"PutBlob", "PutBlockList", "CopyBlob", "FlushWithClose", "SftpCommit"}
)
"""``data.api`` values of a BlobCreated whose content is committed: kind ``created``."""

UNCOMMITTED_WRITE_APIS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "CreateFile": "Data Lake Storage opened an empty file; FlushWithClose commits its content",
        "SftpCreate": "SFTP opened an empty file; SftpCommit commits its content",
        "PutBlock": "a block was staged; PutBlockList commits the blob",
    }
)
"""``data.api`` values of a BlobCreated that commits no content yet: ignored."""

_SEQUENCED_KINDS: Final = frozenset({CREATED, REMOVED})
_SEQUENCED_WHY: Final = "Azure stamps every blob write and delete with data.sequencer"
_STORAGE_PREFIX: Final = "Microsoft.Storage."
_ACCOUNT_RESOURCE: Final = re.compile(
    r"/subscriptions/[^/]+/resourceGroups/[^/]+/providers/Microsoft\.Storage"
    r"/storageAccounts/([^/]+)",
    re.IGNORECASE,
)
_ACCOUNT_NAME: Final = re.compile(r"[a-z0-9]{3,24}")
_CONTAINER_NAME: Final = re.compile(r"\$?[a-z0-9][a-z0-9-]*")
_SUBJECT: Final = re.compile(r"/blobServices/default/containers/([^/]+)/blobs/(.+)", re.DOTALL)
_SUBJECT_EXPECTED: Final = "expected '/blobServices/default/containers/<container>/blobs/<path>'"
_TYPE_EXPECTED: Final = f"expected the event type, e.g. {BLOB_CREATED!r}"
_API_EXPECTED: Final = "expected the storage API that wrote the blob, e.g. 'PutBlob'"
_HEADER_VALUE: Final = re.compile(r"[\x21-\x7e]+(?:[ \t]+[\x21-\x7e]+)*")


@dataclass(frozen=True, slots=True)
class _Schema:
    """Where an event of one delivery schema keeps what both schemas carry."""

    type_member: str
    time_member: str
    account_member: str


_EVENT_GRID: Final = _Schema("eventType", "eventTime", "topic")
_CLOUDEVENTS: Final = _Schema("type", "time", "source")


# --------------------------------------------------------------------------- recognition


def _looks_like_event(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    if "eventType" in value:
        return True
    event_type = value.get("type")
    return (
        "specversion" in value
        and isinstance(event_type, str)
        and event_type.startswith("Microsoft.")
    )


def looks_like_azure(document: object) -> bool:
    """Whether ``document`` is an Event Grid delivery: an event or an array with one.

    An Event Grid schema event has ``eventType``; a CloudEvent from Azure has
    ``specversion`` and a ``type`` starting with ``Microsoft.`` (so other
    providers' CloudEvents are not claimed).
    """
    if isinstance(document, list):
        return any(_looks_like_event(event) for event in document)
    return _looks_like_event(document)


# --------------------------------------------------------------------------- handshakes


def validation_response(document: object) -> dict[str, str] | None:
    """What the route must answer to an Event Grid subscription-validation request.

    ``{"validationResponse": <data.validationCode>}`` when ``document`` holds a
    ``Microsoft.EventGrid.SubscriptionValidationEvent`` with a non-empty string
    code; None for any other document. Never raises.
    """
    for event in document if isinstance(document, list) else [document]:
        if not isinstance(event, dict):
            continue
        if event.get("eventType", event.get("type")) != SUBSCRIPTION_VALIDATION_EVENT:
            continue
        data = event.get("data")
        code = data.get("validationCode") if isinstance(data, dict) else None
        if isinstance(code, str) and code:
            return {"validationResponse": code}
    return None


def cloudevents_handshake_headers(request_origin: str) -> dict[str, str]:
    """The headers answering a CloudEvents webhook ``OPTIONS`` validation request.

    Event Grid sends ``WebHook-Request-Origin`` (``eventgrid.azure.net``); the
    receiver allows it by echoing it in ``WebHook-Allowed-Origin``, and allows
    any delivery rate (``WebHook-Allowed-Rate: *``). Raises ValueError for an
    origin that is empty or not a valid header value (control characters), so
    the route can answer 400 instead of echoing it.
    """
    if _HEADER_VALUE.fullmatch(request_origin) is None:
        raise ValueError(
            f"WebHook-Request-Origin {show(request_origin)} is not a valid header value: "
            "expected visible ASCII such as 'eventgrid.azure.net'"
        )
    return {"WebHook-Allowed-Origin": request_origin, "WebHook-Allowed-Rate": "*"}


# --------------------------------------------------------------------------- one event


def _schema_of(event: dict[object, object], path: str) -> _Schema:
    cloudevent = "specversion" in event
    member, expected = ("specversion", "1.0") if cloudevent else ("metadataVersion", "1")
    version = event.get(member)
    if version != expected and (cloudevent or version is not None):
        raise RecordRejected(
            RejectReason.UNSUPPORTED_SCHEMA_VERSION,
            f"{member_path(path, member)} is {show(version)}: seqgate reads CloudEvents 1.0 "
            '(specversion "1.0") and the Event Grid schema (metadataVersion "1")',
        )
    return _CLOUDEVENTS if cloudevent else _EVENT_GRID


def _check_mapped(event_type: str, field: str) -> str:
    kind = AZURE_KINDS.get(event_type)
    if kind is not None:
        return kind
    if not event_type.startswith(_STORAGE_PREFIX):
        raise RecordRejected(
            RejectReason.WRONG_EVENT_SOURCE,
            f"{field} {show(event_type)} is not an Azure Blob Storage event: this route reads "
            f"'{_STORAGE_PREFIX}*' events (route other services' events elsewhere)",
        )
    why = AZURE_UNMAPPED_TYPES.get(event_type)
    detail = f" (a documented type that seqgate does not map: {why})" if why else ""
    raise RecordRejected(
        RejectReason.UNSUPPORTED_EVENT_TYPE,
        f"{field} {show(event_type)} is not supported{detail}: seqgate maps "
        f"{', '.join(sorted(AZURE_KINDS))} (docs/kinds.md); narrow the subscription's "
        "included event types",
    )


def _account(event: dict[object, object], schema: _Schema, path: str) -> str:
    field = member_path(path, schema.account_member)
    resource = required_string(
        event, schema.account_member, path, "the storage account's resource id"
    )
    match = _ACCOUNT_RESOURCE.fullmatch(resource)
    if match is None:
        raise RecordRejected(
            RejectReason.WRONG_EVENT_SOURCE,
            f"{field} {show(resource)} is not a storage account: expected '/subscriptions/<id>"
            "/resourceGroups/<group>/providers/Microsoft.Storage/storageAccounts/<account>'",
        )
    account = match[1].lower()
    if _ACCOUNT_NAME.fullmatch(account) is None:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{field} names account {show(match[1])}: expected 3-24 lowercase letters and digits",
        )
    return account


def _container_and_blob(event: dict[object, object], path: str) -> tuple[str, str]:
    field = member_path(path, "subject")
    subject = required_string(event, "subject", path, "the blob's path in the storage account")
    match = _SUBJECT.fullmatch(subject)
    if match is None:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{field} {show(subject)} names no blob: {_SUBJECT_EXPECTED}",
        )
    container, blob = match[1], match[2]
    if _CONTAINER_NAME.fullmatch(container) is None:
        raise RecordRejected(
            RejectReason.INVALID_FIELD,
            f"{field} names container {show(container)}: expected lowercase letters, digits "
            "and '-'",
        )
    try:
        check_text(blob, field)
    except RecordRejected as rejected:
        raise RecordRejected(RejectReason.INVALID_KEY_ENCODING, rejected.message) from None
    return container, blob


def _uncommitted(api: str, field: str, index: int | None) -> Ignored:
    if api in UNCOMMITTED_WRITE_APIS:
        return Ignored(
            "azure_uncommitted_write",
            f"{BLOB_CREATED} from {api}: {UNCOMMITTED_WRITE_APIS[api]}",
            index,
        )
    raise RecordRejected(
        RejectReason.UNSUPPORTED_EVENT_TYPE,
        f"{field} {show(api)} is not a known write API: seqgate reports {BLOB_CREATED} as "
        f"created for {', '.join(sorted(COMMITTED_WRITE_APIS))} and ignores "
        f"{', '.join(sorted(UNCOMMITTED_WRITE_APIS))}",
    )


def _parse_event(event: object, index: int | None, origin: str) -> ParsedItem:
    path = "" if index is None else index_path("", index)
    event = notification_object(event, path, "an Event Grid event")
    schema = _schema_of(event, path)
    event_type = required_member(
        event, schema.type_member, path, str, missing=_TYPE_EXPECTED, invalid="a string"
    )
    if event_type == SUBSCRIPTION_VALIDATION_EVENT:
        return Ignored(
            "azure_subscription_validation",
            "Event Grid validates a new subscription; the route answers with the code",
            index,
        )
    if event_type == SUBSCRIPTION_DELETED_EVENT:
        return Ignored("azure_subscription_deleted", "Event Grid deleted the subscription", index)
    kind = _check_mapped(event_type, member_path(path, schema.type_member))
    event_id = required_string(event, "id", path, "the Event Grid event id")
    account = _account(event, schema, path)
    container, blob = _container_and_blob(event, path)
    data_path = member_path(path, "data")
    data = object_member(event, "data", path, expected="the storage event's data object")
    if event_type == BLOB_CREATED:
        api = required_member(
            data, "api", data_path, str, missing=_API_EXPECTED, invalid="a string such as 'PutBlob'"
        )
        if api not in COMMITTED_WRITE_APIS:
            return _uncommitted(api, member_path(data_path, "api"), index)
    sequencer = sequencer_member(
        data, data_path, required_because=_SEQUENCED_WHY if kind in _SEQUENCED_KINDS else None
    )
    bucket = f"{account}.{container}"
    checked_identity(AZURE_SCHEME, bucket, blob, path or "event")
    return ObjectEvent(
        id=event_id,
        source=AZURE_SOURCE,
        bucket=bucket,
        key=blob,
        kind=kind,
        event_name=event_type,
        position=None if sequencer is None else sequencer.lower(),
        version_id=optional_string(data, "versionId", data_path),
        size=optional_size(data, "contentLength", data_path),
        etag=optional_string(data, "eTag", data_path),
        event_time=optional_string(event, schema.time_member, path),
        origin=origin,
    )


# --------------------------------------------------------------------------- documents


def _parse_or_reject(event: object, index: int | None, origin: str) -> ParsedItem:
    try:
        return _parse_event(event, index, origin)
    except RecordRejected as rejected:
        return Rejection(rejected.reason, rejected.message, index)


def parse_azure(document: object, origin: str) -> ParseResult:
    """Normalize one Event Grid delivery (already JSON-decoded).

    An array gives one item per event, numbered by its index; a single event
    object (a structured-mode CloudEvent) gives one item for the whole
    message. Anything else, or an empty array, is ``not_a_notification``.
    ``origin`` is copied into each event. Never raises.
    """
    if isinstance(document, dict):
        return ParseResult.of(_parse_or_reject(document, None, origin))
    if not isinstance(document, list):
        return ParseResult.rejected(
            RejectReason.NOT_A_NOTIFICATION,
            f"the document is {show(document)}: expected an Event Grid array of events or a "
            "CloudEvent object",
        )
    if not document:
        return ParseResult.rejected(
            RejectReason.NOT_A_NOTIFICATION, "the event array is empty: expected at least one event"
        )
    return ParseResult(
        tuple(_parse_or_reject(event, index, origin) for index, event in enumerate(document))
    )
