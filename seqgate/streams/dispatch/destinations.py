"""Where the dispatcher applies outbox records: SQLite, PostgreSQL or an HTTP endpoint.

Every destination applies a record with an **atomic per-identity version
comparison**: a record replaces what the destination holds for its identity
only when its version key (`seqgate.streams.dispatch.keys`) is strictly greater, so
work that finishes out of order never overwrites a newer result, and a
redelivered record changes nothing.

* SQL (SQLite, PostgreSQL): one statement per record, ``INSERT ... ON CONFLICT
  (identity) DO UPDATE SET ... WHERE excluded.position_key > <table>.position_key``;
  a batch is one transaction, its records applied in identity order so that two
  dispatchers never wait on each other's rows in opposite orders.
* HTTP: the destination makes the comparison. Each record is POSTed as JSON
  with its event id as ``Idempotency-Key``; 2xx = applied, 409/412 = the
  destination has something newer (superseded), 408/429/5xx and connection
  errors = try again later, any other 4xx = permanent rejection (rejected record).

`apply` returns one `Result` per record, in order, or raises `TransientError`
carrying the results of the records it did confirm (a prefix) before failing.
"""

from __future__ import annotations

import json
import re
import sqlite3
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any, Final, Protocol
from urllib.parse import urlsplit

from seqgate.schemas.records import OutboxRecord
from seqgate.streams.errors import DestinationConfigError, TransientError

__all__ = [
    "DESTINATION_SCHEMES",
    "Destination",
    "HttpDestination",
    "Item",
    "Outcome",
    "PostgresDestination",
    "Result",
    "SqliteDestination",
    "open_destination",
]

DESTINATION_SCHEMES: Final = "sqlite:///PATH, postgresql://..., http://... or https://..."
DEFAULT_TABLE: Final = "objects"
_TABLE_NAME: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_BODY_PREVIEW: Final = 300


class Outcome(StrEnum):
    APPLIED = "applied"  # the destination now holds this record
    SUPERSEDED = "superseded"  # the destination holds a newer record of the identity
    DUPLICATE = "duplicate"  # the destination already holds this very version (a redelivery)
    REJECTED = "rejected"  # refused for good: rejected with the reason


@dataclass(frozen=True, slots=True)
class Item:
    """One record to apply, with its identity and version key."""

    identity: str
    key: str
    record: OutboxRecord


@dataclass(frozen=True, slots=True)
class Result:
    outcome: Outcome
    reason: str = ""
    message: str = ""


class Destination(Protocol):
    @property
    def description(self) -> str:
        """Where records go, without credentials (for logs and the summary)."""
        ...

    def apply(self, items: Sequence[Item]) -> list[Result]: ...

    def close(self) -> None: ...


def open_destination(
    url: str, *, table: str = DEFAULT_TABLE, http_timeout: float = 10.0
) -> Destination:
    """The destination named by ``url``; raises DestinationConfigError for an unsupported
    scheme or an invalid table name."""
    scheme = urlsplit(url).scheme.lower()
    if scheme in ("http", "https"):
        if not urlsplit(url).netloc:
            raise DestinationConfigError(f"{url!r} has no host")
        return HttpDestination(url, timeout=http_timeout)
    if not _TABLE_NAME.fullmatch(table):
        raise DestinationConfigError(
            f"invalid table name {table!r}: expected letters, digits and _ (not first), at most 63"
        )
    if scheme == "sqlite":
        if not url.startswith("sqlite:///") or len(url) <= len("sqlite:///"):
            raise DestinationConfigError(
                f"{url!r}: expected sqlite:///relative/path.db or sqlite:////absolute/path.db"
            )
        return SqliteDestination(Path(url[len("sqlite:///") :]), table=table)
    if scheme in ("postgresql", "postgres"):
        return PostgresDestination(url, table=table)
    raise DestinationConfigError(
        f"unsupported destination {_redact(url)!r}: expected {DESTINATION_SCHEMES}"
    )


