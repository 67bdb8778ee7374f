"""Small file and progress helpers shared by the development broker's modules."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Callable, Iterator
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["Progress", "file_lock", "fill_once", "resource_bytes", "say", "write_json_atomic"]

Progress = Callable[[str], None]
"""Receives human-readable status lines."""


def say(progress: Progress | None, message: str) -> None:
    if progress is not None:
        progress(message)


def resource_bytes(name: str) -> bytes:
    """A file shipped in this package (``pom.xml``, ``log4j2.xml``)."""
    return resources.files(__package__ or "seqgate_devtools.broker").joinpath(name).read_bytes()


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


def fill_once(
    target: Path, marker: Path, complete: Callable[[], bool], fill: Callable[[Path], dict[str, Any]]
) -> None:
    """Make the cached directory ``target`` complete, once for every process sharing it.

    ``complete()`` is asked first, then again under a lock next to ``target`` (another
    process may have filled it meanwhile). ``fill`` fills a staging directory beside it and
    returns what ``marker`` records; the staging directory then replaces ``target`` and the
    marker is written last, so a crash at any step leaves no marker and the next call
    starts over.
    """
    if complete():
        return
    with file_lock(target.parent / ".lock"):
        if complete():
            return
        staging = target.with_name(f"{target.name}.partial")
        shutil.rmtree(staging, ignore_errors=True)
        marker.unlink(missing_ok=True)
        staging.mkdir(parents=True)
        recorded = fill(staging)
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
        write_json_atomic(marker, recorded)
