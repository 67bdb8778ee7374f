"""The broker's data directory: wiped and marked as the dev broker's before every start."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from seqgate_devtools.errors import BrokerError

__all__ = ["prepare_data_dir", "throwaway_data_dir", "wipeable_entries"]

_MARKER = ".seqgate-devbroker"
_KEEP_IN_DATA_DIR = frozenset({"state.json", "state.json.lock"})


@contextlib.contextmanager
def throwaway_data_dir(data_dir: Path | None, prefix: str) -> Iterator[Path]:
    """``data_dir`` made absolute; without one, a new temporary directory removed at the end
    (the data dirs of ``running_broker`` and ``running_cluster``)."""
    if data_dir is not None:
        yield data_dir.absolute()
        return
    owned = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield owned
    finally:
        shutil.rmtree(owned, ignore_errors=True)


def wipeable_entries(data_dir: Path) -> list[Path]:
    """Entries of ``data_dir`` except a state file kept there (see :func:`running_broker`)."""
    return [e for e in data_dir.iterdir() if e.name not in _KEEP_IN_DATA_DIR]


def prepare_data_dir(data_dir: Path) -> None:
    """Create ``data_dir``, or wipe it if an earlier start made it; refuse anything else."""
    if data_dir.exists():
        if not data_dir.is_dir():
            raise BrokerError(f"data dir {data_dir} exists and is not a directory")
        entries = wipeable_entries(data_dir)
        if entries and not (data_dir / _MARKER).exists():
            raise BrokerError(
                f"refusing to wipe {data_dir}: it is not empty and was not created by the seqgate "
                f"dev broker (no {_MARKER} file); use an empty or new directory"
            )
        _ensure_not_in_use(data_dir)
        for node_dir in sorted(data_dir.glob("node-*")):  # the nodes of a cluster
            _ensure_not_in_use(node_dir)
        for entry in entries:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    else:
        data_dir.mkdir(parents=True)
    (data_dir / _MARKER).write_text(
        "Data directory of a seqgate development broker; wiped on every start.\n",
        encoding="utf-8",
    )


def _ensure_not_in_use(data_dir: Path) -> None:
    """Refuse to wipe a data dir whose Kafka log dir is locked by a live broker."""
    lock = data_dir / "kraft" / ".lock"
    if not lock.exists():
        return
    try:
        fd = os.open(lock, os.O_RDWR)
    except OSError:
        return
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        fcntl.lockf(fd, fcntl.LOCK_UN)
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EAGAIN):
            raise BrokerError(
                f"data dir {data_dir} is in use by a running Kafka broker; stop it first "
                "(seqgate broker down) or use another directory"
            ) from exc
    finally:
        os.close(fd)
