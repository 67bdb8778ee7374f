"""The provider routes' options of `seqgate bridge http` (GCS, Azure, Supabase, B2, Box,
Cloudinary, Appwrite): their secrets, checked together, become one `WebhookSettings`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from seqgate.streams.cli.options import gathered, setting, stacked
from seqgate.streams.runtime.errors import UsageError

if TYPE_CHECKING:
    from seqgate.connectors.auth.gcs_oidc import GcsPushVerifier
    from seqgate.connectors.sources.webhook_routes import WebhookSettings


def webhook_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The provider routes' options of `bridge http`; the command receives one `webhooks`."""
    names = inspect.signature(webhook_settings).parameters
    with_webhooks = gathered(func, "webhooks", webhook_settings, names)
    options = [
        setting(
            "--gcs-audience",
            "SEQGATE_GCS_AUDIENCE",
            default=None,
            help="Audience of the Pub/Sub push subscription's OIDC token (its push endpoint URL"
            " unless set otherwise); POST /gcs is served only with --gcs-jwks-file.",
        ),
        setting(
            "--gcs-jwks-file",
            "SEQGATE_GCS_JWKS_FILE",
            default=None,
            help="JSON Web Key Set (a saved copy of https://www.googleapis.com/oauth2/v3/certs)"
            " that push tokens are verified with; refresh it when Google rotates keys.",
        ),
        setting(
            "--gcs-service-account",
            "SEQGATE_GCS_SERVICE_ACCOUNT",
            default=None,
            help="Email the push token must name, verified (default: any account).",
        ),
        setting(
            "--azure-secret",
            "SEQGATE_AZURE_SECRET",
            default=None,
            help="Shared secret of the Event Grid subscription, sent in the endpoint's query"
            " (?code=SECRET) or an X-Seqgate-Secret delivery header; POST/OPTIONS /azure are"
            " served only when set.",
        ),
        setting(
            "--supabase-secret",
            "SEQGATE_SUPABASE_SECRET",
            default=None,
            help="Value of the X-Seqgate-Secret header of the Supabase database webhook;"
            " POST /supabase is served only when set.",
        ),
        setting(
            "--b2-signing-secret",
            "SEQGATE_B2_SIGNING_SECRET",
            default=None,
            help="Signing secret of the B2 event notification rule; POST /b2 is served only"
            " when set.",
        ),
        setting(
            "--box-primary-key",
            "SEQGATE_BOX_PRIMARY_KEY",
            default=None,
            help="Primary signature key of the Box application; POST /box is served when this"
            " or --box-secondary-key is set.",
        ),
        setting(
            "--box-secondary-key",
            "SEQGATE_BOX_SECONDARY_KEY",
            default=None,
            help="Secondary signature key of the Box application (for key rotation).",
        ),
        setting(
            "--cloudinary-api-secret",
            "SEQGATE_CLOUDINARY_API_SECRET",
            default=None,
            help="API secret that signs Cloudinary notifications; POST /cloudinary is served"
            " only when set (with --cloudinary-cloud-name).",
        ),
        setting(
            "--cloudinary-cloud-name",
            "SEQGATE_CLOUDINARY_CLOUD_NAME",
            default=None,
            help="Cloud name of the product environment: the bucket of Cloudinary events.",
        ),
        setting(
            "--cloudinary-signature-algorithm",
            "SEQGATE_CLOUDINARY_SIGNATURE_ALGORITHM",
            default="sha1",
            type=click.Choice(["sha1", "sha256"]),
            help="The account's webhook signature algorithm.",
        ),
        setting(
            "--appwrite-signature-key",
            "SEQGATE_APPWRITE_SIGNATURE_KEY",
            default=None,
            help="Signature key of the Appwrite webhook; POST /appwrite is served only when"
            " set (with --appwrite-webhook-url).",
        ),
        setting(
            "--appwrite-webhook-url",
            "SEQGATE_APPWRITE_WEBHOOK_URL",
            default=None,
            help="The webhook's URL exactly as configured in Appwrite (it is signed): the"
            " public address, not --host/--port.",
        ),
    ]
    return stacked(with_webhooks, options)


def webhook_settings(
    gcs_audience: str | None,
    gcs_jwks_file: str | None,
    gcs_service_account: str | None,
    azure_secret: str | None,
    supabase_secret: str | None,
    b2_signing_secret: str | None,
    box_primary_key: str | None,
    box_secondary_key: str | None,
    cloudinary_api_secret: str | None,
    cloudinary_cloud_name: str | None,
    cloudinary_signature_algorithm: str,
    appwrite_signature_key: str | None,
    appwrite_webhook_url: str | None,
) -> WebhookSettings:
    """The provider routes from their options; a secret without its partner is refused."""
    from seqgate.connectors.sources.webhook_routes import (
        AppwriteSettings,
        CloudinarySettings,
        WebhookSettings,
    )

    cloudinary = _together(
        ("--cloudinary-api-secret", cloudinary_api_secret),
        ("--cloudinary-cloud-name", cloudinary_cloud_name),
    )
    appwrite = _together(
        ("--appwrite-signature-key", appwrite_signature_key),
        ("--appwrite-webhook-url", appwrite_webhook_url),
    )
    try:
        cloudinary_settings = (
            CloudinarySettings(*cloudinary, cloudinary_signature_algorithm) if cloudinary else None
        )
    except ValueError as error:
        raise UsageError(f"--cloudinary-cloud-name: {error}") from error
    return WebhookSettings(
        gcs=_gcs_verifier(gcs_audience, gcs_jwks_file, gcs_service_account),
        azure_secret=azure_secret or None,
        supabase_secret=supabase_secret or None,
        b2_signing_secret=b2_signing_secret or None,
        box_primary_key=box_primary_key or None,
        box_secondary_key=box_secondary_key or None,
        cloudinary=cloudinary_settings,
        appwrite=AppwriteSettings(*appwrite) if appwrite else None,
    )


def _together(
    first: tuple[str, str | None], second: tuple[str, str | None]
) -> tuple[str, str] | None:
    """The values of two (flag, value) options that only work together: both or neither."""
    (flag, value), (other_flag, other) = first, second
    if not value and not other:
        return None
    if not value or not other:
        missing, given = (flag, other_flag) if not value else (other_flag, flag)
        raise UsageError(f"{missing}: required with {given}")
    return value, other


def _gcs_verifier(
    audience: str | None, jwks_file: str | None, service_account: str | None
) -> GcsPushVerifier | None:
    """The verifier of POST /gcs from --gcs-audience, --gcs-jwks-file, --gcs-service-account."""
    from seqgate.connectors.auth.gcs_oidc import GcsPushVerifier, load_jwks

    pair = _together(("--gcs-audience", audience), ("--gcs-jwks-file", jwks_file))
    if pair is None:
        if service_account:
            raise UsageError("--gcs-service-account: requires --gcs-audience and --gcs-jwks-file")
        return None
    audience, jwks_file = pair
    try:
        text = Path(jwks_file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        problem = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise UsageError(f"--gcs-jwks-file {jwks_file}: cannot read it ({problem})") from error
    try:
        keys = load_jwks(text)
    except ValueError as error:
        raise UsageError(f"--gcs-jwks-file {jwks_file}: {error}") from error
    return GcsPushVerifier(keys, audience, service_account or None)
