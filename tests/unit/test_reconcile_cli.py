"""`seqgate reconcile`'s usage errors: one line naming the flag, exit 2, before any
network (the listing and Kafka are never reached)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from seqgate.cli import cli
from tests.support.environment import clean_env

# a closed port: were Kafka asked first, the command would end with exit 3 instead
KAFKA = ["--bootstrap-servers", "127.0.0.1:1", "--kafka-timeout", "1", "--bucket", "b"]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--provider", "azure"], "--provider azure needs --azure-connection-string"),
        (
            ["--provider", "azure", "--azure-connection-string", "x", "--endpoint-url", "http://h"],
            "--endpoint-url/--region are for --provider s3",
        ),
        (
            ["--azure-connection-string", "x"],
            "--azure-connection-string is for --provider azure",
        ),
        (["--source", "nope"], "--source: unknown source 'nope'; known sources are "),
        (["--grace-seconds", "-1"], "Invalid value for '--grace-seconds'"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(args: list[str], expected: str) -> None:
    env = {**clean_env(), "AZURE_STORAGE_CONNECTION_STRING": ""}
    result = CliRunner(env=env).invoke(cli, ["reconcile", *KAFKA, *args])
    assert result.exit_code == 2, result.output
    assert expected in result.stderr
    assert "Traceback" not in result.output


def test_the_azure_sdk_variable_does_not_trouble_an_s3_reconcile() -> None:
    """AZURE_STORAGE_CONNECTION_STRING set (common on an Azure user's machine) is read for
    --provider azure only: an S3 reconcile goes on to Kafka (closed here: exit 3)."""
    env = {**clean_env(), "AZURE_STORAGE_CONNECTION_STRING": "AccountName=x"}
    result = CliRunner(env=env).invoke(cli, ["reconcile", *KAFKA])
    assert result.exit_code == 3, result.output
