"""Structured logging: one JSON object per line on stderr, quiet by default."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterable
from typing import Any

_STANDARD_ATTRIBUTES = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}
MASK = "***"
# Values never to be written (Kafka passwords and keys): the formatter masks them in every
# line, whichever logger (librdkafka's debug output included) produced it.
_SECRETS: set[str] = set()


def redact(values: list[str]) -> None:
    """Mask these values in every log line from now on."""
    _SECRETS.update(value for value in values if value)


def mask_values(text: str, values: Iterable[str]) -> str:
    """`text` with each of `values` (also as JSON escapes it) replaced by ***, the longest
    first so that a secret containing another is masked whole."""
    for value in sorted((value for value in values if value), key=len, reverse=True):
        text = text.replace(value, MASK).replace(json.dumps(value)[1:-1], MASK)
    return text


def masked(text: str) -> str:
    """`text` with every value given to `redact` masked."""
    return mask_values(text, _SECRETS)


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": round(record.created, 3),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        for name, value in vars(record).items():
            if name not in _STANDARD_ATTRIBUTES:
                entry[name] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        line = json.dumps(entry, default=str)
        return masked(line) if _SECRETS else line


def configure_logging(level: str = "warning") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    verbose = level.lower() in ("debug", "info")
    logging.getLogger("seqgate.librdkafka").setLevel(level.upper() if verbose else "CRITICAL")
