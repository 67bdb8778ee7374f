"""The log tails that explain a failure of the development broker (the `detail` of its
`BrokerError`, `seqgate_devtools.errors`)."""

from __future__ import annotations

import os
import re
from pathlib import Path

__all__ = ["failure_detail", "tail_file", "tail_text"]

_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def tail_text(text: str, lines: int) -> str:
    """The last ``lines`` non-blank lines of ``text``, without colours, indented as a quote."""
    kept = [_ANSI.sub("", line).rstrip() for line in text.splitlines() if line.strip()]
    return "\n".join(f"  | {line}" for line in kept[-lines:])


def tail_file(path: Path, lines: int) -> str:
    """:func:`tail_text` of the end of ``path`` (empty if it cannot be read)."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 256 * 1024))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return tail_text(text, lines)


def failure_detail(data_dir: Path) -> str:
    """The tails of a broker's log and of its own output, for a :class:`BrokerError`."""
    parts = []
    for name, lines in (("server.log", 40), ("broker.out", 20)):
        tail = tail_file(data_dir / name, lines)
        if tail:
            parts.append(f"last lines of {data_dir / name}:\n{tail}")
    return "\n".join(parts) or f"(no output in {data_dir})"
