"""Network-fault harness for the cluster fault tests (issue 17): a namespace behind a veth pair.

A client runs in a namespace whose only way out is a veth pair; brokers bind the host end.
``cut()`` drops packets where they *arrive* (host INPUT/FORWARD, the namespace's INPUT), never
where sent: a drop in OUTPUT is told to the sender (a UDP send fails with EPERM), REJECT sends
resets, while a drop on arrival is a real partition's silence (connects time out, connections
stay open and retransmit). ``cut_port`` does it for one host port. This kernel has no sch_netem,
so ``degrade`` delays with an NFQUEUE in the mangle table (before the filter table's cuts) whose
packets a thread here accepts later, each way; its loss is a ``-m statistic`` DROP. Host rules
carry ``--comment seqgate-test-<namespace>``; the name embeds the owner's pid for sweep_stale.
"""

from __future__ import annotations

import atexit
import collections
import contextlib
import fcntl
import functools
import ipaddress
import json
import os
import random
import re
import shlex
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.required import unavailable

TIMEOUT_S = 15.0
COMMENT_PREFIX = "seqgate-test-"
_POOL = ipaddress.IPv4Network("10.240.0.0/12")
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
    for table in ("filter", "mangle"):
        for line in _run(["iptables", "-w", "5", "-t", table, "-S"]).stdout.splitlines():
            words = shlex.split(line)  # "-A CHAIN ..."; the policy lines have no comment
            if "--comment" in words and re.match(pattern, words[words.index("--comment") + 1]):
                found.append((table, words[1:]))
    return found


def _pick_subnet() -> ipaddress.IPv4Network:
    """A random /30 of 10.240.0.0/12 overlapping no IPv4 address or route of this machine."""
    used = []
    for link in json.loads(_run(["ip", "-j", "addr"]).stdout or "[]"):
        for addr in link.get("addr_info", []):
            if addr.get("family") == "inet":
                used.append(ipaddress.IPv4Network(f"{addr['local']}/{addr['prefixlen']}", False))
    for route in json.loads(_run(["ip", "-j", "-4", "route", "show", "table", "all"]).stdout):
        with contextlib.suppress(ValueError, KeyError):
            used.append(ipaddress.IPv4Network(route["dst"], strict=False))
    for _ in range(64):
        index = random.randrange(_POOL.num_addresses // 4)
        candidate = ipaddress.IPv4Network((int(_POOL.network_address) + 4 * index, 30))
        if not any(candidate.overlaps(net) for net in used):
            return candidate
    raise NetnsError(f"no free /30 in {_POOL}: it overlaps this machine's addresses or routes")


@contextlib.contextmanager
def _address_lock() -> Iterator[None]:
    """Serialise picking and assigning a subnet between processes (pytest-xdist workers)."""
    with Path("/tmp/seqgate-netns.lock").open("a") as handle:
        for _ in range(int(TIMEOUT_S / 0.05)):
            with contextlib.suppress(BlockingIOError):
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            time.sleep(0.05)
        else:
            raise NetnsError("the subnet lock stayed taken")
        yield  # closing the file releases the lock


_QUEUE_MSG = 3 << 8  # NFNL_SUBSYS_QUEUE
_PACKET, _VERDICT, _CONFIG, _NLMSG_ERROR = 0, 1, 2, 2
# NFQA_CFG_CMD BIND, NFQA_CFG_PARAMS (copy metadata only), NFQA_CFG_QUEUE_MAXLEN 16384.
_BIND = [(1, struct.pack("!BBH", 1, 0, 0)), (2, b"\0\0\0\0\1"), (3, struct.pack("!I", 16384))]


def _nfq_message(kind: int, queue: int, attrs: Sequence[tuple[int, bytes]], ack: bool) -> bytes:
    """One nfnetlink_queue request: nlmsghdr, nfgenmsg (res_id = queue), attributes."""
    body = struct.pack("!BBH", socket.AF_UNSPEC, 0, queue)
    for kind_attr, data in attrs:
        attr = struct.pack("=HH", 4 + len(data), kind_attr) + data
        body += attr + b"\0" * (-len(attr) % 4)
    flags = 1 | (4 if ack else 0)  # NLM_F_REQUEST | NLM_F_ACK
    return struct.pack("=IHHII", 16 + len(body), _QUEUE_MSG | kind, flags, 0, 0) + body


def _packet_ids(data: bytes) -> list[int]:
    """The packet id of a queued-packet message (one per datagram); an error answer raises."""
    kind = struct.unpack_from("=H", data, 4)[0] if len(data) >= 20 else -1
    if kind == _NLMSG_ERROR and (code := struct.unpack_from("=i", data, 16)[0]):
        raise OSError(-code, os.strerror(-code))
    pos, ids = 20, []
    while kind == _QUEUE_MSG | _PACKET and pos + 8 <= len(data):
        size, attr = struct.unpack_from("=HH", data, pos)
        if attr & 0x3FFF == 1:  # NFQA_PACKET_HDR: the packet id first
            ids.append(struct.unpack_from("!I", data, pos + 4)[0])
        pos += max(4, (size + 3) & ~3)
    return ids


class _Delayer:
    """netem's delay without netem: accepts each packet of an NFQUEUE `delay_s` after it came."""

    def __init__(self, delay_s: float) -> None:
        """Bind a free queue number, then serve it in a thread."""
        self.delay_s = delay_s
        self._sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)  # NETLINK_NETFILTER
        self._sock.bind((0, 0))
        self._sock.settimeout(TIMEOUT_S)
        self._stop = threading.Event()
        for self.queue in random.sample(range(1000, 65000), 8):  # EBUSY: taken, try another
            self._sock.send(_nfq_message(_CONFIG, self.queue, _BIND, ack=True))
            try:
                _packet_ids(self._sock.recv(65536))
                break
            except OSError as exc:
                error = exc
        else:
            self._sock.close()
            raise NetnsError(f"NFQUEUE does not work here: {error}")
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
            with contextlib.suppress(OSError):  # a timeout, or ENOBUFS after a burst
                data = self._sock.recv(65536)
                due.extend((time.monotonic() + self.delay_s, pid) for pid in _packet_ids(data))
        for _, packet_id in due:
            self._accept(packet_id)

    def stop(self) -> None:
        """Accept what is still held, then close (called after the queue rules are gone)."""
        self._stop.set()
        self._thread.join(timeout=TIMEOUT_S)
        self._sock.close()


