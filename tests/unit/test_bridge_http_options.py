"""`seqgate bridge http`'s options, checked before anything connects: each provider option
has its `SEQGATE_*` variable; a bad JWKS file, a malformed EventBridge header and an open
/s3 route on a public address are one error line with exit 2 (the broker given is a
closed port, never reached). Moved from tests/kafka (test_bridge_webhooks.py,
test_bridge_http.py): no broker (issue 22)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest

from seqgate.cli import cli
from tests.support.environment import clean_env
from tests.support.paths import REPO
from tests.support.webhook_requests import GCS_AUDIENCE


def run_command(*options: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "seqgate.cli", "bridge", "http", *options],
        capture_output=True,
        env=clean_env(),
        cwd=REPO,
        timeout=60,
        check=False,
    )


def test_every_provider_option_has_its_variable() -> None:
    group = cli.commands["bridge"]
    assert isinstance(group, click.Group)
    http = group.commands["http"]
    variables = {param.name: param.envvar for param in http.params}
    for name in (
        "gcs_audience",
        "gcs_jwks_url",
        "gcs_jwks_file",
        "gcs_service_account",
        "azure_secret",
        "supabase_secret",
        "b2_signing_secret",
        "box_primary_key",
        "box_secondary_key",
        "cloudinary_api_secret",
        "cloudinary_cloud_name",
        "cloudinary_signature_algorithm",
        "appwrite_signature_key",
        "appwrite_webhook_url",
    ):
        assert variables[name] == f"SEQGATE_{name.upper()}", name


@pytest.mark.parametrize(
    ("content", "problem"),
    [(None, "cannot read it"), ('{"keys": []}', ""), ("not json", "")],
)
def test_a_bad_jwks_file_is_one_error_line(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "jwks.json"
    if content is not None:
        path.write_text(content)
    done = run_command(
        "--bootstrap-servers", "127.0.0.1:1", "--gcs-audience", GCS_AUDIENCE,
        "--gcs-jwks-file", str(path),
    )  # fmt: skip
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: --gcs-jwks-file {path}: {problem}")


def test_a_malformed_eventbridge_header_is_refused_at_start() -> None:
    done = run_command("--bootstrap-servers", "127.0.0.1:1", "--eventbridge-header", "no-colon")
    assert done.returncode == 2
    assert done.stderr.decode().startswith("error: --eventbridge-header")


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_an_open_s3_route_on_a_public_address_is_refused_at_start(host: str) -> None:
    done = run_command("--bootstrap-servers", "127.0.0.1:1", "--host", host)
    lines = done.stderr.decode().splitlines()
    assert done.returncode == 2
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"error: --host {host} is not a loopback address"), lines[0]
    for option in ("--s3-token", "--no-s3", "--allow-unauthenticated"):
        assert option in lines[0]
