"""Damage done to a RocksDB store on disk (flipped or truncated SST, empty MANIFEST, no
CURRENT), and a small disk to fill."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.required import unavailable


def sst_files(path: Path) -> list[Path]:
    return sorted(path.glob("*.sst"))


# ---- kinds of damage -------------------------------------------------------------------------


def flip_sst_bytes(path: Path) -> None:
    """Invert 16 bytes in the middle of the largest SST file: inside a data block."""
    sst = max(sst_files(path), key=lambda p: p.stat().st_size)
    data = bytearray(sst.read_bytes())
    middle = len(data) // 2
    data[middle : middle + 16] = bytes(b ^ 0xFF for b in data[middle : middle + 16])
    sst.write_bytes(bytes(data))


def truncate_sst(path: Path) -> None:
    sst = max(sst_files(path), key=lambda p: p.stat().st_size)
    os.truncate(sst, sst.stat().st_size // 2)


def empty_manifest(path: Path) -> None:
    (manifest,) = path.glob("MANIFEST-*")
    manifest.write_bytes(b"")


def delete_current(path: Path) -> None:
    (path / "CURRENT").unlink()


DAMAGE: dict[str, Callable[[Path], None]] = {
    "flipped-sst-bytes": flip_sst_bytes,
    "truncated-sst": truncate_sst,
    "empty-manifest": empty_manifest,
    "missing-current": delete_current,
}


# ---- a full disk -------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """An 8 MiB tmpfs, unmounted at the end (where mounting is not permitted: skipped, and a
    failure under CI)."""
    mount = tmp_path / "small-disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        reason = f"cannot mount a tmpfs at {mount}: {done.stderr.strip() or done.returncode}"
        unavailable("a small tmpfs disk (mount -t tmpfs, as root)", reason)
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=True)


def fill(mount: Path) -> Path:
    """Write a file until the filesystem is full, to the last byte it accepts."""
    filler = mount / "filler"
    with filler.open("wb", buffering=0) as out:
        for chunk in (1 << 20, 1 << 16, 1 << 12, 1 << 8, 1):
            with contextlib.suppress(OSError):
                for _ in range((16 << 20) // chunk):  # bounded: more than the disk holds
                    out.write(b"\0" * chunk)
    return filler