_Step = tuple[Callable[[], object], Callable[[], object]]  # apply, undo


class Fault(contextlib.ExitStack[bool | None]):
    """A fault, applied on creation; remove() or its with-block's end runs each undo once."""

    def __init__(self, owner: Namespace, kind: str, steps: Sequence[_Step]) -> None:
        super().__init__()
        self.kind = kind
        owner.faults.append(self)
        self.callback(owner.faults.remove, self)
        try:
            for apply, undo in steps:
                apply()
                self.callback(undo)
        except BaseException:
            self.close()
            raise

    remove = contextlib.ExitStack.close  # undo every step; a second call does nothing


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
        return (lambda: _run([*head, "-I", *rule]), lambda: _run([*head, "-D", *rule]))

    def _drop(self, inside: bool, chain: str, *match: str) -> _Step:
        """DROP in `chain` what arrives on this side's end of the pair (and matches `match`)."""
        veth = self.inner_veth if inside else self.host_veth
        return self._rule(inside, "filter", chain, "-i", veth, *match, "-j", "DROP")

    def cut(self) -> Fault:
        """Drop everything between the namespace and the host, on arrival (silence, no RST)."""
        drops = [self._drop(False, "INPUT"), self._drop(False, "FORWARD")]
        return Fault(self, "cut", [*drops, self._drop(True, "INPUT")])

    def cut_port(self, port: int) -> Fault:
        """Drop TCP from the namespace to host port `port` and its answers; other ports work."""
        out = self._drop(False, "INPUT", "-p", "tcp", "--dport", str(port))
        back = self._drop(True, "INPUT", "-p", "tcp", "--sport", str(port))
        return Fault(self, f"cut_port {port}", [out, back])

    def degrade(self, delay_ms: int = 300, loss_pct: float = 10.0) -> Fault:
        """Delay each direction by `delay_ms` and drop `loss_pct` % of packets each way."""
        steps: list[_Step] = []
        if delay_ms > 0:
            delayer = _Delayer(delay_ms / 1000)
            steps.append((lambda: None, delayer.stop))
            queue = ("-j", "NFQUEUE", "--queue-num", str(delayer.queue), "--queue-bypass")
            for chain, flag in (("INPUT", "-i"), ("OUTPUT", "-o")):
                steps.append(self._rule(False, "mangle", chain, flag, self.host_veth, *queue))
        if loss_pct > 0:
            odds = ("-m", "statistic", "--mode", "random", "--probability", f"{loss_pct / 100:g}")
            steps += [self._drop(False, "INPUT", *odds), self._drop(True, "INPUT", *odds)]
        return Fault(self, "degrade", steps)

    def heal(self) -> None:
        """End every cut and cut_port (idempotent); a degradation stays until restore()."""
        for fault in [f for f in self.faults if f.kind != "degrade"][::-1]:
            fault.remove()

    def restore(self) -> None:
        """End every degradation (idempotent)."""
        for fault in [f for f in self.faults if f.kind == "degrade"][::-1]:
            fault.remove()


