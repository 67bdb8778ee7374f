"""The network-fault harness (tests/support/netns.py) against a TCP echo server, no Kafka.

The server runs in a thread of the test, bound on the namespace's host address; the client
runs inside the namespace (``ip netns exec ... python -c CLIENT``) and prints one JSON line per
result. Skipped where namespaces cannot be made (failed in CI): see ``netns_usable``.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import socket
import statistics
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import netns
from tests.support.netns import Namespace, isolated_namespace, sweep_stale

CLIENT = r"""
import json, socket, sys, time
mode, host, port, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
def report(**fields): print(json.dumps(fields), flush=True)
def echo(sock, payload=b"ping"):
    sock.sendall(payload)
    got = b""
    while len(got) < len(payload):
        chunk = sock.recv(64)
        if not chunk: raise ConnectionError("closed")
        got += chunk
try:
    sock = socket.create_connection((host, port), timeout=timeout)
    echo(sock)
except OSError as exc:
    report(connect=type(exc).__name__); sys.exit()
report(connect="ok")
if mode == "rtt":
    rtts = []
    for _ in range(5):
        start = time.monotonic(); echo(sock); rtts.append(time.monotonic() - start)
    report(rtts=rtts)
elif mode == "hold":  # the test cuts, says go; then heals, says go
    sys.stdin.readline()
    start = time.monotonic()
    try: sock.send(b"x"); send = "ok"
    except OSError as exc: send = type(exc).__name__
    send_s = time.monotonic() - start
    try: recv = repr(sock.recv(64))
    except OSError as exc: recv = type(exc).__name__
    report(send=send, send_s=send_s, recv=recv)
    sys.stdin.readline()
    sock.settimeout(30)
    try: recv = repr(sock.recv(64))
    except OSError as exc: recv = type(exc).__name__
    report(recv=recv)
"""


class BodyFailed(Exception):
    """A test body's failure (not a RuntimeError, which NetnsError is)."""


class EchoServer:
    """A TCP echo server on (host, ephemeral port), one thread per connection."""

    def __init__(self, host: str) -> None:
        self._sock = socket.create_server((host, 0))
        self._sock.settimeout(0.1)
        self.port: int = self._sock.getsockname()[1]
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            thread = threading.Thread(target=self._echo, args=(conn,), daemon=True)
            self._threads.append(thread)
            thread.start()

    def _echo(self, conn: socket.socket) -> None:
        conn.settimeout(0.1)
        with conn:
            while not self._stop.is_set():
                try:
                    data = conn.recv(4096)
                except TimeoutError:
                    continue
                except OSError:
                    return
                if not data:
                    return
                conn.sendall(data)

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=5)
        self._sock.close()


@pytest.fixture
def ns() -> Iterator[Namespace]:
    netns.require_netns()
    sweep_stale("sgt")
    with isolated_namespace("sgt") as namespace:
        yield namespace


@pytest.fixture
def servers(ns: Namespace) -> Iterator[list[EchoServer]]:
    """Two echo servers on the host end, as two brokers would be."""
    started = [EchoServer(ns.host_address), EchoServer(ns.host_address)]
    yield started
    for server in started:
        server.close()


