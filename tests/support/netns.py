"""Network-fault harness for the cluster fault tests (issue 17): a namespace behind a veth pair.

A test runs its client (a worker, a producer) inside a fresh network namespace whose only way
out is a veth pair; brokers bind the host end (``seqgate broker up --listen-address``). The
harness then breaks that wire the way real networks break:

* ``cut()``: every packet crossing the pair is dropped where it *arrives* (host INPUT/FORWARD
  on the host end, INPUT inside the namespace), never where it is sent. A drop in OUTPUT makes
  the sender's own kernel fail the call (``EPERM``) and REJECT sends resets; dropping on arrival
  leaves both sides with silence: connects time out, established connections keep their state
  and retransmit, as in a real partition.
* ``cut_port(port)``: the same for one host port (one broker), both directions.
* ``degrade(delay_ms, loss_pct)``: latency in both directions and random loss. This machine's
  kernel has no ``sch_netem`` (CONFIG_NET_SCH_NETEM is not set), so ``tc netem`` cannot be used:
  the delay is an NFQUEUE in the mangle table (before the filter table, so a cut still applies)
  whose packets a thread of the test process accepts ``delay_ms`` later; the loss is an
  ``-m statistic`` DROP on arrival, one per direction.

Every host rule carries ``-m comment --comment seqgate-test-<namespace>``; the namespace name
embeds the owner's pid, so :func:`sweep_stale` can remove what a dead run left behind.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import errno
import fcntl
import functools
import ipaddress
import json
import os
import random
import re
import secrets
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import pytest

TIMEOUT_S = 15.0
COMMENT_PREFIX = "seqgate-test-"
_POOL = ipaddress.IPv4Network("10.240.0.0/12")
_TABLES = ("filter", "mangle")
_LIVE: dict[str, Namespace] = {}


class NetnsError(RuntimeError):
    """A command of the harness failed or took too long."""


def _run(argv: Sequence[str], *, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run one command with a timeout; raise NetnsError on failure when `check`."""
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise NetnsError(f"{shlex.join(argv)}: no answer in {TIMEOUT_S} s") from exc
    if check and done.returncode != 0:
        raise NetnsError(f"{shlex.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done


def namespace_name(prefix: str, pid: int, suffix: str) -> str:
    """The namespace's name: the owner's pid lets a later run tell whether it is stale."""
    if not re.fullmatch(r"[a-z][a-z0-9]{0,7}", prefix):
        raise ValueError(f"prefix {prefix!r}: 1-8 lowercase letters/digits (veth names <= 15)")
    return f"{prefix}-{pid}-{suffix}"


def veth_names(prefix: str, suffix: str) -> tuple[str, str]:
    """Host end and inner end of the pair: at most 8 + 6 + 1 = 15 characters (IFNAMSIZ - 1)."""
    return f"{prefix}{suffix}h", f"{prefix}{suffix}i"


def rule_comment(name: str) -> str:
    """The iptables comment tagging every rule added for namespace `name`."""
    return COMMENT_PREFIX + name


def list_namespaces() -> list[str]:
    """Names in `ip netns list` (each line is ``NAME`` or ``NAME (id: N)``)."""
    return [line.split()[0] for line in _run(["ip", "netns", "list"]).stdout.splitlines() if line]


def tagged_rules(pattern: str = re.escape(COMMENT_PREFIX)) -> list[tuple[str, list[str]]]:
    """(table, rule argv after -A) of every root-namespace rule whose comment matches."""
    found = []
    for table in _TABLES:
        for line in _run(["iptables", "-w", "5", "-t", table, "-S"]).stdout.splitlines():
            words = shlex.split(line)
            if words[:1] != ["-A"] or "--comment" not in words:
                continue
            if re.match(pattern, words[words.index("--comment") + 1]):
                found.append((table, words[1:]))
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _used_networks() -> list[ipaddress.IPv4Network]:
    """Every IPv4 network of an address or a route of the root namespace."""
    used = []
    for link in json.loads(_run(["ip", "-j", "addr"]).stdout or "[]"):
        for addr in link.get("addr_info", []):
            if addr.get("family") == "inet":
                used.append(ipaddress.IPv4Network(f"{addr['local']}/{addr['prefixlen']}", False))
    for route in json.loads(_run(["ip", "-j", "-4", "route", "show", "table", "all"]).stdout):
        with contextlib.suppress(ValueError, KeyError):
            used.append(ipaddress.IPv4Network(route["dst"], strict=False))
    return used


def _pick_subnet() -> ipaddress.IPv4Network:
    """A random /30 of 10.240.0.0/12 that overlaps no address or route of this machine."""
    used = _used_networks()
    for _ in range(64):
        index = random.randrange(_POOL.num_addresses // 4)
        candidate = ipaddress.IPv4Network((int(_POOL.network_address) + 4 * index, 30))
        if not any(candidate.overlaps(net) for net in used):
            return candidate
    raise NetnsError(f"no free /30 in {_POOL}: it overlaps this machine's addresses or routes")


@contextlib.contextmanager
def _address_lock() -> Iterator[None]:
    """Serialise picking and assigning a subnet between processes (pytest-xdist workers)."""
    with (Path(tempfile.gettempdir()) / "seqgate-netns.lock").open("a") as handle:
        deadline = time.monotonic() + TIMEOUT_S
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise NetnsError("the subnet lock stayed taken") from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


_QUEUE_MSG = 3 << 8  # NFNL_SUBSYS_QUEUE
_PACKET, _VERDICT, _CONFIG, _NLMSG_ERROR = 0, 1, 2, 2


def _nfq_message(kind: int, queue: int, attrs: Sequence[tuple[int, bytes]], ack: bool) -> bytes:
    """One nfnetlink_queue request: nlmsghdr, nfgenmsg (res_id = queue), attributes."""
    body = struct.pack("!BBH", socket.AF_UNSPEC, 0, queue)
    for kind_attr, data in attrs:
        attr = struct.pack("=HH", 4 + len(data), kind_attr) + data
        body += attr + b"\0" * (-len(attr) % 4)
    flags = 1 | (4 if ack else 0)  # NLM_F_REQUEST | NLM_F_ACK
    return struct.pack("=IHHII", 16 + len(body), _QUEUE_MSG | kind, flags, 0, 0) + body


def _packet_ids(data: bytes) -> list[int]:
    """The packet ids in a datagram of netlink messages; an error answer raises OSError."""
    ids, offset = [], 0
    while offset + 16 <= len(data):
        length, kind = struct.unpack_from("=IH", data, offset)
        if length < 16:
            break
        if kind == _NLMSG_ERROR and (code := struct.unpack_from("=i", data, offset + 16)[0]):
            raise OSError(-code, os.strerror(-code))
        pos = offset + 20
        while kind == _QUEUE_MSG | _PACKET and pos + 4 <= offset + length:
            size, attr = struct.unpack_from("=HH", data, pos)
            if attr & 0x3FFF == 1:  # NFQA_PACKET_HDR: packet id first
                ids.append(struct.unpack_from("!I", data, pos + 4)[0])
            pos += max(4, (size + 3) & ~3)
        offset += (length + 3) & ~3
    return ids


class _Delayer:
    """netem's delay without netem: accepts each packet of an NFQUEUE `delay_s` after it came."""

    def __init__(self, delay_s: float) -> None:
        """Bind a free queue number (metadata only, room for 16384 packets), then serve it."""
        self.delay_s = delay_s
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)  # NETLINK_NETFILTER
        self._sock.bind((0, 0))
        self._sock.settimeout(TIMEOUT_S)
        self._stop = threading.Event()
        for _ in range(32):
            self.queue = random.randint(1000, 65000)
            cmd = (1, struct.pack("!BBH", 1, 0, 0))  # NFQA_CFG_CMD: BIND
            params = (2, struct.pack("!IB", 0, 1))  # NFQA_CFG_PARAMS: NFQNL_COPY_META
            maxlen = (3, struct.pack("!I", 16384))  # NFQA_CFG_QUEUE_MAXLEN
            try:
                self._sock.send(_nfq_message(_CONFIG, self.queue, [cmd, params, maxlen], True))
                _packet_ids(self._sock.recv(65536))
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY:
                    self._sock.close()
                    raise NetnsError(f"NFQUEUE does not work here: {exc}") from exc
        else:
            self._sock.close()
            raise NetnsError("no free NFQUEUE number")
        self._thread = threading.Thread(target=self._loop, name="netns-delay", daemon=True)
        self._thread.start()

    def _accept(self, packet_id: int) -> None:
        verdict = (2, struct.pack("!II", 1, packet_id))  # NFQA_VERDICT_HDR: NF_ACCEPT
        with contextlib.suppress(OSError):
            self._sock.send(_nfq_message(_VERDICT, self.queue, [verdict], ack=False))

    def _loop(self) -> None:
        due: collections.deque[tuple[float, int]] = collections.deque()  # one delay: FIFO
        while not self._stop.is_set():
            now = time.monotonic()
            while due and due[0][0] <= now:
                self._accept(due.popleft()[1])
            self._sock.settimeout(min(0.05, max(0.001, due[0][0] - now)) if due else 0.05)
            try:
                data = self._sock.recv(65536)
            except OSError:  # timeout, or ENOBUFS after a burst
                continue
            with contextlib.suppress(OSError):
                due.extend((time.monotonic() + self.delay_s, pid) for pid in _packet_ids(data))
        for _, packet_id in due:
            self._accept(packet_id)

    def stop(self) -> None:
        """Accept what is still held, then close (called after the queue rules are gone)."""
        self._stop.set()
        self._thread.join(timeout=TIMEOUT_S)
        self._sock.close()


@dataclass(frozen=True)
class _Step:
    apply: Callable[[], object]
    undo: Callable[[], object]


class Fault:
    """One fault, applied on creation; ``remove()`` (or leaving its with-block) undoes it once."""

    def __init__(self, owner: Namespace, kind: str, steps: Sequence[_Step]) -> None:
        self.kind = kind
        self._owner = owner
        self._undo: list[Callable[[], object]] = []
        try:
            for step in steps:
                step.apply()
                self._undo.append(step.undo)
        except BaseException:
            self.remove()
            raise
        owner.faults.append(self)

    def remove(self) -> None:
        """Undo every step, last first; a second call does nothing."""
        errors = []
        while self._undo:
            try:
                self._undo.pop()()
            except NetnsError as exc:
                errors.append(str(exc))
        with contextlib.suppress(ValueError):
            self._owner.faults.remove(self)
        if errors:
            raise NetnsError("; ".join(errors))

    def __enter__(self) -> Fault:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.remove()


@dataclass
class Namespace:
    """A namespace whose only link is a veth pair to the root namespace, and its faults."""

    name: str
    host_veth: str
    inner_veth: str
    host_address: str
    inner_address: str
    faults: list[Fault] = field(default_factory=list, repr=False)

    def command(self, argv: Sequence[str]) -> list[str]:
        """`argv` run inside the namespace."""
        return ["ip", "netns", "exec", self.name, *argv]

    def popen(self, argv: Sequence[str], **kwargs: Any) -> subprocess.Popen[Any]:
        """Start `argv` inside the namespace (the caller waits for it, with a timeout)."""
        return subprocess.Popen(self.command(argv), **kwargs)

    def _rule(self, inside: bool, table: str, chain: str, *words: str) -> _Step:
        """Insert (and later delete) `chain words...`; `words` end with the -j target."""
        where = ["ip", "netns", "exec", self.name] if inside else []
        at = words.index("-j")
        rule = [chain, *words[:at], "-m", "comment", "--comment", rule_comment(self.name)]
        rule += words[at:]
        head = [*where, "iptables", "-w", "5", "-t", table]
        return _Step(lambda: _run([*head, "-I", *rule]), lambda: _run([*head, "-D", *rule]))

    def cut(self) -> Fault:
        """Drop everything between the namespace and the host, on arrival (silence, no RST)."""
        steps = [
            self._rule(False, "filter", "INPUT", "-i", self.host_veth, "-j", "DROP"),
            self._rule(False, "filter", "FORWARD", "-i", self.host_veth, "-j", "DROP"),
            self._rule(True, "filter", "INPUT", "-i", self.inner_veth, "-j", "DROP"),
        ]
        return Fault(self, "cut", steps)

    def cut_port(self, port: int) -> Fault:
        """Drop TCP from the namespace to host port `port` and its answers; other ports work."""
        out = ("-i", self.host_veth, "-p", "tcp", "--dport", str(port), "-j", "DROP")
        back = ("-i", self.inner_veth, "-p", "tcp", "--sport", str(port), "-j", "DROP")
        steps = [
            self._rule(False, "filter", "INPUT", *out),
            self._rule(True, "filter", "INPUT", *back),
        ]
        return Fault(self, f"cut_port {port}", steps)

    def degrade(self, delay_ms: int = 300, loss_pct: float = 10.0) -> Fault:
        """Delay each direction by `delay_ms` and drop `loss_pct` % of packets each way."""
        steps = []
        if delay_ms > 0:
            delayer = _Delayer(delay_ms / 1000)
            steps.append(_Step(lambda: None, delayer.stop))
            queue = ("-j", "NFQUEUE", "--queue-num", str(delayer.queue), "--queue-bypass")
            for chain, flag in (("INPUT", "-i"), ("OUTPUT", "-o")):
                steps.append(self._rule(False, "mangle", chain, flag, self.host_veth, *queue))
        if loss_pct > 0:
            odds = ("-m", "statistic", "--mode", "random", "--probability", f"{loss_pct / 100:g}")
            for inside, veth in ((False, self.host_veth), (True, self.inner_veth)):
                steps.append(self._rule(inside, "filter", "INPUT", "-i", veth, *odds, "-j", "DROP"))
        return Fault(self, "degrade", steps)

    def heal(self) -> None:
        """End every cut and cut_port (idempotent); a degradation stays until restore()."""
        for fault in [f for f in self.faults if f.kind.startswith("cut")][::-1]:
            fault.remove()

    def restore(self) -> None:
        """End every degradation (idempotent)."""
        for fault in [f for f in self.faults if f.kind == "degrade"][::-1]:
            fault.remove()


def _setup(ns: Namespace, prefixlen: int) -> None:
    """The namespace, the pair (host end aliased to the namespace's name), addresses, routes."""
    inside = ["ip", "-n", ns.name]
    _run(["ip", "netns", "add", ns.name])
    _run(["ip", "link", "add", ns.host_veth, "type", "veth", "peer", "name", ns.inner_veth])
    _run(["ip", "link", "set", ns.inner_veth, "netns", ns.name])
    _run(["ip", "link", "set", "dev", ns.host_veth, "alias", ns.name])
    _run(["ip", "addr", "add", f"{ns.host_address}/{prefixlen}", "dev", ns.host_veth])
    _run(["ip", "link", "set", ns.host_veth, "up"])
    _run([*inside, "addr", "add", f"{ns.inner_address}/{prefixlen}", "dev", ns.inner_veth])
    _run([*inside, "link", "set", ns.inner_veth, "up"])
    _run([*inside, "link", "set", "lo", "up"])
    _run([*inside, "route", "add", "default", "via", ns.host_address])
    # IPv4 only: no IPv6 path around the iptables (IPv4) rules.
    _run(["sysctl", "-qw", f"net.ipv6.conf.{ns.host_veth}.disable_ipv6=1"], check=False)
    _run(ns.command(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"]), check=False)


def _remove(name: str, host_veth: str) -> None:
    """Remove namespace `name`: its processes (started by the test), rules, pair, mount."""
    if name in list_namespaces():
        for pid in _run(["ip", "netns", "pids", name], check=False).stdout.split():
            with contextlib.suppress(OSError, ValueError):
                os.kill(int(pid), signal.SIGKILL)
    for table, rule in tagged_rules(re.escape(rule_comment(name)) + "$"):
        _run(["iptables", "-w", "5", "-t", table, "-D", *rule], check=False)
    _run(["ip", "link", "del", host_veth], check=False)  # deleting one end deletes both
    _run(["ip", "netns", "del", name], check=False)
    left = [name] if name in list_namespaces() else []
    if _run(["ip", "link", "show", host_veth], check=False).returncode == 0:
        left.append(host_veth)
    left += [" ".join(rule) for _, rule in tagged_rules(re.escape(rule_comment(name)) + "$")]
    if left:
        raise NetnsError(f"could not remove {left}")


def _close(ns: Namespace) -> None:
    """Undo the faults (this stops the delay threads), then remove everything of `ns`."""
    try:
        for fault in ns.faults[::-1]:
            with contextlib.suppress(NetnsError):
                fault.remove()
    finally:
        _LIVE.pop(ns.name, None)
        _remove(ns.name, ns.host_veth)


@atexit.register
def _close_live() -> None:
    """Fallback for a namespace whose with-block never ended (an interpreter exit inside it)."""
    for ns in list(_LIVE.values()):
        with contextlib.suppress(NetnsError):
            _close(ns)


@contextlib.contextmanager
def isolated_namespace(prefix: str = "sgt") -> Iterator[Namespace]:
    """A fresh namespace linked to the host by a veth pair on a free /30; removed on exit."""
    suffix = secrets.token_hex(3)
    name = namespace_name(prefix, os.getpid(), suffix)
    host_veth, inner_veth = veth_names(prefix, suffix)
    with _address_lock():
        subnet = _pick_subnet()
        host, inner = (str(address) for address in subnet.hosts())
        ns = Namespace(name, host_veth, inner_veth, host, inner)
        _LIVE[name] = ns
        try:
            _setup(ns, subnet.prefixlen)
        except BaseException:
            _close(ns)
            raise
    try:
        yield ns
    finally:
        _close(ns)


def sweep_stale(prefix: str = "sgt") -> list[str]:
    """Remove the namespaces, pairs and rules of `prefix` whose owner pid is dead; their names.

    Found three ways, so that a run killed halfway through setup or teardown is swept too: by
    namespace name, by the host end's alias, by the rules' comment.
    """
    pattern = re.compile(rf"{re.escape(prefix)}-(\d+)-([0-9a-f]{{6}})")
    names = set(list_namespaces())
    names.update(link.get("ifalias", "") for link in json.loads(_run(["ip", "-j", "link"]).stdout))
    names.update(
        rule[rule.index("--comment") + 1][len(COMMENT_PREFIX) :] for _, rule in tagged_rules()
    )
    swept = []
    for name in sorted(names):
        match = pattern.fullmatch(name)
        if match and not _alive(int(match[1])):
            _remove(name, veth_names(prefix, match[2])[0])
            swept.append(name)
    return swept


@functools.cache
def netns_usable() -> str | None:
    """Why the harness cannot work here (not root, a tool missing, refused), or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    for tool, package in (("ip", "iproute2"), ("tc", "iproute2"), ("iptables", "iptables")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/test.sh installs {package} as root)"
    try:
        _run(["iptables", "-w", "5", "-L", "INPUT", "-n"])
        with isolated_namespace() as ns:
            _run(ns.command(["iptables", "-w", "5", "-L", "INPUT", "-n"]))
            ns.cut().remove()
            ns.degrade(delay_ms=1, loss_pct=1).remove()
    except (NetnsError, OSError) as exc:
        return f"network namespaces or their faults do not work here: {exc}"
    return None


def require_netns() -> None:
    """Skip the calling test when the harness cannot work here; in CI (env CI set), fail it."""
    why = netns_usable()
    if why is None:
        return
    if os.environ.get("CI"):
        pytest.fail(f"the network-fault harness is required in CI: {why}")
    pytest.skip(why)