def _redact(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
    return parts._replace(netloc=netloc).geturl()


def _payload(item: Item) -> str:
    return json.dumps(
        {"identity": item.identity, "position_key": item.key, **item.record.to_dict()},
        sort_keys=True,
        separators=(",", ":"),
    )


# ---- SQL -----------------------------------------------------------------------------------------

_COLUMNS: Final = (
    "identity",
    "position",
    "position_key",
    "event_id",
    "source",
    "kind",
    "version_id",
    "size",
    "etag",
    "payload",
    "input_partition",
    "input_offset",
)


def _row(item: Item) -> tuple[Any, ...]:
    event = item.record.event
    return (
        item.identity,
        event.position,
        item.key,
        event.id,
        event.source,
        event.kind,
        event.version_id,
        event.size,
        event.etag,
        _payload(item),
        item.record.input_partition,
        item.record.input_offset,
    )


def _upsert(table: str, placeholder: str, now: str) -> str:
    columns = ", ".join((*_COLUMNS, "updated_at"))
    values = ", ".join([placeholder] * len(_COLUMNS) + [now])
    updates = ", ".join(f"{name} = excluded.{name}" for name in (*_COLUMNS[1:], "updated_at"))
    return (
        f"INSERT INTO {table} ({columns}) VALUES ({values})"
        f" ON CONFLICT (identity) DO UPDATE SET {updates}"
        f" WHERE excluded.position_key > {table}.position_key"
    )


def _classify(stored_key: str | None, key: str) -> Result:
    """The outcome of an upsert that changed no row."""
    if stored_key == key:
        return Result(Outcome.DUPLICATE)
    return Result(Outcome.SUPERSEDED)


class SqliteDestination:
    """A SQLite table (the embedded default). WAL journal; one connection per destination,
    safe to use from several processes or destinations at once (SQLite serializes writers)."""

    def __init__(self, path: Path, *, table: str = DEFAULT_TABLE, busy_timeout_s: float = 30.0):
        self.path = path
        self.table = table
        if path.parent != Path(""):
            path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(
            str(path), timeout=busy_timeout_s, isolation_level=None, check_same_thread=False
        )
        # Several dispatchers opening one file at once: switching to WAL takes a lock that
        # the busy timeout does not wait for, so wait here (bounded) for the others' setup.
        deadline = time.monotonic() + busy_timeout_s
        while True:
            try:
                self._setup()
                break
            except sqlite3.OperationalError as error:
                if "locked" not in str(error) or time.monotonic() > deadline:
                    self._db.close()
                    raise TransientError(f"sqlite {self.path}: {error}") from error
                time.sleep(0.05)
        self._upsert = _upsert(table, "?", "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')")
        self._select = f"SELECT position_key FROM {table} WHERE identity = ?"

    def _setup(self) -> None:
        db = self._db
        if db.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            db.execute("PRAGMA journal_mode=WAL")
        db.execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} ("
            " identity TEXT PRIMARY KEY,"
            " position TEXT,"
            " position_key TEXT NOT NULL,"
            " event_id TEXT NOT NULL,"
            " source TEXT NOT NULL,"
            " kind TEXT NOT NULL,"
            " version_id TEXT,"
            " size INTEGER,"
            " etag TEXT,"
            " payload TEXT NOT NULL,"
            " input_partition INTEGER NOT NULL,"
            " input_offset INTEGER NOT NULL,"
            " updated_at TEXT NOT NULL)"
        )

    @property
    def description(self) -> str:
        return f"sqlite:///{self.path}"

    def apply(self, items: Sequence[Item]) -> list[Result]:
        order = sorted(range(len(items)), key=lambda index: items[index].identity)
        results: list[Result | None] = [None] * len(items)
        try:
            # IMMEDIATE takes the write lock up front: no deadlock-prone lock upgrade.
            self._db.execute("BEGIN IMMEDIATE")
            try:
                for index in order:
                    item = items[index]
                    cursor = self._db.execute(self._upsert, _row(item))
                    if cursor.rowcount == 1:
                        results[index] = Result(Outcome.APPLIED)
                    else:
                        found = self._db.execute(self._select, (item.identity,)).fetchone()
                        results[index] = _classify(found[0] if found else None, item.key)
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
        except sqlite3.Error as error:
            raise TransientError(f"sqlite {self.path}: {error}") from error
        return [result for result in results if result is not None]

    def close(self) -> None:
        self._db.close()