def client(ns: Namespace, mode: str, port: int, timeout_s: float = 2.0) -> list[dict[str, Any]]:
    """Run CLIENT in the namespace to completion; its JSON lines."""
    argv = [sys.executable, "-c", CLIENT, mode, ns.host_address, str(port), str(timeout_s)]
    done = subprocess.run(ns.command(argv), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def reachable(ns: Namespace, port: int) -> str:
    """ "ok", or the name of the error the connect (or the first echo) met."""
    return str(client(ns, "once", port)[0]["connect"])


def read_line(proc: subprocess.Popen[str], timeout_s: float) -> dict[str, Any]:
    """The next JSON line of `proc`, waiting at most `timeout_s`."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout_s)
    assert ready, f"no line from the client in {timeout_s} s"
    line: dict[str, Any] = json.loads(proc.stdout.readline())
    return line


def say_go(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()


def median_rtt(ns: Namespace, port: int) -> float:
    lines = client(ns, "rtt", port, timeout_s=10)
    assert lines[0]["connect"] == "ok", lines
    return float(statistics.median(lines[1]["rtts"]))


def test_the_host_end_is_reachable_from_inside(ns: Namespace, servers: list[EchoServer]) -> None:
    assert reachable(ns, servers[0].port) == "ok"
    routes = subprocess.run(ns.command(["ip", "route"]), capture_output=True, text=True, timeout=10)
    assert f"default via {ns.host_address}" in routes.stdout


def test_a_cut_is_silence_for_new_and_established_connections_until_healed(
    ns: Namespace, servers: list[EchoServer]
) -> None:
    port = servers[0].port
    argv = [sys.executable, "-c", CLIENT, "hold", ns.host_address, str(port), "2"]
    proc = ns.popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert read_line(proc, 30) == {"connect": "ok"}
        ns.cut()
        assert reachable(ns, port) == "TimeoutError"  # no refusal, no EPERM: silence
        say_go(proc)
        during = read_line(proc, 30)
        assert during["send"] == "ok" and during["send_s"] < 0.5, during  # no RST, no EPERM
        assert during["recv"] == "TimeoutError", during
        ns.heal()
        ns.heal()  # idempotent
        say_go(proc)
        assert read_line(proc, 40) == {"recv": "b'x'"}  # retransmitted once healed
        assert reachable(ns, port) == "ok"
    finally:
        proc.kill()
        proc.wait(timeout=10)


def test_cut_as_a_with_block_ends_even_if_the_body_raises(
    ns: Namespace, servers: list[EchoServer]
) -> None:
    with pytest.raises(BodyFailed), ns.cut():
        assert reachable(ns, servers[0].port) == "TimeoutError"
        raise BodyFailed
    assert ns.faults == []
    assert reachable(ns, servers[0].port) == "ok"


def test_cut_port_blocks_one_port_and_not_another(ns: Namespace, servers: list[EchoServer]) -> None:
    cut, other = servers
    with ns.cut_port(cut.port):
        assert reachable(ns, cut.port) == "TimeoutError"
        assert reachable(ns, other.port) == "ok"
    assert reachable(ns, cut.port) == "ok"


def test_degrade_delays_both_directions_and_is_removed_after(
    ns: Namespace, servers: list[EchoServer]
) -> None:
    port = servers[0].port
    assert median_rtt(ns, port) < 0.1
    with ns.degrade(delay_ms=150, loss_pct=0):  # one direction alone would give ~150 ms
        assert median_rtt(ns, port) > 0.25
    assert median_rtt(ns, port) < 0.1
    ns.degrade(delay_ms=150, loss_pct=0)
    ns.restore()
    ns.restore()
    assert median_rtt(ns, port) < 0.1


def test_degrade_drops_packets_in_both_directions(ns: Namespace, servers: list[EchoServer]) -> None:
    with ns.degrade():  # the defaults: 300 ms each way, 10 % loss each way
        assert client(ns, "once", servers[0].port, timeout_s=20)[0]["connect"] == "ok"
        ours = netns.rule_comment(ns.name)
        host = [rule for _, rule in netns.tagged_rules(ours) if "statistic" in rule]
        inside = subprocess.run(
            ns.command(["iptables", "-S", "INPUT"]), capture_output=True, text=True, timeout=10
        ).stdout
        assert [rule[rule.index("-i") + 1] for rule in host] == [ns.host_veth]
        assert f"-i {ns.inner_veth} -m statistic --mode random --probability 0.1" in inside
    assert netns.tagged_rules(ours) == []


def leftovers(ns: Namespace) -> list[str]:
    """What of `ns` is still on the machine: namespace, host veth, tagged rules."""
    left = [ns.name] if ns.name in netns.list_namespaces() else []
    links = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True, timeout=10)
    left += [ns.host_veth] if ns.host_veth in links.stdout else []
    return left + [" ".join(rule) for _, rule in netns.tagged_rules(netns.rule_comment(ns.name))]


def test_everything_is_removed_on_exit_even_if_the_body_raises() -> None:
    netns.require_netns()
    with pytest.raises(BodyFailed), isolated_namespace() as ns:
        ns.cut()
        ns.cut_port(9)
        ns.degrade(delay_ms=10, loss_pct=5)
        assert ns.host_veth in leftovers(ns) and len(leftovers(ns)) > 4
        raise BodyFailed
    assert leftovers(ns) == []
    rules = "".join(
        subprocess.run(
            ["iptables", "-t", t, "-S"], capture_output=True, text=True, timeout=10
        ).stdout
        for t in ("filter", "mangle")
    )
    assert netns.rule_comment(ns.name) not in rules


def dead_pid() -> int:
    """The pid of a process that has exited (and been reaped)."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=30)
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, 0)
        pytest.skip("the dead pid was reused at once")
    return proc.pid


