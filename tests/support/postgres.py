"""A PostgreSQL for the dispatcher's tests: `$SEQGATE_TEST_POSTGRES_URL` (`scripts/postgres.sh`)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

from tests.support.required import unavailable


@pytest.fixture(scope="session")
def postgres_url() -> str:
    import psycopg

    url = os.environ.get("SEQGATE_TEST_POSTGRES_URL", "").strip()
    if not url:
        reason = (
            "SEQGATE_TEST_POSTGRES_URL is not set"
            " (`bash scripts/postgres.sh` starts a server and prints its URL)"
        )
        unavailable("PostgreSQL", reason)
    try:
        psycopg.connect(url, connect_timeout=10).close()
    except psycopg.Error as error:
        pytest.fail(f"SEQGATE_TEST_POSTGRES_URL={url} does not answer: {error}", pytrace=False)
    return url


@pytest.fixture
def postgres_table(postgres_url: str) -> Iterator[str]:
    import psycopg

    table = f"objects_{uuid.uuid4().hex[:12]}"
    yield table
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {table}")


def pg_rows(url: str, table: str) -> dict[str, tuple[str, str, str]]:
    import psycopg

    with psycopg.connect(url) as conn:
        rows = conn.execute(f"SELECT identity, position, position_key, event_id FROM {table}")
        return {identity: (pos, key, eid) for identity, pos, key, eid in rows}
