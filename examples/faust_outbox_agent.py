"""A faust-streaming agent that applies seqgate's outbox to SQLite, idempotently.

Run it (docs/consumers.md#faust-streaming), against the dev broker for instance:

    pip install -e '.[faust]'
    export SEQGATE_BOOTSTRAP_SERVERS=$(seqgate broker up | tail -n 1)
    seqgate topics create
    seqgate bridge file notifications/guide.jsonl
    seqgate worker --instance-id w1 &                   # writes the outbox
    python examples/faust_outbox_agent.py worker -l info --without-web

It is a faust application: ``worker`` is faust's own command (stop it with Ctrl-C);
``--without-web``, or faust serves its web pages on 0.0.0.0:6066 (the command line
decides that, whatever the app's ``web_enabled``: faust/cli/worker.py:94).
Settings, from the environment:

* ``SEQGATE_BOOTSTRAP_SERVERS`` (else ``KAFKA_BOOTSTRAP_SERVERS``, else 127.0.0.1:9092);
* ``SEQGATE_OUTBOX_TOPIC`` (``object-events.outbox``);
* ``SEQGATE_FAUST_APP_ID`` (``seqgate-outbox-example``): faust's app id, the consumer group;
* ``SEQGATE_FAUST_DB`` (``outbox-applied.sqlite``): where the agent applies the events;
* ``SEQGATE_FAUST_DATADIR`` (``faust-data``): faust's own data directory;
* ``SEQGATE_SCHEMA_REGISTRY_URL`` (and ``SEQGATE_SCHEMA_REGISTRY_AUTH``), when the worker
  writes the outbox through a schema registry: Confluent-framed records are then read with
  the writer schema their id names.

Why ``processing_guarantee="exactly_once"``: the outbox is written in Kafka
transactions, and a crashed worker leaves records of aborted transactions in the
log, so only a ``read_committed`` reader sees each accepted event exactly once.
faust-streaming 0.15 has no setting for the isolation level: its worker consumer
reads ``read_committed`` only when the consumer is "in transaction"
(faust/transport/drivers/aiokafka.py:571-574, ``_create_worker_consumer``), which
is ``app.in_transaction``: ``in_worker and processing_guarantee == EXACTLY_ONCE``
(faust/app/base.py:1670-1676), and ``in_worker`` is set only by a faust Worker
starting (faust/worker.py:262). The default ``at_least_once`` reads
``read_uncommitted``, and so does a ``client_only`` app (aiokafka.py:640, no
isolation level), and both would hand this agent aborted records. So: this setting,
and run it as a faust worker (``worker`` here, or ``faust -A … worker``).

The apply is idempotent, keyed on the event id: seqgate's outbox holds each
accepted event once, but faust commits offsets after the agent has applied a
record (at least once for a side effect outside Kafka, whatever the guarantee), so
after a crash or a rebalance an event can come again; it then changes nothing.
"""

from __future__ import annotations

import os
import sqlite3
from typing import Any

import faust

from seqgate.runtime.schema_registry import RegistrySettings, connect
from seqgate.schemas.faust_codec import (
    OutboxModel,  # and registers codec "seqgate_outbox"
    use_schema_registry,
)

if os.environ.get("SEQGATE_SCHEMA_REGISTRY_URL"):
    use_schema_registry(
        connect(
            RegistrySettings(
                os.environ["SEQGATE_SCHEMA_REGISTRY_URL"],
                os.environ.get("SEQGATE_SCHEMA_REGISTRY_AUTH") or None,
            )
        )
    )

BOOTSTRAP = os.environ.get(
    "SEQGATE_BOOTSTRAP_SERVERS", os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092")
)

app = faust.App(
    os.environ.get("SEQGATE_FAUST_APP_ID", "seqgate-outbox-example"),
    broker=",".join(f"kafka://{address}" for address in BOOTSTRAP.split(",")),
    # read_committed: see the module's comment (faust/transport/drivers/aiokafka.py:571-574).
    processing_guarantee="exactly_once",
    consumer_auto_offset_reset="earliest",
    datadir=os.environ.get("SEQGATE_FAUST_DATADIR", "faust-data"),
)

outbox = app.topic(
    os.environ.get("SEQGATE_OUTBOX_TOPIC", "object-events.outbox"),
    key_type=bytes,
    key_serializer="raw",
    value_type=OutboxModel,
    value_serializer="seqgate_outbox",
)

SCHEMA = """
CREATE TABLE IF NOT EXISTS applied (
    event_id TEXT PRIMARY KEY,
    identity TEXT NOT NULL,
    kind TEXT NOT NULL,
    position TEXT,
    outbox_partition INTEGER NOT NULL,
    outbox_offset INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS deliveries (
    event_id TEXT NOT NULL,
    outbox_partition INTEGER NOT NULL,
    outbox_offset INTEGER NOT NULL,
    first INTEGER NOT NULL
);
"""


def open_db(path: str) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.executescript(SCHEMA)
    return db


def apply(db: sqlite3.Connection, record: Any, identity: str, partition: int, offset: int) -> bool:
    """Apply one outbox record; False when its event id was applied before (a redelivery).
    The applied row and the delivery log change in one SQLite transaction."""
    event = record.event
    with db:
        db.execute("BEGIN IMMEDIATE")
        first = db.execute(
            "INSERT INTO applied VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (event_id) DO NOTHING",
            (event.id, identity, event.kind, event.position, partition, offset),
        ).rowcount
        db.execute(
            "INSERT INTO deliveries VALUES (?, ?, ?, ?)", (event.id, partition, offset, first)
        )
    return first == 1


@app.agent(outbox)
async def apply_outbox(stream: faust.StreamT[Any]) -> None:
    db = open_db(os.environ.get("SEQGATE_FAUST_DB", "outbox-applied.sqlite"))
    async for event in stream.events():
        message = event.message
        apply(db, event.value, (event.key or b"").decode(), message.partition, message.offset)


if __name__ == "__main__":
    app.main()
