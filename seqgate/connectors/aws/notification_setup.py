"""Amazon S3 notification configuration: the reading and writing (boto3).

The decisions live in :mod:`seqgate.connectors.aws.notification_rules`; this module only
talks to S3. Every failure becomes an :class:`AwsSetupError` whose message says
what S3 answered and what to do about it.
"""

from __future__ import annotations

from typing import Any

from seqgate.connectors.aws.notification_rules import EVENTBRIDGE_SECTION, SECTIONS
from seqgate.connectors.errors import AwsSetupError

__all__ = [
    "bucket_region",
    "read_configuration",
    "s3_client",
    "write_configuration",
]


def s3_client(region: str | None, endpoint_url: str | None) -> Any:
    import boto3  # type: ignore[import-untyped,import-not-found,unused-ignore]
    from botocore.config import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        Config,
    )

    return boto3.session.Session().client(
        "s3",
        region_name=region,
        endpoint_url=endpoint_url,
        config=Config(connect_timeout=10, retries={"max_attempts": 3, "mode": "standard"}),
    )


def _refused(action: str, bucket: str, error: Exception) -> AwsSetupError:
    from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        ClientError,
    )

    if not isinstance(error, ClientError):
        return AwsSetupError(
            f"{action} on bucket {bucket!r} failed: {error} (check --endpoint-url/--region)"
        )
    code = error.response.get("Error", {}).get("Code", "")
    text = error.response.get("Error", {}).get("Message", str(error))
    hints = {
        "NoSuchBucket": "check --bucket",
        "AccessDenied": "the credentials need s3:GetBucketNotification and"
        " s3:PutBucketNotification on the bucket",
        "InvalidArgument": "S3 could not validate the destination: it must exist in the"
        " bucket's Region and allow S3 to send to it (`seqgate aws queue-policy`)",
    }
    hint = hints.get(code, "see the AWS error above")
    return AwsSetupError(f"S3 refused {action} on bucket {bucket!r}: {code} {text}; {hint}")


def read_configuration(client: Any, bucket: str) -> dict[str, Any]:
    """The bucket's current notification configuration (its rule sections only)."""
    from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        BotoCoreError,
        ClientError,
    )

    try:
        answer = client.get_bucket_notification_configuration(Bucket=bucket)
    except (BotoCoreError, ClientError) as error:
        raise _refused("GetBucketNotificationConfiguration", bucket, error) from error
    wanted = (*SECTIONS, EVENTBRIDGE_SECTION)
    return {name: value for name, value in answer.items() if name in wanted}


def bucket_region(client: Any, bucket: str) -> str:
    from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        BotoCoreError,
        ClientError,
    )

    try:
        location = client.get_bucket_location(Bucket=bucket).get("LocationConstraint")
    except (BotoCoreError, ClientError) as error:
        raise _refused("GetBucketLocation", bucket, error) from error
    # S3 answers no constraint for us-east-1 and the legacy "EU" for eu-west-1.
    if not location:
        return "us-east-1"
    return "eu-west-1" if location == "EU" else str(location)


def write_configuration(client: Any, bucket: str, configuration: dict[str, Any]) -> None:
    """Replace the bucket's whole configuration with ``configuration``."""
    from botocore.exceptions import (  # type: ignore[import-untyped,import-not-found,unused-ignore]
        BotoCoreError,
        ClientError,
    )

    try:
        client.put_bucket_notification_configuration(
            Bucket=bucket, NotificationConfiguration=configuration
        )
    except (BotoCoreError, ClientError) as error:
        raise _refused("PutBucketNotificationConfiguration", bucket, error) from error
