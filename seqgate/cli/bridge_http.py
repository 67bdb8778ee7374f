"""`seqgate bridge http`: the webhook server, its per-route secrets and its limits.

Exposure: ``POST /s3`` without ``--s3-token`` is the one route served without
authentication. That is allowed only while ``--host`` is a loopback address (the
default, 127.0.0.1: only local senders reach it); on any other address the
command refuses to start (one ``error:`` line, exit 2) unless ``--s3-token`` is
set, ``--no-s3`` turns the route off, or ``--allow-unauthenticated`` says that an
open ``/s3`` is intended (a private network, a proxy that authenticates).

Limits (each an option): a connection must deliver a complete request head
within ``--header-timeout-seconds`` of being accepted or of its previous reply,
and a request its whole body within ``--body-timeout-seconds`` of its head
(else 408 and the connection is closed); at most ``--max-connections`` are open
at once, another is answered 503 and closed at once. The open-file limit is
raised to fit ``--max-connections``; where the hard limit does not allow it,
the limit is lowered to what fits (with a warning line).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import resource
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import click

from seqgate.cli.bridge import Publishing, bridge, publishing_options
from seqgate.cli.http_processes import (
    LISTENING,
    serve_in_processes,
    stop_when_stdin_ends,
)
from seqgate.cli.options import (
    gathered,
    kafka_options,
    setting,
    stacked,
)
from seqgate.cli.reading_options import (
    CommaList,
    comma_items,
    filter_options,
    s3_parse_option,
)
from seqgate.cli.webhook_options import webhook_options
from seqgate.connectors.errors import PublishError
from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.connectors.publish.filters import EventFilter
from seqgate.runtime.errors import UsageError
from seqgate.runtime.kafka_reach import ensure_reachable
from seqgate.runtime.kafka_settings import KafkaSettings

if TYPE_CHECKING:
    from seqgate.connectors.sources.http_server import HttpBridge
    from seqgate.connectors.sources.http_settings import HttpSettings
    from seqgate.connectors.sources.webhook_routes import WebhookSettings


@dataclass(frozen=True, slots=True)
class HttpOptions:
    """The server's own options, as given: its limits, the S3-family routes' credentials
    and the exposure rule."""

    max_body_bytes: int
    s3_token: str | None
    no_s3: bool
    allow_unauthenticated: bool
    minio_token: str | None
    eventbridge_header: str | None
    sns_topic_arn: tuple[str, ...]
    sns_max_age_seconds: int
    header_timeout_seconds: float
    body_timeout_seconds: float
    max_connections: int
    shutdown_timeout_seconds: float

    def settings(self, webhooks: WebhookSettings) -> HttpSettings:
        from seqgate.connectors.auth.sns_signature import CertificateCache, SnsVerifier
        from seqgate.connectors.sources.http_settings import HttpSettings

        topic_arns = frozenset(comma_items(self.sns_topic_arn))
        return HttpSettings(
            max_body_bytes=self.max_body_bytes,
            header_timeout_s=self.header_timeout_seconds,
            body_timeout_s=self.body_timeout_seconds,
            max_connections=self.max_connections,
            s3_token=self.s3_token or None,
            s3_enabled=not self.no_s3,
            minio_token=self.minio_token or None,
            eventbridge_header=_header_secret(self.eventbridge_header or None),
            sns=SnsVerifier(
                topic_arns=topic_arns,
                fetch_certificate=CertificateCache(),
                max_age_seconds=float(self.sns_max_age_seconds),
            )
            if topic_arns
            else None,
            webhooks=webhooks,
        )


def http_options(func: Callable[..., Any]) -> Callable[..., Any]:
    """The server's options; the command receives one `http: HttpOptions`."""
    names = [field.name for field in dataclasses.fields(HttpOptions)]
    with_http = gathered(func, "http", HttpOptions, names)
    options = [
        setting(
            "--max-body-bytes",
            "SEQGATE_HTTP_MAX_BODY_BYTES",
            default=1024 * 1024,
            type=click.IntRange(1, 1024 * 1024 * 1024),
            help="Larger request bodies are refused with 413.",
        ),
        setting(
            "--s3-token",
            "SEQGATE_S3_TOKEN",
            default=None,
            help="Bearer token required on POST /s3. Without one, /s3 is served unauthenticated"
            " only on a loopback --host, unless --allow-unauthenticated.",
        ),
        setting(
            "--no-s3",
            "SEQGATE_HTTP_NO_S3",
            is_flag=True,
            default=False,
            help="Do not serve POST /s3 (only the routes whose secrets are configured).",
        ),
        setting(
            "--allow-unauthenticated",
            "SEQGATE_HTTP_ALLOW_UNAUTHENTICATED",
            is_flag=True,
            default=False,
            help="Serve POST /s3 without --s3-token on a non-loopback --host (refused otherwise):"
            " only where the network or a proxy already keeps strangers out.",
        ),
        setting(
            "--minio-token",
            "SEQGATE_MINIO_TOKEN",
            default=None,
            help="Bearer token of MinIO's webhook target (its auth_token); POST /minio is served"
            " only when set.",
        ),
        setting(
            "--eventbridge-header",
            "SEQGATE_EVENTBRIDGE_HEADER",
            default=None,
            help="NAME:VALUE of the header an EventBridge API destination's connection sends"
            " (API key authorization); POST /eventbridge is served only when set.",
        ),
        setting(
            "--sns-topic-arn",
            "SEQGATE_SNS_TOPIC_ARNS",
            type=CommaList(),
            multiple=True,
            help="Topics whose signed SNS messages POST /sns accepts (and whose subscriptions it"
            " confirms); repeat or separate with commas. /sns is served only when set.",
        ),
        setting(
            "--sns-max-age-seconds",
            "SEQGATE_SNS_MAX_AGE_SECONDS",
            default=3600,
            type=click.IntRange(1, None),
            help="SNS messages whose Timestamp is further than this from now are refused (403).",
        ),
        setting(
            "--header-timeout-seconds",
            "SEQGATE_HTTP_HEADER_TIMEOUT_SECONDS",
            default=10.0,
            type=click.FloatRange(0, None, min_open=True),
            help="A connection that has not sent a complete request head this long after it"
            " was accepted (or after its previous reply: idle keep-alive) is closed.",
        ),
        setting(
            "--body-timeout-seconds",
            "SEQGATE_HTTP_BODY_TIMEOUT_SECONDS",
            default=30.0,
            type=click.FloatRange(0, None, min_open=True),
            help="A request whose whole body has not arrived this long after its head is"
            " answered 408 and its connection closed.",
        ),
        setting(
            "--max-connections",
            "SEQGATE_HTTP_MAX_CONNECTIONS",
            default=1000,
            type=click.IntRange(1, 1_000_000),
            help="Connections open at once; another is answered 503 (Retry-After: 1) and closed.",
        ),
        setting(
            "--shutdown-timeout-seconds",
            "SEQGATE_HTTP_SHUTDOWN_TIMEOUT_SECONDS",
            default=30.0,
            type=click.FloatRange(0, None),
            help="On SIGTERM, how long requests in flight may take to finish.",
        ),
    ]
    return stacked(with_http, options)


