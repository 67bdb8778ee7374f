"""Small file and progress helpers shared by the development broker's modules."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["Progress", "file_lock", "resource_bytes", "say", "write_json_atomic"]

Progress = Callable[[str], None]
"""Receives human-readable status lines."""


def say(progress: Progress | None, message: str) -> None:
    if progress is not None:
        progress(message)


def resource_bytes(name: str) -> bytes:
    """A file shipped in this package (``pom.xml``, ``log4j2.xml``)."""
    return (
        resources.files(__package__ or "seqgate.streams.devtools.broker")
        .joinpath(name)
        .read_bytes()
    )


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``path`` (created if missing) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON so that readers see the old file or the new one, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)