def test_sweep_stale_removes_what_a_dead_owner_left_and_nothing_live(ns: Namespace) -> None:
    name = netns.namespace_name("sgt", dead_pid(), "abc123")
    host_veth, inner_veth = netns.veth_names("sgt", "abc123")
    rule = ["INPUT", "-i", host_veth, "-m", "comment", "--comment", netns.rule_comment(name)]
    for argv in (
        ["ip", "netns", "add", name],
        ["ip", "link", "add", host_veth, "type", "veth", "peer", "name", inner_veth],
        ["ip", "link", "set", inner_veth, "netns", name],
        ["iptables", "-I", *rule, "-j", "DROP"],
    ):
        subprocess.run(argv, check=True, capture_output=True, timeout=10)
    stale = Namespace(name, host_veth, inner_veth, "", "")
    assert len(leftovers(stale)) == 3
    assert sweep_stale("sgt") == [name]
    assert leftovers(stale) == []
    assert ns.name in netns.list_namespaces()  # ours is alive: kept
    assert sweep_stale("sgt") == []


def test_names_fit_the_interface_limit() -> None:
    name = netns.namespace_name("abcdefgh", 4_194_304, "ffffff")
    assert all(len(veth) <= 15 for veth in netns.veth_names("abcdefgh", "ffffff")), name
    with pytest.raises(ValueError):
        netns.namespace_name("too-long-prefix", 1, "ffffff")


OWNER = r"""
import os, signal, sys, threading, time
from tests.support.netns import isolated_namespace
context = isolated_namespace("sgt")
ns = context.__enter__()  # never left: only atexit (or a later sweep) can clean up
# A daemon thread's frame is never freed at exit, so the generator is never closed either.
threading.Thread(target=lambda held: time.sleep(3600), args=(context,), daemon=True).start()
del context
ns.cut()
ns.degrade(delay_ms=10, loss_pct=1)
print(ns.name, ns.host_veth, flush=True)
if sys.argv[1] == "kill":
    os.kill(os.getpid(), signal.SIGKILL)
"""


def run_owner(how: str) -> Namespace:
    """Run OWNER in a child process that leaves its namespace open and exits `how`."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    done = subprocess.run(
        [sys.executable, "-c", OWNER, how], capture_output=True, text=True, timeout=60, env=env
    )
    name, host_veth = done.stdout.split()
    return Namespace(name, host_veth, "", "", "")


def test_atexit_removes_a_namespace_whose_block_never_ended() -> None:
    netns.require_netns()
    assert leftovers(run_owner("exit")) == []


def test_sweep_stale_removes_what_a_killed_owner_left(ns: Namespace) -> None:
    left = run_owner("kill")
    assert len(leftovers(left)) > 2  # the namespace, the pair, the host-side rules
    assert left.name in sweep_stale("sgt")
    assert leftovers(left) == []
