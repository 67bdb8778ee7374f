"""`seqgate bridge http --processes N`: the option and the supervisor, with real processes.

The workers here are small Python scripts that speak a worker's protocol (``listening``,
then a JSON summary, on stdout); tests/kafka/test_bridge_http_processes.py runs the real
command against a broker.
"""

from __future__ import annotations

import signal
import socket
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from seqgate.cli import cli
from seqgate.cli.http_processes import Supervisor, reserved_port
from seqgate.runtime.errors import UsageError


@pytest.mark.parametrize("value", ["0", "-1", "two", "257"])
def test_processes_below_one_or_not_a_number_is_refused(value: str) -> None:
    result = CliRunner().invoke(cli, ["bridge", "http", "--processes", value])
    assert result.exit_code == 2
    assert "--processes" in result.output


def test_the_variable_is_checked_as_the_flag() -> None:
    result = CliRunner().invoke(cli, ["bridge", "http"], env={"SEQGATE_PROCESSES": "0"})
    assert result.exit_code == 2
    assert "--processes" in result.output


def test_the_help_names_the_variable_and_the_metrics_rule() -> None:
    result = CliRunner().invoke(cli, ["bridge", "http", "--help"])
    assert "SEQGATE_PROCESSES" in result.output
    assert "--worker-port" not in result.output


def test_port_0_is_resolved_once_and_shared_with_reuse_port() -> None:
    with reserved_port("127.0.0.1", 0) as (host, port):
        assert host == "127.0.0.1" and port > 0
        sharer = socket.socket()
        sharer.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sharer.bind((host, port))
        sharer.listen()
        sharer.close()


def test_an_address_taken_by_another_server_is_a_usage_error() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        message = f"cannot listen on 127.0.0.1:{port}"
        with pytest.raises(UsageError, match=message), reserved_port("127.0.0.1", port):
            pass


# A worker: the first to start exits with code 2 once listening; the others serve until
# SIGTERM, then print their summary.
WORKER = textwrap.dedent(
    """
    import os, signal, sys, time
    first = True
    try:
        os.close(os.open(sys.argv[1], os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        first = False
    stopped = []
    signal.signal(signal.SIGTERM, lambda *_: stopped.append(1))
    print("listening", flush=True)
    if first:
        time.sleep(0.5)
        sys.exit(2)
    while not stopped and time.sleep(0.05) is None:
        pass
    print('{"requests": 3, "published": 2}', flush=True)
    """
)


def test_a_worker_exiting_stops_the_others_and_its_code_is_the_exit_code(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    announced: list[list[int]] = []
    handler = signal.getsignal(signal.SIGTERM)
    command = [sys.executable, "-c", WORKER, str(tmp_path / "first")]
    supervisor = Supervisor(command, 3, announced.append)
    started = time.monotonic()
    assert supervisor.run() == 2
    assert time.monotonic() - started < 20
    assert [len(pids) for pids in announced] == [3]
    assert supervisor.summary() == {"requests": 6, "published": 4}
    assert [w.exit_code for w in supervisor.workers].count(2) == 1
    assert [r.message for r in caplog.records] == [
        "a worker process exited on its own: stopping the others"
    ]
    assert signal.getsignal(signal.SIGTERM) is handler


def test_a_worker_killed_by_a_signal_other_than_sigterm_is_exit_code_1(tmp_path: Path) -> None:
    script = "import os, signal; print('listening', flush=True); os.kill(os.getpid(), 9)"
    supervisor = Supervisor([sys.executable, "-c", script], 2, lambda pids: None)
    assert supervisor.run() == 1
    assert supervisor.summary() == {}
