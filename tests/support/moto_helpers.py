"""moto's server mode: a real AWS API (SQS, SNS, S3) on loopback, for bridge tests."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import boto3  # type: ignore[import-untyped,import-not-found,unused-ignore]
from moto.server import ThreadedMotoServer  # type: ignore[import-untyped,import-not-found,unused-ignore]

AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """Start moto on a free loopback port; yields its endpoint URL."""
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()


def aws_client(service: str, endpoint: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name=AWS_ENV["AWS_DEFAULT_REGION"],
        aws_access_key_id=AWS_ENV["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=AWS_ENV["AWS_SECRET_ACCESS_KEY"],
    )
