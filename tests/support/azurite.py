"""Azurite, Microsoft's Azure Storage emulator, as a real Blob service for the tests.

npm installs a pinned Azurite once into ``${SEQGATE_HOME:-~/.cache/seqgate}/azurite``
(``fill_once``, as the broker's jars are); each ``azurite_blob()`` starts its
own in-memory Blob service on a free loopback port and stops it afterwards. Without npm,
or when the install fails, the test fails with the reason under ``$CI`` and is skipped
with it otherwise.
"""

from __future__ import annotations

import contextlib
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from seqgate_devtools.broker.files import fill_once
from seqgate_devtools.broker.locations import seqgate_home

from tests.support.required import unavailable

AZURITE_VERSION = "3.37.0"
ACCOUNT = "devstoreaccount1"
# The emulator's documented, public development key (the same in every Azurite).
ACCOUNT_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
FLAGS = (
    "--blobHost",
    "--blobPort",
    "--inMemoryPersistence",
    "--skipApiVersionCheck",
    "--loose",
    "--silent",
    "--disableTelemetry",
)
_INSTALL_TIMEOUT_S = 600.0
_START_TIMEOUT_S = 60.0


class AzuriteUnavailable(Exception):
    """npm is missing, or installing or starting Azurite failed; the message says why."""


def connection_string(port: int) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={ACCOUNT_KEY};"
        f"BlobEndpoint=http://127.0.0.1:{port}/{ACCOUNT};"
    )


def ensure_azurite() -> Path:
    """The ``azurite-blob`` program of the pinned version, installed with npm if needed."""
    home = seqgate_home() / "azurite"
    prefix = home / AZURITE_VERSION
    marker = home / f"{AZURITE_VERSION}.complete"

    def complete() -> bool:
        return marker.is_file() and _program(prefix).is_file()

    def install(staging: Path) -> dict[str, Any]:
        npm = shutil.which("npm")
        if npm is None:
            raise AzuriteUnavailable("npm is not on the PATH (install Node.js 18+ with npm)")
        command = [npm, "install", "--prefix", str(staging), f"azurite@{AZURITE_VERSION}"]
        _run([*command, "--no-audit", "--no-fund", "--loglevel=error"], staging)
        _check_flags(_program(staging), staging)
        return {"package": f"azurite@{AZURITE_VERSION}"}

    fill_once(prefix, marker, complete, install)
    return _program(prefix)


def _program(prefix: Path) -> Path:
    # npm links it with a relative path: it stays valid when the prefix is renamed.
    return prefix / "node_modules" / ".bin" / "azurite-blob"


def _run(command: list[str], cwd: Path) -> str:
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=_INSTALL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise AzuriteUnavailable(f"{' '.join(command)} failed: {error}") from error
    if done.returncode != 0:
        tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-5:])
        raise AzuriteUnavailable(
            f"{' '.join(command)} exited {done.returncode}: {tail} (check access to the npm"
            " registry)"
        )
    return done.stdout


def _check_flags(program: Path, prefix: Path) -> None:
    if not program.is_file():
        raise AzuriteUnavailable(f"npm installed azurite@{AZURITE_VERSION} without {program}")
    usage = _run([str(program), "--help"], prefix)
    missing = [flag for flag in FLAGS if flag not in usage]
    if missing:
        raise AzuriteUnavailable(f"azurite-blob {AZURITE_VERSION} lacks {', '.join(missing)}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _wait_until_listening(process: subprocess.Popen[bytes], port: int, log: Path) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.5):
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=0.05)
        if process.returncode is not None:
            said = " ".join(log.read_text(encoding="utf-8", errors="replace").split())
            raise AzuriteUnavailable(
                f"azurite-blob exited {process.returncode} on start: {said[-300:]}"
            )
    raise AzuriteUnavailable(f"azurite-blob did not listen on port {port} within 60 s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextlib.contextmanager
def _running(program: Path) -> Iterator[int]:
    port = _free_port()
    with tempfile.TemporaryDirectory(prefix="azurite-") as workspace:
        command = [str(program), "--blobHost", "127.0.0.1", "--blobPort", str(port), *FLAGS[2:]]
        log = Path(workspace) / "azurite.log"
        with log.open("wb") as output:
            process = subprocess.Popen(
                command, cwd=workspace, stdin=subprocess.DEVNULL, stdout=output, stderr=output
            )
        try:
            _wait_until_listening(process, port, log)
            yield port
        finally:
            _stop(process)


@contextlib.contextmanager
def azurite_blob() -> Iterator[str]:
    """A running Azurite Blob service; yields its connection string (devstoreaccount1)."""
    with contextlib.ExitStack() as stack:
        try:
            port = stack.enter_context(_running(ensure_azurite()))
        except AzuriteUnavailable as error:
            unavailable("Azurite", str(error))
        yield connection_string(port)
