"""The bench's Quix Streams peer: the guide's sequencer policy as a stateful exactly-once app.

Built the way Quix Streams' documentation describes a stateful application: an
``Application`` with ``processing_guarantee="exactly-once"``, a ``StreamingDataFrame`` over
the input topic, a stateful ``filter`` that keeps the last accepted position per message key
in the application's RocksDB ``State`` (changelogged by Quix), and ``to_topic`` for the
outbox. See ``../README.md`` for the contract (command line, policy, stdout, lifetime).
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

import fastavro
from quixstreams import Application, State
from quixstreams.models.topics import TopicConfig

_HEADER = b"\xc3\x01"
_HEADER_LEN = 10  # C3 01 + 8-byte CRC-64-AVRO fingerprint
_STATE_KEY = "position"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Quix Streams peer for `seqgate bench --peers`.")
    p.add_argument("--bootstrap-servers", required=True)
    p.add_argument("--input-topic", required=True)
    p.add_argument("--output-topic", required=True)
    p.add_argument("--application-id", required=True)
    p.add_argument("--state-dir", required=True)
    p.add_argument("--commit-interval-ms", type=int, default=100)
    p.add_argument("--schema", required=True, help="ObjectEvent writer schema (.avsc JSON)")
    p.add_argument("--session-timeout-ms", type=int, default=45000)
    return p.parse_args(argv)


def emit(obj: dict[str, Any]) -> None:
    """One JSON line on stdout, flushed at once (the bench reads them as they come)."""
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def compare_positions(new: str, old: str) -> int:
    """-1, 0 or 1 after padding the shorter position with '0' on the right."""
    width = max(len(new), len(old))
    a, b = new.ljust(width, "0").lower(), old.ljust(width, "0").lower()
    return (a > b) - (a < b)


class Counts:
    """In-memory verdict counts since the process started, printed by a reporter thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.accepted = 0
        self.duplicate = 0
        self.stale = 0
        self._first_seen = False

    def first_record(self) -> None:
        if not self._first_seen:
            self._first_seen = True
            emit({"first_record_ms": int(time.time() * 1000)})

    def add(self, verdict: str) -> None:
        with self._lock:
            setattr(self, verdict, getattr(self, verdict) + 1)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {"accepted": self.accepted, "duplicate": self.duplicate, "stale": self.stale}


def report_every_second(counts: Counts, stop: threading.Event) -> None:
    last = counts.snapshot()  # nothing printed before the first record
    while not stop.wait(1.0):
        snap = counts.snapshot()
        if snap != last:  # "at least every second while records flow"
            emit(snap)
            last = snap


def build_app(args: argparse.Namespace, counts: Counts) -> Application:
    parsed = fastavro.parse_schema(json.loads(Path(args.schema).read_text(encoding="utf-8")))

    def decode_position(value: bytes) -> str:
        if value[:2] != _HEADER:
            raise ValueError("input value is not Avro single-object encoded")
        event = fastavro.schemaless_reader(io.BytesIO(value[_HEADER_LEN:]), parsed, parsed)
        position = event.get("position")  # type: ignore[union-attr]
        return position if isinstance(position, str) else ""

    def sequencer(value: bytes, state: State) -> bool:
        """Keep (forward) the event when its position is newer than the stored one."""
        counts.first_record()
        position = decode_position(value)
        stored = state.get(_STATE_KEY)
        order = 1 if stored is None else compare_positions(position, stored)
        if order > 0:
            state.set(_STATE_KEY, position)
            counts.add("accepted")
            return True
        counts.add("duplicate" if order == 0 else "stale")
        return False

    app = Application(
        broker_address=args.bootstrap_servers,
        consumer_group=args.application_id,
        auto_offset_reset="earliest",
        processing_guarantee="exactly-once",
        commit_interval=args.commit_interval_ms / 1000.0,
        state_dir=args.state_dir,
        # The bench has created both topics; Quix only creates its changelog topics.
        auto_create_topics=True,
        use_changelog_topics=True,
        loglevel="WARNING",
        consumer_extra_config={"session.timeout.ms": args.session_timeout_ms},
    )
    # Existing topics are fetched from the broker, never re-created; the config given here
    # matches them (6 partitions, replication 1) and is only used if one were missing.
    topic_config = TopicConfig(num_partitions=6, replication_factor=1)
    input_topic = app.topic(
        args.input_topic,
        key_deserializer="bytes",
        value_deserializer="bytes",
        config=topic_config,
    )
    output_topic = app.topic(
        args.output_topic,
        key_serializer="bytes",
        value_serializer="bytes",
        config=topic_config,
    )

    sdf = app.dataframe(input_topic)
    sdf = sdf.filter(sequencer, stateful=True)
    sdf.to_topic(output_topic)  # same key, the input value bytes unchanged
    return app


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    counts = Counts()
    app = build_app(args, counts)
    stop = threading.Event()
    reporter = threading.Thread(target=report_every_second, args=(counts, stop), daemon=True)
    reporter.start()
    try:
        app.run()  # Quix installs its own SIGTERM/SIGINT handlers and returns after a clean stop
    finally:
        stop.set()
        reporter.join(timeout=2.0)
        emit(counts.snapshot())
    return 0


if __name__ == "__main__":
    sys.exit(main())