class PostgresDestination:
    """A PostgreSQL table; ``position_key`` is ``text COLLATE "C"`` so that it compares
    bytewise. Reconnects after a lost connection."""

    def __init__(self, url: str, *, table: str = DEFAULT_TABLE, connect_timeout_s: int = 10):
        self.url = url
        self.table = table
        self._connect_timeout_s = connect_timeout_s
        self._conn: Any = None
        self._upsert = _upsert(table, "%s", "now()")
        self._select = f"SELECT position_key FROM {table} WHERE identity = %s"
        self._connect()

    @property
    def description(self) -> str:
        return _redact(self.url)

    def _connect(self) -> Any:
        import psycopg

        if self._conn is not None and not self._conn.closed:
            return self._conn
        try:
            conn = psycopg.connect(self.url, connect_timeout=self._connect_timeout_s)
            with conn.transaction():
                # Two dispatchers starting together must not both create the table.
                conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.table,))
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {self.table} ("
                    " identity text PRIMARY KEY,"
                    " position text,"
                    ' position_key text COLLATE "C" NOT NULL,'
                    " event_id text NOT NULL,"
                    " source text NOT NULL,"
                    " kind text NOT NULL,"
                    " version_id text,"
                    " size bigint,"
                    " etag text,"
                    " payload jsonb NOT NULL,"
                    " input_partition integer NOT NULL,"
                    " input_offset bigint NOT NULL,"
                    " updated_at timestamptz NOT NULL)"
                )
        except psycopg.Error as error:
            raise TransientError(f"postgresql {self.description}: {error}") from error
        self._conn = conn
        return conn

    def apply(self, items: Sequence[Item]) -> list[Result]:
        import psycopg

        try:
            return self._apply(items)
        except psycopg.DataError:
            # A value the database refuses (e.g. a NUL character in a text column) fails the
            # whole batch: apply the records one by one and reject only the culprits.
            return [self._apply_alone(item) for item in items]

    def _apply_alone(self, item: Item) -> Result:
        import psycopg

        try:
            return self._apply([item])[0]
        except psycopg.DataError as error:
            message = f"postgresql {self.description}: {str(error).strip()}"
            return Result(Outcome.REJECTED, "destination_rejected", message)

    def _apply(self, items: Sequence[Item]) -> list[Result]:
        """One transaction; raises psycopg.DataError as is, other failures as TransientError."""
        import psycopg

        conn = self._connect()
        order = sorted(range(len(items)), key=lambda index: items[index].identity)
        results: list[Result | None] = [None] * len(items)
        try:
            with conn.transaction(), conn.cursor() as cursor:
                for index in order:
                    item = items[index]
                    cursor.execute(self._upsert, _row(item))
                    if cursor.rowcount == 1:
                        results[index] = Result(Outcome.APPLIED)
                    else:
                        cursor.execute(self._select, (item.identity,))
                        found = cursor.fetchone()
                        results[index] = _classify(found[0] if found else None, item.key)
        except psycopg.DataError:
            raise
        except psycopg.Error as error:
            if conn.closed or isinstance(error, psycopg.OperationalError):
                self.close()
            raise TransientError(f"postgresql {self.description}: {error}") from error
        return [result for result in results if result is not None]

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None


# ---- HTTP ----------------------------------------------------------------------------------------

SUPERSEDED_STATUSES: Final = frozenset({409, 412})
RETRIED_CLIENT_STATUSES: Final = frozenset({408, 425, 429})


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect is not a confirmation: urllib would turn the POST into a GET."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class HttpDestination:
    """POST each record as JSON; the endpoint makes the version comparison.

    Body: the outbox record's fields plus ``identity`` and ``position_key``.
    Headers: ``Idempotency-Key`` (the event id) and ``Seqgate-Position-Key``.
    """

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self.url = url
        self.timeout = timeout
        self._opener = urllib.request.build_opener(_NoRedirects())

    @property
    def description(self) -> str:
        return _redact(self.url)

    def apply(self, items: Sequence[Item]) -> list[Result]:
        results: list[Result] = []
        for item in items:
            try:
                results.append(self._post(item))
            except TransientError as error:
                raise TransientError(str(error), results) from error
        return results

    def _post(self, item: Item) -> Result:
        request = urllib.request.Request(
            self.url,
            data=_payload(item).encode("utf-8"),
            method="POST",
            headers={
                "Content-Type": "application/json",
                "Idempotency-Key": item.record.event.id,
                "Seqgate-Position-Key": item.key,
            },
        )
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                status = int(response.status)
                body = b""
        except urllib.error.HTTPError as error:
            status = error.code
            body = error.read(_BODY_PREVIEW) if error.fp is not None else b""
        except (urllib.error.URLError, OSError) as error:
            raise TransientError(f"POST {self.description}: {error}") from error
        if 200 <= status < 300:
            return Result(Outcome.APPLIED)
        if status in SUPERSEDED_STATUSES:
            return Result(Outcome.SUPERSEDED)
        text = body.decode("utf-8", "replace").strip()
        detail = f"HTTP {status} from POST {self.description}" + (f": {text}" if text else "")
        if 400 <= status < 500 and status not in RETRIED_CLIENT_STATUSES:
            return Result(Outcome.REJECTED, "destination_rejected", detail)
        raise TransientError(detail)

    def close(self) -> None:
        return None