def _header_secret(value: str | None) -> tuple[str, str] | None:
    """NAME:VALUE of --eventbridge-header."""
    if value is None:
        return None
    name, colon, secret = value.partition(":")
    name, secret = name.strip(), secret.strip()
    if not colon or not name or not secret or any(c in name for c in " \t\r\n"):
        raise UsageError(
            "--eventbridge-header: expected NAME:VALUE (e.g. X-Seqgate-Secret:s3cr3t),"
            " the header your API destination's connection sends"
        )
    return name, secret


_SPARE_FILES = 128  # the producer's sockets and pipes, logs, the listening socket


def _fit_open_files(max_connections: int) -> int:
    """Raise the open-file limit to fit --max-connections; past the hard limit, the
    number of connections that fits (with a warning), so that accept never fails."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    needed = max_connections + _SPARE_FILES
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return max_connections
    if hard == resource.RLIM_INFINITY or hard >= needed:
        resource.setrlimit(resource.RLIMIT_NOFILE, (needed, hard))
        return max_connections
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    fitting = max(1, hard - _SPARE_FILES)
    click.echo(
        f"warning: --max-connections {max_connections} lowered to {fitting}: the process may"
        f" open only {hard} files (ulimit -Hn)",
        err=True,
    )
    return fitting


@bridge.command("http")
@setting("--host", "SEQGATE_HTTP_HOST", default="127.0.0.1", help="Address to listen on.")
@setting(
    "--port",
    "SEQGATE_HTTP_PORT",
    default=8080,
    type=click.IntRange(0, 65_535),
    help="Port to listen on; 0 picks a free one. The address is printed on stderr as"
    " `listening on http://HOST:PORT`.",
)
@setting(
    "--processes",
    "SEQGATE_PROCESSES",
    default=1,
    type=click.IntRange(1, 256),
    help="Worker processes serving --host/--port together (SO_REUSEPORT: the kernel spreads"
    " connections across them), each with its own Kafka producer and its own"
    " --max-connections. /metrics, /healthz and /readyz are answered by whichever worker"
    " takes the connection (its own counters): scrape with N = 1 for whole figures. On"
    " exit, one `worker PID: {...}` line each on stderr and the sum as the JSON summary.",
)
@click.option("--worker-port", type=int, default=None, hidden=True)  # one of --processes
@kafka_options
@publishing_options()
@http_options
@webhook_options
@filter_options
@s3_parse_option
def bridge_http(
    host: str,
    port: int,
    processes: int,
    worker_port: int | None,
    kafka: KafkaSettings,
    publishing: Publishing,
    http: HttpOptions,
    webhooks: WebhookSettings,
    event_filter: EventFilter,
    s3_options: S3ParseOptions,
) -> None:
    """Receive storage webhooks (S3-family, SNS, EventBridge, MinIO, GCS, Azure,
    Supabase, B2, Box, Cloudinary, Appwrite) and publish them to Kafka.

    \b
    Routes (each POST; origin http:<route>):
      /s3           any body `seqgate parse` knows (Bearer --s3-token if set)
      /sns          SNS HTTP(S) subscription deliveries (signature verified,
                    topics pinned by --sns-topic-arn; confirms subscriptions)
      /eventbridge  EventBridge API destinations (--eventbridge-header)
      /minio        MinIO's webhook target (Bearer --minio-token)
      /gcs          GCS notifications by Pub/Sub push (OIDC token: --gcs-audience,
                    Google's keys fetched from --gcs-jwks-url or saved in
                    --gcs-jwks-file, optionally --gcs-service-account)
      /azure        Azure Event Grid, both schemas (--azure-secret in ?code= or
                    X-Seqgate-Secret; answers the validation event and the
                    CloudEvents OPTIONS handshake)
      /supabase     Supabase database webhook (X-Seqgate-Secret: --supabase-secret)
      /b2           Backblaze B2 event notifications (--b2-signing-secret)
      /box          Box webhooks V2 (--box-primary-key / --box-secondary-key)
      /cloudinary   Cloudinary notifications (--cloudinary-api-secret,
                    --cloudinary-cloud-name, --cloudinary-signature-algorithm)
      /appwrite     Appwrite storage webhooks (--appwrite-signature-key,
                    --appwrite-webhook-url)

    A route whose secret is not configured is not served (404). Answers 200
    only after Kafka acknowledged every event and rejected record of the request
    (each request is answered from its own records, whatever the others sent
    with it); 503 when Kafka did not take all of them (the sender retries; what
    Kafka did take is delivered again and deduplicated downstream); 401 for a
    missing credential, 403 for a wrong one - or one that is not UTF-8 text -
    (logged and counted, never written to Kafka); 413 above --max-body-bytes.
    SIGTERM or Ctrl-C stops accepting, lets requests in flight finish, flushes,
    prints a JSON summary and exits 0.

    \b
    Exposure: /s3 without --s3-token is the one unauthenticated route. It is
    served on a loopback --host (the default 127.0.0.1); on any other address
    the command refuses to start unless --s3-token, --no-s3 or
    --allow-unauthenticated is given.

    \b
    Limits: --header-timeout-seconds (10: webhook senders send a request head
    in milliseconds; also the idle keep-alive limit), --body-timeout-seconds
    (30: a 1 MiB body at 35 KB/s; 408 and closed past it), --max-connections
    (1000; more are answered 503 and closed; the open-file limit is raised to
    fit). Slow or idle clients cannot hold file descriptors for long.

    \b
    Example:
      seqgate bridge http --bootstrap-servers 127.0.0.1:9092 --port 8080 \\
        --minio-token "$MINIO_WEBHOOK_TOKEN" \\
        --sns-topic-arn arn:aws:sns:eu-west-1:111122223333:uploads
      curl --data-binary @notification.json http://127.0.0.1:8080/s3

    \b
    Example (GCS push, Azure Event Grid and Box behind https://hooks.example.com):
      seqgate bridge http --bootstrap-servers 127.0.0.1:9092 --port 8080 \\
        --gcs-audience https://hooks.example.com/gcs \\
        --azure-secret "$EVENT_GRID_SECRET" \\
        --box-primary-key "$BOX_PRIMARY_KEY" --box-secondary-key "$BOX_SECONDARY_KEY"
      # Event Grid endpoint: https://hooks.example.com/azure?code=$EVENT_GRID_SECRET
    """
    settings = server_settings(http, webhooks, host)
    ensure_reachable(kafka)
    if processes > 1 and worker_port is None:
        return serve_in_processes(processes, host, port, functools.partial(announce, settings))
    server = _server(settings, kafka, publishing, event_filter, s3_options)
    serve_until_stopped(server, settings, host, port, http.shutdown_timeout_seconds, worker_port)


def _server(
    settings: HttpSettings,
    kafka: KafkaSettings,
    publishing: Publishing,
    event_filter: EventFilter,
    s3_options: S3ParseOptions,
) -> HttpBridge:
    from seqgate.connectors.sources.http_server import HttpBridge

    publisher = publishing.publisher(kafka, s3_options.engine)
    return HttpBridge(settings, publisher, event_filter, s3_options=s3_options)


def server_settings(http: HttpOptions, webhooks: WebhookSettings, host: str) -> HttpSettings:
    """The server's settings; refused when they would expose /s3 unauthenticated, and
    with no more connections than open files allow."""
    settings = http.settings(webhooks)
    refuse_open_s3(settings, host, http.allow_unauthenticated)
    return dataclasses.replace(settings, max_connections=_fit_open_files(http.max_connections))


def refuse_open_s3(settings: HttpSettings, host: str, allow_unauthenticated: bool) -> None:
    """Refuse an unauthenticated /s3 on an address other hosts reach, unless allowed."""
    from seqgate.connectors.sources.http_settings import is_loopback

    if settings.unauthenticated_routes() and not allow_unauthenticated and not is_loopback(host):
        raise UsageError(
            f"--host {host} is not a loopback address and POST /s3 has no --s3-token: set"
            " --s3-token, turn /s3 off with --no-s3, or pass --allow-unauthenticated to serve"
            " it unauthenticated anyway"
        )


def announce(settings: HttpSettings, bound_host: str, bound_port: int) -> None:
    """The `listening on` and `routes` lines."""
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    click.echo(f"listening on http://{shown}:{bound_port}", err=True)
    click.echo(f"routes: {', '.join('/' + r for r in settings.enabled_routes())}", err=True)


def serve_until_stopped(
    server: HttpBridge,
    settings: HttpSettings,
    host: str,
    port: int,
    shutdown_timeout_s: float,
    worker_port: int | None = None,
) -> None:
    """Serve until SIGTERM or Ctrl-C, then print the summary. A worker (of `--processes`,
    :mod:`seqgate.cli.http_processes`) serves `worker_port` beside the others, tells
    its parent on stdout that it listens and also stops when its stdin ends."""
    import asyncio

    from seqgate.connectors.sources.http_server import serve

    worker = worker_port is not None
    if worker_port is not None:
        port = worker_port

    def listening(bound_host: str, bound_port: int) -> None:
        if worker:
            click.echo(LISTENING)
            sys.stdout.flush()
        else:
            announce(settings, bound_host, bound_port)

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        if worker:
            stop_when_stdin_ends(loop, stop)
        await serve(
            server,
            host,
            port,
            stop,
            shutdown_timeout_s=shutdown_timeout_s,
            on_listening=listening,
            reuse_port=worker,
        )

    failure: str | None = None
    try:
        asyncio.run(run())
    except OSError as error:
        raise UsageError(f"--host/--port: cannot listen on {host}:{port} ({error})") from error
    except PublishError as error:
        failure = str(error)
    click.echo(json.dumps(server.summary()))
    if failure is not None:
        # Exit 2 here, where the file and SQS bridges exit 1: the documented code of `bridge http`.
        raise UsageError(failure)
