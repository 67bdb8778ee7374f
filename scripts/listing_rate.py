"""How fast `list_s3` lists moto's S3 server: objects per second, plain and versioned bucket.

    PYTHONPATH=. .venv/bin/python scripts/listing_rate.py [OBJECTS]   # default 5000

Beside each rate, boto3's own paginator over the same bucket (what the provider and the
client cost without seqgate), so the difference is list_s3's own share.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any

from seqgate.connectors.listing.s3 import list_s3
from tests.support.moto_helpers import AWS_ENV, aws_client, moto_server


def _fill(s3: Any, bucket: str, count: int, versioned: bool) -> None:
    s3.create_bucket(Bucket=bucket)
    if versioned:
        s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    with ThreadPoolExecutor(16) as pool:
        list(
            pool.map(
                lambda i: s3.put_object(Bucket=bucket, Key=f"k/{i:06d}", Body=b""), range(count)
            )
        )


def _best(count: int, run: Callable[[], int]) -> float:
    rates = []
    for _ in range(3):
        started = time.perf_counter()
        listed = run()
        elapsed = time.perf_counter() - started
        assert listed == count, listed
        rates.append(count / elapsed)
    return max(rates)


def _listed(bucket: str, endpoint: str) -> int:
    return sum(1 for _ in list_s3(bucket, endpoint_url=endpoint))


def _paginated(s3: Any, operation: str, field: str, bucket: str) -> int:
    pages = s3.get_paginator(operation).paginate(Bucket=bucket)
    return sum(len(page.get(field, ())) for page in pages)


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    os.environ.update(AWS_ENV)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    kinds = ((False, "list_objects_v2", "Contents"), (True, "list_object_versions", "Versions"))
    with moto_server() as endpoint:
        s3 = aws_client("s3", endpoint)
        for versioned, operation, field in kinds:
            bucket = "versioned" if versioned else "plain"
            _fill(s3, bucket, count, versioned)
            ours = _best(count, partial(_listed, bucket, endpoint))
            raw = _best(count, partial(_paginated, s3, operation, field, bucket))
            print(
                f"{bucket:9} {count} objects: list_s3 {ours:7,.0f}/s, boto3 paginator {raw:7,.0f}/s"
            )


if __name__ == "__main__":
    main()
