"""`seqgate reconcile`: list a bucket, compare it with the committed state, repair the drift."""

from __future__ import annotations

import json
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

import click

from seqgate.cli.app import cli
from seqgate.cli.options import (
    application_option,
    input_topic_option,
    kafka_options,
    rejected_topic_option,
    setting,
)
from seqgate.cli.param_types import HttpUrl
from seqgate.cli.registry_options import registry_options
from seqgate.runtime.errors import UsageError
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings
from seqgate.runtime.progress import Meter
from seqgate.schemas.framing import SINGLE_OBJECT, Framing
from seqgate.schemas.listing import ListedObject
from seqgate.schemas.records import ObjectEvent
from seqgate.schemas.sources import AZURE_SOURCE, KNOWN_SOURCES, S3_SOURCE
from seqgate.streams.tools.drift import DRIFTS, Drift, Finding

PROVIDERS = {"s3": S3_SOURCE, "azure": AZURE_SOURCE}
REPAIRS_PER_BATCH = 1000


@cli.command()
@setting("--bucket", "SEQGATE_RECONCILE_BUCKET", required=True, help="Bucket (or container).")
@setting(
    "--provider",
    "SEQGATE_RECONCILE_PROVIDER",
    default="s3",
    type=click.Choice(sorted(PROVIDERS)),
    help="Listing API: s3 (also S3-compatible stores, with --endpoint-url) or azure.",
)
@setting(
    "--source",
    "SEQGATE_RECONCILE_SOURCE",
    default=None,
    help="The `source` of the bucket's events, when not the provider's: e.g. supabase or b2"
    " for their S3 endpoints (their notifications name objects supabase://, b2://).",
)
@setting("--prefix", "SEQGATE_RECONCILE_PREFIX", default="", help="Only keys under it.")
@setting(
    "--endpoint-url",
    "SEQGATE_S3_ENDPOINT_URL",
    default=None,
    type=HttpUrl("http://127.0.0.1:9000", path=False),
    help="S3 endpoint (an S3-compatible store, a local emulator); default: AWS's.",
)
@setting("--region", "SEQGATE_AWS_REGION", default=None, help="AWS region of the bucket.")
@setting(
    "--azure-connection-string",
    "SEQGATE_AZURE_CONNECTION_STRING",
    default=None,
    help="Azure Storage connection string (--provider azure); also read from"
    " AZURE_STORAGE_CONNECTION_STRING.",
)
@setting(
    "--grace-seconds",
    "SEQGATE_RECONCILE_GRACE_SECONDS",
    default=300,
    type=click.IntRange(min=0),
    help="Objects changed this recently are reported in flight, not as drift: their"
    " notifications may still be on their way to the input topic.",
)
@click.option("--publish", is_flag=True, help="Publish one repair event per drifted object.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@kafka_options
@input_topic_option
@rejected_topic_option
@application_option
@registry_options
def reconcile(
    bucket: str,
    provider: str,
    source: str | None,
    prefix: str,
    endpoint_url: str | None,
    region: str | None,
    azure_connection_string: str | None,
    grace_seconds: int,
    publish: bool,
    as_json: bool,
    kafka: KafkaSettings,
    input_topic: str,
    rejected_topic: str,
    application_id: str,
    framing: Framing,
) -> None:
    """Compare a bucket's listing with what the workers committed (docs/reconcile.md).

    Reads the committed state first (read_committed: the latest accepted event of each
    object under --prefix, and that event from the input topic), then lists the bucket.
    Each object is in_sync, missing (never accepted), behind (another version accepted),
    gone (accepted, no longer listed), in_flight (changed within --grace-seconds) or
    unknown (cannot be compared). With --publish, each missing, behind and gone object
    becomes one repair event on the input topic, which the workers accept only if nothing
    newer was accepted meanwhile. Exits 0 when nothing drifted, 1 when something did
    (published or not). A long run shows its progress on stderr.

    \b
    Example:
      seqgate reconcile --bootstrap-servers 127.0.0.1:9092 --bucket example-input \\
        --prefix incoming/ --publish
    """
    from seqgate.runtime.progress import Pace, ProgressLine
    from seqgate.runtime.topics import changelog_topic
    from seqgate.streams.tools.drift import compare
    from seqgate.streams.tools.reconcile import ReconcileTarget, committed_objects

    source = _source(provider, source)
    connection = azure_connection_string
    if provider == "azure" and not connection:  # the Azure SDK's own variable
        connection = os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    listing = _lister(provider, bucket, prefix, endpoint_url, region, connection)
    named = _identity_bucket(provider, bucket, connection)
    pace = Pace.from_environment()
    ensure_reachable(kafka)
    changelog = changelog_topic(application_id)
    target = ReconcileTarget(kafka, application_id, input_topic, changelog, framing)
    started = time.monotonic()
    with ProgressLine("reconcile: committed state", pace=pace) as meter:
        committed = committed_objects(target, source, named, prefix, meter)
    listed_at = time.monotonic()
    with ProgressLine("reconcile: listing", pace=pace) as meter:
        now_ms = int(time.time() * 1000)
        counted = _counting(listing, meter)
        findings = list(
            compare(source, named, counted, committed, now_ms=now_ms, grace_ms=grace_seconds * 1000)
        )
    listing_s = time.monotonic() - listed_at
    repairs = [f.repair for f in findings if f.drift in DRIFTS and f.repair is not None]
    published = (
        publish_repairs(kafka, input_topic, rejected_topic, repairs, framing) if publish else None
    )
    report = _report(
        provider,
        source,
        named,
        prefix,
        committed,
        findings,
        listing_s,
        published,
        time.monotonic() - started,
    )
    _print(report, findings, input_topic, as_json)
    if any(finding.drift in DRIFTS for finding in findings):
        sys.exit(1)


def _source(provider: str, source: str | None) -> str:
    if source is None:
        return PROVIDERS[provider]
    if source not in KNOWN_SOURCES:
        known = ", ".join(sorted(KNOWN_SOURCES))
        raise UsageError(f"--source: unknown source {source!r}; known sources are {known}")
    return source


def _lister(
    provider: str,
    bucket: str,
    prefix: str,
    endpoint_url: str | None,
    region: str | None,
    connection_string: str | None,
) -> Iterable[ListedObject]:
    """The listing, not started yet: the listers are generators, which run while the
    comparison consumes them."""
    if provider == "azure":
        from seqgate.connectors.listing.azure import list_azure

        if endpoint_url is not None or region is not None:
            raise UsageError(
                "--endpoint-url/--region are for --provider s3; give Azure its account"
                " with --azure-connection-string"
            )
        if not connection_string:
            raise UsageError(
                "--provider azure needs --azure-connection-string (or"
                " AZURE_STORAGE_CONNECTION_STRING)"
            )
        return list_azure(bucket, prefix=prefix, connection_string=connection_string)
    from seqgate.connectors.listing.s3 import list_s3

    if connection_string:
        raise UsageError("--azure-connection-string is for --provider azure")
    return list_s3(bucket, prefix=prefix, endpoint_url=endpoint_url, region=region)


def _identity_bucket(provider: str, bucket: str, connection_string: str | None) -> str:
    """The bucket of the objects' identities: an Azure container's is qualified by its
    account (`<account>.<container>`, as the Azure parser names it)."""
    if provider != "azure" or not connection_string:
        return bucket
    from seqgate.connectors.listing.azure import azure_bucket

    return azure_bucket(bucket, connection_string)


def _counting(listing: Iterable[ListedObject], meter: Meter) -> Iterator[ListedObject]:
    for listed in listing:
        meter.advance()
        yield listed


def publish_repairs(
    kafka: KafkaSettings,
    input_topic: str,
    rejected_topic: str,
    repairs: list[ObjectEvent],
    framing: Framing = SINGLE_OBJECT,
) -> int:
    """Publish the repairs to the input topic; returns how many Kafka acknowledged (all,
    or PublishError: exit 1 naming what was refused)."""
    from seqgate.connectors.parsers.results import ParseResult
    from seqgate.connectors.publish.publisher import EventPublisher, Topics

    publisher = EventPublisher(kafka, Topics(input_topic, rejected_topic), framing=framing)
    try:
        for start in range(0, len(repairs), REPAIRS_PER_BATCH):
            batch = ParseResult(tuple(repairs[start : start + REPAIRS_PER_BATCH]))
            publisher.submit(batch, b"", repairs[start].origin)
        publisher.flush()
    finally:
        publisher.close()
    return publisher.counters.as_dict().get("published", 0)


def _report(
    provider: str,
    source: str,
    bucket: str,
    prefix: str,
    committed: dict[str, Any],
    findings: list[Finding],
    listing_s: float,
    published: int | None,
    seconds: float,
) -> dict[str, Any]:
    counts = Counter(finding.drift.value for finding in findings)
    listed = sum(1 for finding in findings if finding.listed is not None)
    return {
        "provider": provider,
        "source": source,
        "bucket": bucket,
        "prefix": prefix,
        "listed": listed,
        "committed": len(committed),
        "listing_per_second": round(listed / listing_s, 1) if listing_s > 0 else None,
        "seconds": round(seconds, 3),
        "counts": {drift.value: counts.get(drift.value, 0) for drift in Drift},
        "findings": [
            {
                "key": finding.key,
                "drift": finding.drift.value,
                "why": finding.why,
                "repair_id": None if finding.repair is None else finding.repair.id,
            }
            for finding in findings
            if finding.drift is not Drift.IN_SYNC
        ],
        "published": published,
    }


def _print(
    report: dict[str, Any], findings: list[Finding], input_topic: str, as_json: bool
) -> None:
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(
        f"{report['source']}://{report['bucket']}/{report['prefix']}: {report['listed']} listed,"
        f" {report['committed']} with committed state, {report['seconds']} s"
    )
    for finding in report["findings"]:
        click.echo(f"{finding['drift']}\t{finding['key']!r}\t{finding['why']}")
    click.echo("  ".join(f"{name} {count}" for name, count in report["counts"].items()))
    drifted = sum(1 for finding in findings if finding.drift in DRIFTS)
    if report["published"] is not None:
        click.echo(f"published {report['published']} repair event(s) to {input_topic}")
    elif drifted:
        click.echo(f"{drifted} object(s) drifted: run again with --publish to repair them")
    else:
        click.echo("OK: no drift")