def _setup(ns: Namespace, prefixlen: int) -> None:
    """The namespace, the pair (host end aliased to the namespace), addresses, routes; no IPv6,
    which would be a path around the (IPv4) iptables rules."""
    inside, pair = ["ip", "-n", ns.name], ["type", "veth", "peer", ns.inner_veth, "netns", ns.name]
    _run(["ip", "netns", "add", ns.name])
    _run(["ip", "link", "add", ns.host_veth, *pair])
    _run(["ip", "link", "set", "dev", ns.host_veth, "alias", ns.name])
    _run(["ip", "addr", "add", f"{ns.host_address}/{prefixlen}", "dev", ns.host_veth])
    _run(["ip", "link", "set", ns.host_veth, "up"])
    _run([*inside, "addr", "add", f"{ns.inner_address}/{prefixlen}", "dev", ns.inner_veth])
    _run([*inside, "link", "set", ns.inner_veth, "up"])
    _run([*inside, "link", "set", "lo", "up"])
    _run([*inside, "route", "add", "default", "via", ns.host_address])
    _run(["sysctl", "-qw", f"net.ipv6.conf.{ns.host_veth}.disable_ipv6=1"], check=False)
    _run(ns.command(["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"]), check=False)


def _remove(name: str, host_veth: str) -> None:
    """Remove namespace `name`: its processes (started by the test), rules, pair, mount."""
    for pid in _run(["ip", "netns", "pids", name], check=False).stdout.split():
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid), signal.SIGKILL)
    ours = re.escape(rule_comment(name)) + "$"
    for table, rule in tagged_rules(ours):
        _run(["iptables", "-w", "5", "-t", table, "-D", *rule], check=False)
    _run(["ip", "link", "del", host_veth], check=False)  # deleting one end deletes both
    _run(["ip", "netns", "del", name], check=False)
    left = [name] if name in list_namespaces() else []
    left += [host_veth] if Path(f"/sys/class/net/{host_veth}").exists() else []
    left += [" ".join(rule) for _, rule in tagged_rules(ours)]
    if left:
        raise NetnsError(f"could not remove {left}")


def _close(ns: Namespace) -> None:
    """Undo the faults (stopping the delay threads), then remove all of `ns`, even if one fails."""
    with contextlib.ExitStack() as undo:  # runs last registered first
        undo.callback(_remove, ns.name, ns.host_veth)
        undo.callback(_LIVE.pop, ns.name, None)
        for fault in ns.faults:
            undo.callback(fault.remove)


@atexit.register
def _close_live() -> None:
    """The fallback for a namespace whose with-block never ended (an exit inside it)."""
    for ns in list(_LIVE.values()):
        _close(ns)


@contextlib.contextmanager
def isolated_namespace(prefix: str = "sgt") -> Iterator[Namespace]:
    """A fresh namespace linked to the host by a veth pair on a free /30; removed on exit."""
    suffix = f"{random.getrandbits(24):06x}"
    name = namespace_name(prefix, os.getpid(), suffix)
    host_veth, inner_veth = veth_names(prefix, suffix)
    try:
        with _address_lock():
            subnet = _pick_subnet()
            _LIVE[name] = Namespace(name, host_veth, inner_veth, str(subnet[1]), str(subnet[2]))
            _setup(_LIVE[name], subnet.prefixlen)
        yield _LIVE[name]
    finally:
        if name in _LIVE:
            _close(_LIVE[name])


def sweep_stale(prefix: str = "sgt") -> list[str]:
    """Remove namespaces, pairs, rules of `prefix` whose owner pid is dead (found by namespace
    name, host end's alias or rule comment, so a half-made one is found too); their names."""
    pattern = re.compile(rf"{re.escape(prefix)}-(\d+)-([0-9a-f]{{6}})")
    names = set(list_namespaces())
    names.update(link.get("ifalias", "") for link in json.loads(_run(["ip", "-j", "link"]).stdout))
    names.update(r[r.index("--comment") + 1][len(COMMENT_PREFIX) :] for _, r in tagged_rules())
    swept = []
    for name in sorted(names):
        match = pattern.fullmatch(name)
        if match and not Path(f"/proc/{match[1]}").exists():
            _remove(name, veth_names(prefix, match[2])[0])
            swept.append(name)
    return swept


@functools.cache
def netns_usable() -> str | None:
    """Why the harness cannot work here (not root, a tool missing, refused), or None."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if missing := [tool for tool in ("ip", "iptables") if shutil.which(tool) is None]:
        return f"{' and '.join(missing)} not installed (scripts/test.sh installs them as root)"
    try:
        with isolated_namespace() as ns:
            ns.cut().remove()
            ns.degrade(delay_ms=1, loss_pct=1).remove()
    except (NetnsError, OSError) as exc:
        return f"network namespaces or their faults do not work here: {exc}"
    return None


def require_netns() -> None:
    """Skip the calling test when the harness cannot work here; in CI (env CI set), fail it."""
    if (why := netns_usable()) is not None:
        unavailable("the network-fault harness", why)
