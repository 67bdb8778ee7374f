"""The provider routes' options of `seqgate bridge http` (GCS, Azure, Supabase, B2, Box,
Cloudinary, Appwrite): their secrets, checked together, become one `WebhookSettings`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import click

from seqgate.cli.options import gathered, setting, stacked
from seqgate.connectors.auth.gcs_jwks import GOOGLE_JWKS_URL
from seqgate.runtime.errors import UsageError

if TYPE_CHECKING:
    from seqgate.connectors.auth.gcs_jwks import JsonWebKeys, JwksCache
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
            " unless set otherwise); POST /gcs is served only when set.",
        ),
        setting(
            "--gcs-jwks-url",
            "SEQGATE_GCS_JWKS_URL",
            default=None,
            help=f"Where Google's signing keys are fetched (default {GOOGLE_JWKS_URL}): at"
            " startup (the bridge does not start without them), then again by the answer's"
            " Cache-Control max-age and when a token names an unknown key.",
        ),
        setting(
            "--gcs-jwks-file",
            "SEQGATE_GCS_JWKS_FILE",
            default=None,
            help="Instead of fetching: a saved JSON Web Key Set (a copy of the URL's answer),"
            " for hosts that cannot reach Google; refresh it when Google rotates keys.",
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
    gcs_jwks_url: str | None,
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
        gcs=_gcs_verifier(gcs_audience, gcs_jwks_url, gcs_jwks_file, gcs_service_account),
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
    audience: str | None,
    jwks_url: str | None,
    jwks_file: str | None,
    service_account: str | None,
) -> GcsPushVerifier | None:
    """The verifier of POST /gcs from --gcs-audience, the keys' --gcs-jwks-url (fetched now)
    or --gcs-jwks-file, and --gcs-service-account."""
    from seqgate.connectors.auth.gcs_oidc import GcsPushVerifier

    if not audience:
        for flag, value in (
            ("--gcs-jwks-url", jwks_url),
            ("--gcs-jwks-file", jwks_file),
            ("--gcs-service-account", service_account),
        ):
            if value:
                raise UsageError(f"{flag}: requires --gcs-audience")
        return None
    if jwks_url and jwks_file:
        raise UsageError("--gcs-jwks-url: give it or --gcs-jwks-file, not both")
    keys = _key_file(jwks_file) if jwks_file else _fetched_keys(jwks_url or GOOGLE_JWKS_URL)
    return GcsPushVerifier(keys, audience, service_account or None)


def _key_file(path: str) -> JsonWebKeys:
    from seqgate.connectors.auth.gcs_jwks import load_jwks

    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        problem = error.strerror if isinstance(error, OSError) else "not UTF-8 text"
        raise UsageError(f"--gcs-jwks-file {path}: cannot read it ({problem})") from error
    try:
        return load_jwks(text)
    except ValueError as error:
        raise UsageError(f"--gcs-jwks-file {path}: {error}") from error


def _fetched_keys(url: str) -> JwksCache:
    from seqgate.connectors.auth.gcs_jwks import JwksCache
    from seqgate.connectors.errors import JwksFetchError

    if urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise UsageError(f"--gcs-jwks-url {url!r}: must be an http(s) URL")
    cache = JwksCache(url)
    try:
        cache.load()
    except JwksFetchError as error:
        raise UsageError(
            f"--gcs-jwks-url: Google's signing keys could not be fetched at startup: {error};"
            " check the address and the network (a proxy: HTTPS_PROXY), or give"
            " --gcs-jwks-file with a saved copy"
        ) from error
    return cache
