"""`seqgate bridge http --processes 2` against the real broker, as a subprocess.

Many notifications over many connections: each is published exactly once, both workers
served some (their `worker PID: {...}` lines on stderr), SIGTERM ends it with exit 0;
a worker killed stops the other and the command exits 1 with one log line.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import aiohttp
import pytest

from tests.support.environment import clean_env
from tests.support.http_bridge import Process, Topicset, command, put
from tests.support.http_bridge import topics as topics

pytestmark = pytest.mark.kafka

CONNECTIONS = 16  # the kernel hashes each to a worker: all on one has odds 2**-15
PER_CONNECTION = 25


async def _send(url: str) -> list[int]:
    async def one_connection(index: int) -> list[int]:
        connector = aiohttp.TCPConnector(limit=1)
        timeout = aiohttp.ClientTimeout(total=60)
        statuses = []
        async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
            for n in range(PER_CONNECTION):
                async with session.post(url, data=put(f"c{index}/{n}.txt")) as response:
                    await response.read()
                    statuses.append(response.status)
        return statuses

    batches = await asyncio.gather(*(one_connection(i) for i in range(CONNECTIONS)))
    return [status for batch in batches for status in batch]


def _worker_summaries(stderr: str) -> dict[int, dict[str, int]]:
    found = {}
    for line in stderr.splitlines():
        if line.startswith("worker ") and ": {" in line:
            pid, _, summary = line.removeprefix("worker ").partition(": ")
            found[int(pid)] = json.loads(summary)
    return found


def _waited_line(lines: list[str], prefix: str, timeout: float = 10) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [line for line in lines if line.startswith(prefix)]
        if found:
            return found[0]
        time.sleep(0.05)
    raise AssertionError(f"no `{prefix}` line: {''.join(lines)}")


def _ended(process: Process, timeout: float = 30) -> tuple[int, dict[str, int], str]:
    """Once the command exits: (exit status, JSON summary, all of stderr). Its stderr
    is left to the reader thread (`communicate` would race it for the lines)."""
    status = process.popen.wait(timeout)
    assert process.popen.stdout is not None
    summary = json.loads(process.popen.stdout.read())
    while process.lines.get(timeout=timeout) is not None:
        pass
    return status, summary, "".join(process.stderr)


def test_two_processes_publish_each_notification_once(topics: Topicset) -> None:
    options = ("--events-topic", topics.events, "--rejected-topic", topics.rejected)
    with command("--processes", "2", *options, bootstrap=topics.bootstrap) as process:
        address = process.address()
        statuses = asyncio.run(_send(f"{address}/s3"))
        started = time.monotonic()
        process.popen.send_signal(signal.SIGTERM)
        status, summary, stderr = _ended(process)
    assert status == 0, stderr
    assert statuses == [200] * (CONNECTIONS * PER_CONNECTION)
    assert time.monotonic() - started < 15
    keys = Counter(event.key for _, _, event in topics.published())
    assert len(keys) == CONNECTIONS * PER_CONNECTION
    assert set(keys.values()) == {1}
    assert summary["published"] == CONNECTIONS * PER_CONNECTION
    workers = _worker_summaries(stderr)
    assert len(workers) == 2
    assert all(w["requests"] > 0 for w in workers.values()), workers
    assert sum(w["requests"] for w in workers.values()) == summary["requests"]
    assert "workers: 2 processes" in stderr
    assert "Traceback" not in stderr


def test_a_worker_killed_stops_the_other_and_exits_1(kafka_bootstrap: str) -> None:
    with command("--processes", "2", bootstrap=kafka_bootstrap) as process:
        process.address()
        line = _waited_line(process.stderr, "workers: ")
        pids = [int(pid) for pid in line.partition(", pids ")[2].split(", ")]
        os.kill(pids[0], signal.SIGKILL)
        started = time.monotonic()
        status, summary, stderr = _ended(process)
    assert status == 1, stderr
    assert time.monotonic() - started < 15
    assert stderr.count("a worker process exited on its own") == 1
    assert f'"pid": {pids[0]}' in stderr
    assert summary["messages"] == 0
    assert "Traceback" not in stderr
    with pytest.raises(ProcessLookupError):
        os.kill(pids[1], 0)


def test_workers_import_the_installed_seqgate_not_the_current_directorys(
    kafka_bootstrap: str, tmp_path: Path
) -> None:
    (tmp_path / "seqgate").mkdir()
    (tmp_path / "seqgate" / "__init__.py").write_text("raise SystemExit('the wrong seqgate')\n")
    args = ["bridge", "http", "--port", "0", "--processes", "2"]
    popen = subprocess.Popen(
        [sys.executable, "-P", "-m", "seqgate.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**clean_env(), "KAFKA_BOOTSTRAP_SERVERS": kafka_bootstrap},
        cwd=tmp_path,
        text=True,
    )
    try:
        assert popen.stderr is not None
        lines = [popen.stderr.readline() for _ in range(3)]
        assert lines[0].startswith("listening on "), lines
        popen.send_signal(signal.SIGTERM)
        stdout, stderr = popen.communicate(timeout=30)
    finally:
        popen.kill()
    assert popen.returncode == 0, stderr
    assert "the wrong seqgate" not in stderr
    assert json.loads(stdout)["messages"] == 0
