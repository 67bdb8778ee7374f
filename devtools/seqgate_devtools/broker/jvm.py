"""The broker's Java processes: formatting the KRaft storage, then running ``kafka.Kafka``.

Both log with the ``log4j2.xml`` of the data directory and write their own output to a file
there, so that a failure can be explained with the tail of those files.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from seqgate_devtools.broker.config import cluster_id
from seqgate_devtools.broker.locations import HOST
from seqgate_devtools.broker.log_tails import tail_file
from seqgate_devtools.broker.probe import broker_answers
from seqgate_devtools.broker.processes import dir_flag, terminate
from seqgate_devtools.errors import BrokerError

__all__ = ["address_in_use", "await_answer", "format_storage", "launch", "spawn_broker"]

_FORMAT_TIMEOUT = 120.0
_SINGLE_NODE_HEAP = "1g"


def _java_cmd(
    java: str, libs: Path, data_dir: Path, log_name: str, heap: str, flags: Sequence[str] = ()
) -> list[str]:
    return [
        java,
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        *flags,
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={data_dir / 'log4j2.xml'}",
        f"-Dseqgate.broker.log={data_dir / log_name}",
        "-cp",
        f"{libs}{os.sep}*",
    ]


def _spawn_java(
    cmd: list[str], data_dir: Path, out: BinaryIO, *, new_session: bool
) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        cmd,
        cwd=data_dir,
        stdin=subprocess.DEVNULL,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=new_session,
        close_fds=True,
    )


def _wait_or_kill(process: subprocess.Popen[bytes], timeout: float) -> int:
    """``process``'s exit code; killed if the wait ends otherwise (as ``subprocess.run`` does)."""
    try:
        return process.wait(timeout=timeout)
    except BaseException:
        process.kill()
        process.wait()
        raise


def format_storage(
    java: str,
    libs: Path,
    data_dir: Path,
    props: Path,
    extra: list[str] | None = None,
    *,
    cluster: str | None = None,
    flags: Sequence[str] = (),
) -> None:
    """Run ``kafka.tools.StorageTool format`` for ``props`` with ``cluster`` (default: a new
    cluster id; the nodes of one cluster must share theirs)."""
    cmd = [
        *_java_cmd(java, libs, data_dir, "format.log", "256m", flags),
        "kafka.tools.StorageTool",
        "format",
        "-t",
        cluster or cluster_id(),
        "-c",
        str(props),
        *(extra or []),
    ]
    out_path = data_dir / "format.out"
    with out_path.open("wb") as out:
        process = _spawn_java(cmd, data_dir, out, new_session=False)
        try:
            returncode = _wait_or_kill(process, _FORMAT_TIMEOUT)
        except subprocess.TimeoutExpired as exc:
            raise BrokerError(
                f"kafka.tools.StorageTool format did not finish within {_FORMAT_TIMEOUT:.0f} s",
                tail_file(out_path, 20) or None,
            ) from exc
    if returncode != 0:
        detail = "\n".join(
            t for t in (tail_file(out_path, 20), tail_file(data_dir / "format.log", 20)) if t
        )
        raise BrokerError(
            f"formatting the broker storage in {data_dir} failed (exit code {returncode})",
            detail or None,
        )


def launch(
    java: str,
    libs: Path,
    data_dir: Path,
    props: Path,
    port: int,
    timeout: float,
    properties: Path | None = None,
) -> tuple[subprocess.Popen[bytes] | None, str]:
    """Start the broker and wait until it answers: ``(process, "")`` on success, else
    ``(None, reason)`` with the process already gone."""
    process = spawn_broker(java, libs, data_dir, props)
    reason = await_answer(process, data_dir, f"{HOST}:{port}", timeout, properties)
    return (None, reason) if reason else (process, "")


def spawn_broker(
    java: str,
    libs: Path,
    data_dir: Path,
    props: Path,
    *,
    heap: str = _SINGLE_NODE_HEAP,
    flags: Sequence[str] = (),
) -> subprocess.Popen[bytes]:
    """Start ``kafka.Kafka`` on ``props`` without waiting (the nodes of a cluster start
    together: none answers before a quorum of controllers runs)."""
    cmd = [
        *_java_cmd(java, libs, data_dir, "server.log", heap, flags),
        dir_flag(data_dir),
        "kafka.Kafka",
        str(props),
    ]
    with (data_dir / "broker.out").open("ab") as out:
        # Its own session: the broker outlives this process and a Ctrl-C meant for it.
        return _spawn_java(cmd, data_dir, out, new_session=True)


def await_answer(
    process: subprocess.Popen[bytes],
    data_dir: Path,
    bootstrap: str,
    timeout: float,
    properties: Path | None = None,
) -> str:
    """Wait until the broker at ``bootstrap`` answers: ``""``, or the reason it did not (the
    process is then gone)."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            code = process.poll()
            if code is not None:
                return f"the broker exited with code {code} during startup"
            if broker_answers(bootstrap, timeout=1.0, properties=properties):
                return ""
            if time.monotonic() >= deadline:
                terminate(process.pid, data_dir, process, 10.0)
                return f"the broker did not answer on {bootstrap} within {timeout:.0f} s"
            time.sleep(0.2)
    except BaseException:  # e.g. Ctrl-C while waiting: leave no half-started broker behind
        terminate(process.pid, data_dir, process, 10.0)
        raise


def address_in_use(data_dir: Path) -> bool:
    """True if the broker's last start failed because a port was taken meanwhile."""
    text = tail_file(data_dir / "server.log", 200) + tail_file(data_dir / "broker.out", 50)
    return "Address already in use" in text
