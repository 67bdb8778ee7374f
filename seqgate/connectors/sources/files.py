"""Reading notifications from files or stdin (replays, tests, the demo).

A file holds either one JSON document (pretty-printed or not) or JSON
Lines: one notification per non-blank line. A pretty-printed document with a
syntax error stays one message (one ``malformed_json`` rejection naming the
error's line and column), not one per line. Each message keeps its exact
bytes and an origin `file:<path>:<line>` so a rejected record points back to
where it came from.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from seqgate.connectors.parsers.json_fields import brackets_balanced, nesting_exceeds
from seqgate.connectors.parsers.normalize import normalize
from seqgate.connectors.parsers.s3.native import S3ParseOptions
from seqgate.connectors.publish.filters import EventFilter
from seqgate.connectors.publish.publisher import EventPublisher


@dataclass(frozen=True, slots=True)
class RawMessage:
    raw: bytes
    origin: str


def read_messages(path: str, *, jsonl: bool = False) -> Iterator[RawMessage]:
    """Yield the messages of one file; `-` reads standard input; a directory
    stands for the regular files directly in it, in name order, hidden ones skipped."""
    if path == "-":
        yield from split_messages(sys.stdin.buffer.read(), "stdin", jsonl=jsonl)
        return
    location = Path(path)
    if location.is_dir():
        for child in sorted(location.iterdir()):
            if child.is_file() and not child.name.startswith("."):
                yield from split_messages(child.read_bytes(), str(child), jsonl=jsonl)
        return
    yield from split_messages(location.read_bytes(), path, jsonl=jsonl)


def split_messages(data: bytes, name: str, *, jsonl: bool = False) -> Iterator[RawMessage]:
    """By content: one JSON document if the whole input is one, else JSON Lines.
    `jsonl` forces JSON Lines (so a one-line file is read the same either way)."""
    if not data.strip():
        return
    if not jsonl and _is_single_document(data):
        first_line = 1 + data[: len(data) - len(data.lstrip())].count(b"\n")
        yield RawMessage(data.strip(), f"file:{name}:{first_line}")
        return
    for number, line in enumerate(data.split(b"\n"), start=1):
        line = line.rstrip(b"\r")
        if line.strip():
            yield RawMessage(line, f"file:{name}:{number}")


def _is_single_document(data: bytes) -> bool:
    # A JSON Lines file with two or more documents is not one JSON value;
    # a file with exactly one line is the same either way.
    if nesting_exceeds(data):
        # Too deep to decode (the normalizer refuses it unread): JSON Lines
        # when every line is complete on its own, as in a file with one bad line.
        return not all(brackets_balanced(line) for line in data.split(b"\n"))
    try:
        json.loads(data)
    except ValueError:
        return _pretty_printed(data)
    return True


def _pretty_printed(data: bytes) -> bool:
    """Whether invalid JSON is one document written over several lines (a trailing
    comma in a pretty-printed example), to be refused once with the error's line and
    column rather than once per line.

    Its first line opens a value that it does not close, which a line of JSON Lines
    never does; and either the whole text closes what it opens (the error is not a
    cut) or no line holds a JSON value of its own (a cut document, not JSON Lines
    whose first line is broken).
    """
    lines = [line for line in data.split(b"\n") if line.strip()]
    first = lines[0].lstrip()
    if len(lines) < 2 or first[:1] not in (b"{", b"[") or brackets_balanced(first):
        return False
    return brackets_balanced(data) or not any(_is_object(line) for line in lines[1:])


def _is_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except ValueError:
        return False


def publish_read(
    publisher: EventPublisher,
    raw: bytes,
    origin: str,
    s3_options: S3ParseOptions,
    event_filter: EventFilter,
) -> int:
    """Publish one message read from a file; how many of its events the filter dropped.

    For a source that `flush` acknowledges as a whole: without a filter, the compiled
    core publishes a clean native S3 document's records directly
    (`EventPublisher.publish_clean`, the same records); anything else is normalized,
    filtered and submitted.
    """
    if (
        s3_options.engine == "compiled"
        and not event_filter.active
        and publisher.publish_clean(raw, origin, s3_options.schema_floor)
    ):
        return 0
    result, dropped = event_filter.apply(normalize(raw, origin, s3_options))
    publisher.submit(result, raw, origin)
    return dropped
