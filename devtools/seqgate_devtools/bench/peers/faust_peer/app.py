"""The faust-streaming peer: the bench's dedup policy as a stateful exactly-once faust app.

Built the way faust-streaming's documentation describes a stateful exactly-once
application: one ``faust.App`` with ``processing_guarantee="exactly_once"`` and a RocksDB
store, a changelogged ``app.Table`` holding the last accepted position per key, and an
``@app.agent`` over the input topic that forwards accepted events to the output topic.

stdout carries only the contract's JSON lines; faust's own output goes to stderr.
See the README beside this file and ``../README.md`` for the contract.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import IO, Any

import fastavro
import faust

#: Single-object encoding header: C3 01 + 8-byte fingerprint.
HEADER_LEN = 10
TABLE_NAME = "positions"


class Counts:
    """In-memory counts since the process started, written as JSON lines to ``out``."""

    def __init__(self, out: IO[str]) -> None:
        self.out = out
        self.accepted = 0
        self.duplicate = 0
        self.stale = 0
        self.first_seen = False

    def first_record(self) -> None:
        if not self.first_seen:
            self.first_seen = True
            self.emit({"first_record_ms": int(time.time() * 1000)})

    def emit_counts(self) -> None:
        self.emit({"accepted": self.accepted, "duplicate": self.duplicate, "stale": self.stale})

    def emit(self, obj: dict[str, int]) -> None:
        self.out.write(json.dumps(obj) + "\n")
        self.out.flush()


def padded(a: str, b: str) -> tuple[str, str]:
    """Right-pad the shorter of two hex positions with '0' (the sequencer rule)."""
    width = max(len(a), len(b))
    return a.lower().ljust(width, "0"), b.lower().ljust(width, "0")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--input-topic", required=True)
    p.add_argument("--output-topic", required=True)
    p.add_argument("--application-id", required=True)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--commit-interval-ms", type=int, default=100)
    p.add_argument("--schema", required=True)
    p.add_argument("--session-timeout-ms", type=int, default=45000)
    return p.parse_args(argv)


def take_stdout() -> IO[str]:
    """Keep the real stdout for the JSON lines; send everything else written to fd 1 to stderr.

    faust/mode's Worker prints a banner and may redirect ``sys.stdout`` to its logger; with
    fd 1 pointing at stderr nothing of that can reach the bench's stdout reader.
    """
    sys.stdout.flush()
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return out


def build_app(args: argparse.Namespace, counts: Counts) -> faust.App:
    schema = fastavro.parse_schema(json.loads(Path(args.schema).read_text()))
    app = faust.App(
        args.application_id,
        broker=f"kafka://{args.bootstrap_servers}",
        processing_guarantee="exactly_once",
        store="rocksdb://",
        datadir=args.state_dir,
        topic_partitions=6,
        topic_replication_factor=1,
        broker_commit_interval=args.commit_interval_ms / 1000.0,
        consumer_auto_offset_reset="earliest",
        broker_session_timeout=args.session_timeout_ms / 1000.0,
        web_enabled=False,
        autodiscover=False,
    )
    # The bench creates both topics (6 partitions each); declare them as they are so faust
    # has nothing to create or change.  Keys and values are passed through as raw bytes.
    raw: dict[str, Any] = {
        "key_type": bytes,
        "value_type": bytes,
        "key_serializer": "raw",
        "value_serializer": "raw",
        "partitions": 6,
    }
    input_topic = app.topic(args.input_topic, internal=False, **raw)
    output_topic = app.topic(args.output_topic, internal=False, **raw)
    # Position per key, in RocksDB (rocksdict driver), changelogged to
    # "<application id>-positions-changelog", which faust creates itself.
    positions = app.Table(
        TABLE_NAME,
        default=None,
        partitions=6,
        # The store's and changelog's serializers come from key_type/value_type only
        # (bytes -> "raw"); a Schema's serializers are not consulted for the store.
        key_type=bytes,
        value_type=bytes,
        options={"driver": "rocksdict"},
    )

    @app.agent(input_topic)
    async def dedup(stream: faust.StreamT[bytes]) -> None:
        async for key, value in stream.items():
            counts.first_record()
            record = fastavro.schemaless_reader(io.BytesIO(value[HEADER_LEN:]), schema, None)
            position = str(record["position"])
            stored = positions.get(key)
            if stored is not None:
                new, old = padded(position, stored.decode("ascii"))
                if new == old:
                    counts.duplicate += 1
                    continue
                if new < old:
                    counts.stale += 1
                    continue
            positions[key] = position.encode("ascii")
            await output_topic.send(key=key, value=value)
            counts.accepted += 1

    @app.timer(1.0)
    async def report() -> None:
        counts.emit_counts()

    return app


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    out = take_stdout()
    counts = Counts(out)
    Path(args.state_dir).mkdir(parents=True, exist_ok=True)
    app = build_app(args, counts)
    worker = faust.Worker(
        app,
        loglevel=logging.WARNING,
        stdout=sys.stderr,
        stderr=sys.stderr,
        redirect_stdouts=False,
    )
    code = 0
    try:
        worker.execute_from_commandline()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        counts.emit_counts()
    return code


if __name__ == "__main__":
    sys.exit(main())
