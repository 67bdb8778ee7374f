"""`seqgate bridge http --processes N`: N worker processes serving one address.

One CPython process cannot keep up with a raw produce (the Python work per
notification), so N > 1 runs N workers, each serving the same host:port with
SO_REUSEPORT (the kernel spreads the connections across them) and publishing through
its own producer. A worker is this command line run again (``python -P -m
seqgate.cli``, the same arguments, environment and ``--config`` file) with the
hidden ``--worker-port PORT``: it reads the configuration exactly as the parent did.

The parent checks the configuration and Kafka once, holds the address on a bound (not
listening) SO_REUSEPORT socket (so that port 0 is resolved once and a taken address fails
here), prints ``listening on`` once every worker listens, and:

* on SIGTERM or SIGINT sends every worker SIGTERM (each drains and flushes as a single
  process does) and waits for them;
* when a worker exits on its own, stops the others (one log line);
* prints one ``worker PID: {summary}`` line per worker on stderr, then one JSON summary
  on stdout, the workers' counters added up;
* exits with the first non-zero exit code of a worker (1 for one killed by a signal
  other than SIGTERM or SIGINT).

A worker answers its parent on stdout (``listening``, then its JSON summary) and reads
its stdin, a pipe from the parent: end of file, the parent gone (even by SIGKILL), stops
it as SIGTERM does, so that no orphan keeps serving the port.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from types import FrameType
from typing import IO

import click

from seqgate.cli.app import ARGV_KEY
from seqgate.runtime.errors import UsageError

log = logging.getLogger(__name__)

LISTENING = "listening"  # a worker's first line on stdout
_STOPPED_BY = (signal.SIGTERM, signal.SIGINT)


@dataclass
class _Worker:
    popen: subprocess.Popen[bytes]
    listening: bool = False
    summary: dict[str, int] | None = None
    exit_code: int | None = None


@dataclass
class Supervisor:
    """The parent: starts the workers, forwards the stop, reports their exits."""

    command: list[str]
    processes: int
    on_listening: Callable[[list[int]], None]
    workers: list[_Worker] = field(default_factory=list)
    stopping: bool = False
    _signalled: bool = False
    _lines: queue.Queue[tuple[int, bytes | None]] = field(default_factory=queue.Queue)

    def run(self) -> int:
        """Serve until every worker has exited; the exit code."""
        previous = {signum: signal.signal(signum, self._signal) for signum in _STOPPED_BY}
        try:
            return self._supervise()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def _supervise(self) -> int:
        for index in range(self.processes):
            self._start(index)
        running = set(range(self.processes))
        while running:
            if self._signalled and not self.stopping:
                self._stop_all()
            try:
                index, line = self._lines.get(timeout=0.1)
            except queue.Empty:
                continue
            if line is None:
                running.discard(index)
                self._exited(self.workers[index])
            else:
                self._heard(self.workers[index], line)
        return next((w.exit_code for w in self.workers if w.exit_code), 0)

    def _signal(self, signum: int, frame: FrameType | None) -> None:
        self._signalled = True

    def _start(self, index: int) -> None:
        popen = subprocess.Popen(
            self.command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Ctrl-C reaches the parent only, which stops the workers in order.
            process_group=0,
        )
        self.workers.append(_Worker(popen))
        assert popen.stdout is not None
        threading.Thread(target=self._read, args=(index, popen.stdout), daemon=True).start()

    def _read(self, index: int, stdout: IO[bytes]) -> None:
        for line in stdout:
            self._lines.put((index, line))
        self._lines.put((index, None))

    def _heard(self, worker: _Worker, line: bytes) -> None:
        text = line.decode("utf-8", "replace").strip()
        if text == LISTENING:
            worker.listening = True
            if all(w.listening for w in self.workers) and len(self.workers) == self.processes:
                self.on_listening([w.popen.pid for w in self.workers])
            return
        with contextlib.suppress(ValueError):
            summary = json.loads(text)
            if isinstance(summary, dict):
                worker.summary = {str(k): int(v) for k, v in summary.items()}

    def _exited(self, worker: _Worker) -> None:
        returncode = worker.popen.wait()
        if returncode >= 0:
            worker.exit_code = returncode
        else:
            worker.exit_code = 0 if -returncode in _STOPPED_BY else 1
        if not self.stopping:
            level = logging.ERROR if worker.exit_code else logging.WARNING
            log.log(
                level,
                "a worker process exited on its own: stopping the others",
                extra={"pid": worker.popen.pid, "exit_code": worker.exit_code},
            )
            self._stop_all()

    def _stop_all(self) -> None:
        self.stopping = True
        for worker in self.workers:
            if worker.popen.poll() is None:
                worker.popen.send_signal(signal.SIGTERM)

    def summary(self) -> dict[str, int]:
        """The workers' counters added up (a worker that died unannounced adds nothing)."""
        total: Counter[str] = Counter()
        for worker in self.workers:
            total.update(worker.summary or {})
        return dict(total)


def stop_when_stdin_ends(loop: asyncio.AbstractEventLoop, stop: asyncio.Event) -> None:
    """Set ``stop`` once stdin (a worker's pipe from its parent) reaches end of file."""
    fd = sys.stdin.fileno()

    def readable() -> None:
        try:
            data = os.read(fd, 4096)
        except OSError:
            data = b""
        if not data:
            loop.remove_reader(fd)
            if not stop.is_set():
                log.warning("the parent process is gone: stopping")
            stop.set()

    loop.add_reader(fd, readable)


@contextlib.contextmanager
def reserved_port(host: str, port: int) -> Iterator[tuple[str, int]]:
    """The address held by a bound SO_REUSEPORT socket that does not listen (so takes no
    connection); the bound address (port 0 resolved)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        holder = socket.socket(family, kind, proto)
    except OSError as error:
        raise UsageError(f"--host/--port: cannot listen on {host}:{port} ({error})") from error
    with holder:
        try:
            holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
            holder.bind(address)
        except OSError as error:
            raise UsageError(f"--host/--port: cannot listen on {host}:{port} ({error})") from error
        bound = holder.getsockname()
        yield str(bound[0]), int(bound[1])


def serve_in_processes(
    processes: int, host: str, port: int, announce: Callable[[str, int], None]
) -> None:
    """Run ``processes`` workers of this command line on host:port until SIGTERM; print
    the summary and exit with the workers' code."""
    argv = click.get_current_context().meta[ARGV_KEY]
    with reserved_port(host, port) as (bound_host, bound_port):
        # -P: not the current directory first on sys.path, where another checkout's
        # seqgate may be; the workers import the one the interpreter has installed.
        command = [sys.executable, "-P", "-m", "seqgate.cli", *argv]
        command += ["--worker-port", str(bound_port)]

        def listening(pids: list[int]) -> None:
            announce(bound_host, bound_port)
            click.echo(
                f"workers: {len(pids)} processes, pids {', '.join(map(str, pids))}", err=True
            )

        supervisor = Supervisor(command, processes, listening)
        code = supervisor.run()
    for worker in supervisor.workers:
        click.echo(f"worker {worker.popen.pid}: {json.dumps(worker.summary)}", err=True)
    click.echo(json.dumps(supervisor.summary()))
    if code:
        click.get_current_context().exit(code)
