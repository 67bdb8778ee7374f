"""The exceptions of the bridge (`seqgate.connectors`), and the two statuses of a refused
webhook request.

Under the root `SeqgateError` (`seqgate.runtime.errors`), ending a command with one line
and the family's exit code (docs/operations.md, "Errors"):

* `UsageError` (exit 2): `NotificationSetupError`, `AwsSetupError`, `ListingError`,
  `FilterError`, `SqsSourceError`;
* `CommandFailed` (exit 1): `PublishError`, `KafkaSourceFatalError`.

Outside it, on purpose, because the bridge answers them on the spot and they never end a
command:

* `WebhookAuthError` and its `SnsVerificationError` - an HTTP answer, 401 (`MISSING`) or
  403 (`WRONG`), through the route table's one status mapping;
* `JwksFetchError` - Google's keys could not be fetched: at start-up the command makes it
  a `UsageError` naming `--gcs-jwks-url`; later, the keys in hand stay in use;
* `JsonRefused`, `KeyEncodingError` - a body or an object key that is not acceptable: a
  rejected record with its reason;
* `LocalFailure` - a message's records could not be queued: that message is reported
  incomplete and its source is not acknowledged (nothing is lost), the others go on.
"""

from __future__ import annotations

from typing import Final

from seqgate.runtime.errors import CommandFailed, UsageError
from seqgate.schemas.reasons import RejectReason

MISSING: Final = 401
"""The status of a request without the credential its route asks for."""
WRONG: Final = 403
"""The status of a request whose credential is wrong (or unreadable)."""


class JwksFetchError(Exception):
    """The keys could not be fetched or read: one line naming the URL and the cause."""


class WebhookAuthError(Exception):
    """A request failed authentication: answer ``status`` (401 or 403)."""

    def __init__(self, status: int, message: str) -> None:
        if status not in (MISSING, WRONG):  # the bridge maps exactly these two
            raise ValueError(f"an authentication failure is {MISSING} or {WRONG}, not {status}")
        super().__init__(message)
        self.status = status
        self.message = message


class SnsVerificationError(WebhookAuthError):
    """The message is not an authentic, current SNS message for a configured topic (403)."""

    def __init__(self, message: str) -> None:
        super().__init__(WRONG, message)


class NotificationSetupError(UsageError, ValueError):
    """A request refused before anything is written; ``option`` is the flag at fault."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


class AwsSetupError(UsageError, RuntimeError):
    """S3 refused a request, or could not be reached."""


class ListingError(UsageError):
    """A listing could not start or could not finish: the bucket or container is missing,
    the credentials are missing or refused, or the endpoint did not answer."""


class KeyEncodingError(ValueError):
    """An object key that is not valid form encoding of UTF-8 text."""


class JsonRefused(ValueError):
    """Why a body is not acceptable JSON; its message and reason are the rejection's."""

    def __init__(self, message: str, reason: RejectReason = RejectReason.MALFORMED_JSON) -> None:
        super().__init__(message)
        self.reason = reason


class FilterError(UsageError, ValueError):
    """A filter setting that cannot mean what its author wanted."""


class PublishError(CommandFailed):
    """Kafka did not acknowledge everything: the source must not be acknowledged."""


class LocalFailure(Exception):
    """A message's records could not be queued (nothing more of it is)."""


class KafkaSourceFatalError(CommandFailed):
    """The bridge cannot go on; restarting it with the same settings would not help."""


class SqsSourceError(UsageError):
    """SQS refused the poller in a way that retrying will not cure."""
