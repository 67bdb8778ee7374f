"""Development broker: a single-node Apache Kafka (KRaft) run from the Maven Central jars.

This is for development and tests only (docs/design.md §6). The first use resolves
``org.apache.kafka:kafka_2.13`` and its runtime dependencies with Maven into
``${SEQGATE_HOME:-~/.cache/seqgate}/kafka-<version>/libs``; later uses only need Java 17+.

A broker started here listens on two free loopback ports (clients and controller), logs to
``<data dir>/server.log`` (its own stdout/stderr go to ``<data dir>/broker.out``) and keeps its
Kafka data in ``<data dir>/kraft``. **The data directory is wiped and reformatted every time a
broker is started on it**: nothing survives a restart.

With ``security="sasl_ssl"`` the client listener accepts only SASL_SSL (SCRAM-SHA-512 over TLS,
with a throwaway CA and a random password made on each start) and clients find their settings
in ``<data dir>/client.properties``; see :mod:`seqgate.streams.devtools.broker.security`.

Public API:

* :func:`ensure_kafka_jars` - resolve (once) and return the directory holding the broker's jars.
* :func:`start_broker` / :func:`stop_broker` / :func:`broker_status` - the broker behind
  ``seqgate broker up|down|status``; it outlives the Python process that started it and is
  recorded in ``${SEQGATE_HOME:-~/.cache/seqgate}/broker/state.json``.
* :func:`running_broker` - a context manager for tests and demos: a throwaway broker in a
  temporary directory, stopped (and killed if this process dies) at the end.
"""

from __future__ import annotations

import base64
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from seqgate.streams.devtools.broker import security as sec
from seqgate.streams.runtime.errors import UsageError

__all__ = [
    "KAFKA_VERSION",
    "SCALA_VERSION",
    "BrokerError",
    "BrokerHandle",
    "broker_answers",
    "broker_status",
    "default_data_dir",
    "default_state_file",
    "ensure_kafka_jars",
    "is_running",
    "load_state",
    "running_broker",
    "seqgate_home",
    "start_broker",
    "stop_broker",
]

KAFKA_VERSION = "4.1.1"
"""Apache Kafka release run by the development broker (keep in step with pom.xml)."""
SCALA_VERSION = "2.13"

Progress = Callable[[str], None]

_NODE_ID = 1
_HOST = "127.0.0.1"
_MARKER = ".seqgate-devbroker"
_KEEP_IN_DATA_DIR = frozenset({"state.json", "state.json.lock"})
_JARS_MARKER = "jars.complete"
_MAIN_JAR = f"kafka_{SCALA_VERSION}-{KAFKA_VERSION}.jar"
_MAVEN_TIMEOUT = 900.0
_FORMAT_TIMEOUT = 120.0
_START_ATTEMPTS = 3
_JAVA_INSTALL_HINT = "install OpenJDK 17 (apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
_MAVEN_INSTALL_HINT = "install Apache Maven 3.8+ (apt-get install maven) or put mvn on PATH"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


class BrokerError(UsageError):
    """An expected failure of the development broker, with a message meant for humans.

    ``message`` is one line; ``detail`` (optional, multi-line) is the tail of the relevant log
    or tool output.
    """

    def __init__(self, message: str, detail: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.detail = detail

    def __str__(self) -> str:
        if self.detail:
            return f"{self.message}\n{self.detail}"
        return self.message


@dataclass
class BrokerHandle:
    """A development broker (running, or as recorded in a state file)."""

    bootstrap_servers: str
    pid: int
    data_dir: Path
    port: int
    controller_port: int
    state_file: Path | None = None
    kafka_version: str = KAFKA_VERSION
    already_running: bool = False
    """True when :func:`start_broker` found this broker running and returned it unchanged."""
    security: str = sec.PLAINTEXT
    """``plaintext`` or ``sasl_ssl`` (see :mod:`seqgate.streams.devtools.broker.security`)."""
    client_properties: Path | None = None
    """librdkafka settings clients need (``sasl_ssl`` only; the client listener needs them)."""
    ca_file: Path | None = None
    """PEM of the CA that signed the broker's certificate (``sasl_ssl`` only)."""
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)
    _watchdog: subprocess.Popen[bytes] | None = field(default=None, repr=False, compare=False)

    @property
    def log_file(self) -> Path:
        """The broker's log4j log."""
        return self.data_dir / "server.log"

    @property
    def stdout_file(self) -> Path:
        """Where the broker process's own stdout/stderr go."""
        return self.data_dir / "broker.out"

    def to_json(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "bootstrap_servers": self.bootstrap_servers,
            "data_dir": str(self.data_dir),
            "port": self.port,
            "controller_port": self.controller_port,
            "kafka_version": self.kafka_version,
            "log_file": str(self.log_file),
            "security": self.security,
            "client_properties": _opt_str(self.client_properties),
            "ca_file": _opt_str(self.ca_file),
        }

    def answers(self, timeout: float = 5.0) -> bool:
        """:func:`broker_answers` with this broker's client settings."""
        return broker_answers(self.bootstrap_servers, timeout, properties=self.client_properties)


def _opt_str(path: Path | None) -> str | None:
    return None if path is None else str(path)


def _opt_path(value: Any) -> Path | None:
    return None if value is None else Path(str(value))


# --------------------------------------------------------------------------- locations


def seqgate_home() -> Path:
    """``$SEQGATE_HOME``, or ``~/.cache/seqgate``."""
    env = os.environ.get("SEQGATE_HOME")
    base = Path(env).expanduser() if env else Path.home() / ".cache" / "seqgate"
    return base.absolute()


def default_state_file() -> Path:
    """State file of the broker managed by ``seqgate broker up|down|status``."""
    return seqgate_home() / "broker" / "state.json"


def default_data_dir() -> Path:
    """Data directory of the broker started by ``seqgate broker up`` (wiped on each start)."""
    return seqgate_home() / "broker" / "data"


def _kafka_home() -> Path:
    return seqgate_home() / f"kafka-{KAFKA_VERSION}"


# --------------------------------------------------------------------------- small helpers


def _say(progress: Progress | None, message: str) -> None:
    if progress is not None:
        progress(message)


def _resource_bytes(name: str) -> bytes:
    return (
        resources.files(__package__ or "seqgate.streams.devtools.broker")
        .joinpath(name)
        .read_bytes()
    )


def _tail_text(text: str, lines: int) -> str:
    kept = [_ANSI.sub("", line).rstrip() for line in text.splitlines() if line.strip()]
    return "\n".join(f"  | {line}" for line in kept[-lines:])


def _tail_file(path: Path, lines: int) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 256 * 1024))
            text = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return _tail_text(text, lines)


def _failure_detail(data_dir: Path) -> str:
    parts = []
    for name, lines in (("server.log", 40), ("broker.out", 20)):
        tail = _tail_file(data_dir / name, lines)
        if tail:
            parts.append(f"last lines of {data_dir / name}:\n{tail}")
    return "\n".join(parts) or f"(no output in {data_dir})"


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def _write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


# --------------------------------------------------------------------------- tools


def _find_java() -> str:
    """Java from ``$JAVA_HOME/bin/java``, else from ``PATH``; must be Java 17 or newer."""
    java_home = os.environ.get("JAVA_HOME")
    java: str | None = None
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            java = str(candidate)
    if java is None:
        java = shutil.which("java")
    if java is None:
        if java_home:
            raise BrokerError(
                f"java not found: JAVA_HOME={java_home} has no bin/java and there is no java on "
                f"PATH: {_JAVA_INSTALL_HINT} to a Java 17+ installation"
            )
        raise BrokerError(f"java not found on PATH: {_JAVA_INSTALL_HINT}")
    _check_java_version(java)
    return java


def _check_java_version(java: str) -> None:
    try:
        proc = subprocess.run(
            [java, "-version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BrokerError(f"cannot run {java} -version ({exc}): {_JAVA_INSTALL_HINT}") from exc
    match = re.search(r'version "(\d+)(?:\.(\d+))?', proc.stderr + proc.stdout)
    if match is None:
        return  # unknown vendor format: let the broker itself complain if it must
    major = int(match.group(1))
    if major == 1 and match.group(2):
        major = int(match.group(2))
    if major < 17:
        raise BrokerError(
            f"{java} is Java {major}, Apache Kafka {KAFKA_VERSION} needs Java 17 or newer: "
            f"{_JAVA_INSTALL_HINT}"
        )


def _find_mvn() -> str:
    mvn = shutil.which("mvn")
    if mvn is not None:
        return mvn
    for var in ("MAVEN_HOME", "M2_HOME"):
        home = os.environ.get(var)
        if home:
            candidate = Path(home) / "bin" / "mvn"
            if candidate.is_file() and os.access(candidate, os.X_OK):
                return str(candidate)
    raise BrokerError(
        f"mvn not found on PATH: {_MAVEN_INSTALL_HINT} (it is needed once, to fetch the "
        f"Apache Kafka {KAFKA_VERSION} jars into {_kafka_home() / 'libs'})"
    )


# --------------------------------------------------------------------------- jars


def _jars_complete(libs: Path, marker: Path, pom_digest: str) -> bool:
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(recorded, dict):
        return False
    jars = recorded.get("jars")
    if recorded.get("pom_sha256") != pom_digest or not isinstance(jars, list) or not jars:
        return False
    return all(isinstance(j, str) and (libs / j).is_file() for j in jars)


def ensure_kafka_jars(progress: Progress | None = None) -> Path:
    """Return the directory with the broker's jars, resolving them with Maven if needed.

    The jars live in ``${SEQGATE_HOME:-~/.cache/seqgate}/kafka-<version>/libs``. Maven runs only
    when that directory is missing or incomplete (a marker file lists the jars of the last
    successful resolution and the digest of the pom used); concurrent callers serialize on a
    lock file. ``progress`` receives human-readable status lines.
    """
    home = _kafka_home()
    libs = home / "libs"
    marker = home / _JARS_MARKER
    pom_bytes = _resource_bytes("pom.xml")
    digest = hashlib.sha256(pom_bytes).hexdigest()
    if _jars_complete(libs, marker, digest):
        return libs
    mvn = _find_mvn()
    with _file_lock(home / ".lock"):
        if _jars_complete(libs, marker, digest):
            return libs
        _say(
            progress,
            f"resolving Apache Kafka {KAFKA_VERSION} jars with Maven into {libs} "
            "(first run only; needs Maven Central or a mirror)",
        )
        pom = home / "pom.xml"
        pom.write_bytes(pom_bytes)
        staging = home / "libs.partial"
        shutil.rmtree(staging, ignore_errors=True)
        marker.unlink(missing_ok=True)
        cmd = [
            mvn,
            "-B",
            "-q",
            "-Dstyle.color=never",
            "-f",
            str(pom),
            "dependency:copy-dependencies",
            f"-DoutputDirectory={staging}",
            "-DincludeScope=runtime",
        ]
        started = time.monotonic()
        try:
            proc = subprocess.run(
                cmd,
                cwd=home,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                timeout=_MAVEN_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            output = exc.output if isinstance(exc.output, str) else ""
            raise BrokerError(
                f"Maven did not finish resolving the Kafka {KAFKA_VERSION} jars within "
                f"{_MAVEN_TIMEOUT:.0f} s (command: {' '.join(cmd)})",
                _tail_text(output, 30) or None,
            ) from exc
        except OSError as exc:
            raise BrokerError(f"cannot run {mvn}: {exc}: {_MAVEN_INSTALL_HINT}") from exc
        if proc.returncode != 0:
            raise BrokerError(
                f"Maven failed (exit code {proc.returncode}) resolving "
                f"org.apache.kafka:kafka_{SCALA_VERSION}:{KAFKA_VERSION}; check access to Maven "
                f"Central (or the mirror in ~/.m2/settings.xml). Command: {' '.join(cmd)}",
                "last lines of Maven's output:\n" + (_tail_text(proc.stdout, 30) or "  (none)"),
            )
        jars = sorted(p.name for p in staging.glob("*.jar"))
        if _MAIN_JAR not in jars:
            raise BrokerError(
                f"Maven succeeded but {_MAIN_JAR} is not among the {len(jars)} jars it copied "
                f"to {staging}",
                _tail_text(proc.stdout, 30) or None,
            )
        shutil.rmtree(libs, ignore_errors=True)
        staging.rename(libs)
        _write_json_atomic(
            marker,
            {"kafka_version": KAFKA_VERSION, "pom_sha256": digest, "jars": jars},
        )
        _say(progress, f"resolved {len(jars)} jars in {time.monotonic() - started:.1f} s")
    return libs


# --------------------------------------------------------------------------- processes


def _proc_state(pid: int) -> str | None:
    """One-letter process state from /proc (``None`` if there is no such process)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[0]


def _cmdline(pid: int) -> list[str] | None:
    proc = Path(f"/proc/{pid}")
    if proc.is_dir() or Path("/proc/self").is_dir():
        try:
            raw = (proc / "cmdline").read_bytes()
        except OSError:
            return None
        if _proc_state(pid) in (None, "Z", "X"):
            return None
        return [a.decode("utf-8", "replace") for a in raw.split(b"\0") if a]
    try:  # no /proc (macOS): ask ps
        out = subprocess.run(
            ["ps", "-o", "stat=,command=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    if not out or out.startswith("Z"):
        return None
    return out.split()[1:]


def _reap(pid: int) -> None:
    """Collect the exit status if ``pid`` is a child of this process (no zombie left)."""
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def _is_broker_process(pid: int, data_dir: Path) -> bool:
    """True if ``pid`` is alive and is the dev broker started on ``data_dir``."""
    _reap(pid)
    args = _cmdline(pid)
    return args is not None and "kafka.Kafka" in args and _dir_flag(data_dir) in args


def _dir_flag(data_dir: Path) -> str:
    return f"-Dseqgate.devbroker={data_dir}"


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        try:
            same_group = os.getpgid(pid) == pid
        except ProcessLookupError:
            return
        if same_group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)


def _wait_gone(
    pid: int, data_dir: Path, process: subprocess.Popen[bytes] | None, timeout: float
) -> bool:
    if process is not None:
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    deadline = time.monotonic() + timeout
    while _is_broker_process(pid, data_dir):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def _terminate(
    pid: int, data_dir: Path, process: subprocess.Popen[bytes] | None, timeout: float
) -> None:
    alive = process.poll() is None if process is not None else _is_broker_process(pid, data_dir)
    if not alive:
        _reap(pid)
        return
    _signal_group(pid, signal.SIGTERM)
    if _wait_gone(pid, data_dir, process, timeout):
        return
    _signal_group(pid, signal.SIGKILL)
    if not _wait_gone(pid, data_dir, process, 15.0):
        raise BrokerError(f"broker process {pid} survived SIGKILL")


_WATCHDOG_SOURCE = """\
import os, signal, sys, time
pid = int(sys.argv[1])
if sys.stdin.buffer.read(1) == b"x":
    sys.exit(0)
def gone():
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
    return stat.rsplit(")", 1)[-1].split()[0] in ("Z", "X")
for sig, wait in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
    try:
        os.killpg(pid, sig)
    except OSError:
        sys.exit(0)
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if gone():
            sys.exit(0)
        time.sleep(0.2)
"""


def _spawn_watchdog(pid: int) -> subprocess.Popen[bytes]:
    """A helper that kills broker ``pid`` when this process exits without disarming it.

    It blocks reading its stdin (a pipe only this process holds): EOF means this process died,
    a ``x`` byte means the broker was stopped normally.
    """
    return subprocess.Popen(
        [sys.executable, "-c", _WATCHDOG_SOURCE, str(pid)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def _disarm_watchdog(watchdog: subprocess.Popen[bytes] | None) -> None:
    if watchdog is None:
        return
    with contextlib.suppress(OSError, ValueError):
        if watchdog.stdin is not None:
            watchdog.stdin.write(b"x")
            watchdog.stdin.close()
    try:
        watchdog.wait(timeout=10)
    except subprocess.TimeoutExpired:
        watchdog.kill()
        watchdog.wait()


# --------------------------------------------------------------------------- probing


def _split_bootstrap(bootstrap: str) -> tuple[str, int]:
    first = bootstrap.split(",")[0].strip()
    host, _, port = first.rpartition(":")
    return host.strip("[]") or _HOST, int(port)


def broker_answers(
    bootstrap_servers: str, timeout: float = 5.0, *, properties: Path | None = None
) -> bool:
    """True if the broker at ``bootstrap_servers`` accepts a connection and returns metadata
    listing at least one broker; ``properties`` is a client properties file to connect with
    (``BrokerHandle.client_properties`` of a ``sasl_ssl`` broker)."""
    from confluent_kafka.admin import AdminClient

    try:
        host, port = _split_bootstrap(bootstrap_servers)
        with socket.create_connection((host, port), timeout=min(timeout, 1.0)):
            pass
    except (OSError, ValueError):
        return False
    try:
        settings: dict[str, Any] = dict(sec.client_settings(properties, bootstrap_servers))
    except OSError:
        return False
    admin = AdminClient(
        {
            **settings,
            "socket.connection.setup.timeout.ms": max(1000, int(timeout * 1000)),
            "reconnect.backoff.ms": 100,
            "reconnect.backoff.max.ms": 500,
            "log_level": 0,  # a probe: failures are reported by the caller, not by librdkafka
        }
    )
    try:
        metadata = admin.list_topics(timeout=timeout)
    except Exception:  # KafkaException and friends: not answering (yet)
        return False
    return bool(metadata.brokers)


# --------------------------------------------------------------------------- state


def load_state(state_file: Path | None = None) -> BrokerHandle | None:
    """The broker recorded in ``state_file`` (default :func:`default_state_file`), if any.

    Does not check that it still runs (see :func:`is_running`, :func:`broker_status`). A state
    file that cannot be parsed is removed.
    """
    path = state_file or default_state_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return BrokerHandle(
            bootstrap_servers=str(data["bootstrap_servers"]),
            pid=int(data["pid"]),
            data_dir=Path(data["data_dir"]),
            port=int(data["port"]),
            controller_port=int(data["controller_port"]),
            state_file=path,
            kafka_version=str(data.get("kafka_version", KAFKA_VERSION)),
            security=str(data.get("security", sec.PLAINTEXT)),
            client_properties=_opt_path(data.get("client_properties")),
            ca_file=_opt_path(data.get("ca_file")),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return None


def is_running(handle: BrokerHandle) -> bool:
    """True if the broker's process is alive (and really is that broker, not a reused pid)."""
    if handle._process is not None:
        return handle._process.poll() is None
    return _is_broker_process(handle.pid, handle.data_dir)


def broker_status(state_file: Path | None = None) -> BrokerHandle | None:
    """The broker recorded in the state file if its process is alive and it answers, else None."""
    handle = load_state(state_file)
    if handle is None or not is_running(handle):
        return None
    if not handle.answers(timeout=5.0):
        return None
    return handle


# --------------------------------------------------------------------------- start / stop


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind((_HOST, 0))
            sockets.append(s)
        return [int(s.getsockname()[1]) for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _cluster_id() -> str:
    """A random Kafka cluster id (what ``kafka-storage.sh random-uuid`` prints)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _server_properties(
    port: int, controller_port: int, log_dir: Path, material: sec.SecurityMaterial | None
) -> str:
    props = {
        "process.roles": "broker,controller",
        "node.id": str(_NODE_ID),
        "controller.quorum.voters": f"{_NODE_ID}@{_HOST}:{controller_port}",
        "listeners": f"PLAINTEXT://{_HOST}:{port},CONTROLLER://{_HOST}:{controller_port}",
        "advertised.listeners": f"PLAINTEXT://{_HOST}:{port}",
        "controller.listener.names": "CONTROLLER",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "log.dirs": str(log_dir),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        # A single node: every internal topic has one replica, or transactions never start.
        "offsets.topic.replication.factor": "1",
        "offsets.topic.num.partitions": "1",
        "transaction.state.log.replication.factor": "1",
        "transaction.state.log.min.isr": "1",
        "transaction.state.log.num.partitions": "1",
        "share.coordinator.state.topic.replication.factor": "1",
        "share.coordinator.state.topic.min.isr": "1",
        "group.initial.rebalance.delay.ms": "0",
    }
    if material is not None:
        props.update(sec.server_properties(material, _HOST, port, controller_port))
    lines = [
        "# seqgate development broker (generated; rewritten on every start)",
        *(f"{key}={value}" for key, value in props.items()),
    ]
    return "\n".join(lines) + "\n"


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


def _wipeable_entries(data_dir: Path) -> list[Path]:
    """Entries of ``data_dir`` except a state file kept there (see :func:`running_broker`)."""
    return [e for e in data_dir.iterdir() if e.name not in _KEEP_IN_DATA_DIR]


def _prepare_data_dir(data_dir: Path) -> None:
    if data_dir.exists():
        if not data_dir.is_dir():
            raise BrokerError(f"data dir {data_dir} exists and is not a directory")
        entries = _wipeable_entries(data_dir)
        if entries and not (data_dir / _MARKER).exists():
            raise BrokerError(
                f"refusing to wipe {data_dir}: it is not empty and was not created by the seqgate "
                f"dev broker (no {_MARKER} file); use an empty or new directory"
            )
        _ensure_not_in_use(data_dir)
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


def _java_cmd(java: str, libs: Path, data_dir: Path, log_name: str, heap: str) -> list[str]:
    return [
        java,
        f"-Xmx{heap}",
        "-XX:+UseG1GC",
        "-Djava.awt.headless=true",
        f"-Dlog4j2.configurationFile={data_dir / 'log4j2.xml'}",
        f"-Dseqgate.broker.log={data_dir / log_name}",
        "-cp",
        f"{libs}{os.sep}*",
    ]


def _format_storage(
    java: str, libs: Path, data_dir: Path, props: Path, extra: list[str] | None = None
) -> None:
    cmd = [
        *_java_cmd(java, libs, data_dir, "format.log", "256m"),
        "kafka.tools.StorageTool",
        "format",
        "-t",
        _cluster_id(),
        "-c",
        str(props),
        *(extra or []),
    ]
    out_path = data_dir / "format.out"
    with out_path.open("wb") as out:
        try:
            proc = subprocess.run(
                cmd,
                cwd=data_dir,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                timeout=_FORMAT_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise BrokerError(
                f"kafka.tools.StorageTool format did not finish within {_FORMAT_TIMEOUT:.0f} s",
                _tail_file(out_path, 20) or None,
            ) from exc
    if proc.returncode != 0:
        detail = "\n".join(
            t for t in (_tail_file(out_path, 20), _tail_file(data_dir / "format.log", 20)) if t
        )
        raise BrokerError(
            f"formatting the broker storage in {data_dir} failed (exit code {proc.returncode})",
            detail or None,
        )


def _launch(
    java: str,
    libs: Path,
    data_dir: Path,
    props: Path,
    port: int,
    controller_port: int,
    timeout: float,
    properties: Path | None = None,
) -> tuple[subprocess.Popen[bytes] | None, str]:
    """Start the broker and wait until it answers: ``(process, "")`` on success, else
    ``(None, reason)`` with the process already gone."""
    cmd = [
        *_java_cmd(java, libs, data_dir, "server.log", "1g"),
        _dir_flag(data_dir),
        "kafka.Kafka",
        str(props),
    ]
    bootstrap = f"{_HOST}:{port}"
    with (data_dir / "broker.out").open("ab") as out:
        process = subprocess.Popen(
            cmd,
            cwd=data_dir,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
        )
    deadline = time.monotonic() + timeout
    try:
        while True:
            code = process.poll()
            if code is not None:
                return None, f"the broker exited with code {code} during startup"
            if broker_answers(bootstrap, timeout=1.0, properties=properties):
                return process, ""
            if time.monotonic() >= deadline:
                _terminate(process.pid, data_dir, process, 10.0)
                return None, f"the broker did not answer on {bootstrap} within {timeout:.0f} s"
            time.sleep(0.2)
    except BaseException:  # e.g. Ctrl-C while waiting: leave no half-started broker behind
        _terminate(process.pid, data_dir, process, 10.0)
        raise


def _address_in_use(data_dir: Path) -> bool:
    text = _tail_file(data_dir / "server.log", 200) + _tail_file(data_dir / "broker.out", 50)
    return "Address already in use" in text


def start_broker(
    data_dir: Path | None = None,
    *,
    timeout: float = 90.0,
    state_file: Path | None = None,
    progress: Progress | None = None,
    reuse_running: bool = True,
    detach: bool = True,
    security: str = sec.PLAINTEXT,
) -> BrokerHandle:
    """Start a single-node Apache Kafka broker (KRaft) on free loopback ports.

    This is a *development* broker: ``data_dir`` (default :func:`default_data_dir`) is wiped
    and reformatted on every start, so no data survives a restart. A directory that is not
    empty is only wiped if an earlier start created it (it holds a ``.seqgate-devbroker`` file).

    The broker is recorded in ``state_file`` (default :func:`default_state_file`). If that file
    names a broker that is still running and answering, it is returned unchanged with
    ``already_running=True`` (when ``reuse_running``; otherwise that is an error).

    The Java process runs in its own session, so it outlives this Python process unless
    ``detach`` is false: then a small watchdog kills it when this process exits without
    calling :func:`stop_broker`.

    ``security`` is ``plaintext`` or ``sasl_ssl``: a client listener that accepts only
    SCRAM-SHA-512 over TLS, with new credentials and certificates on each start; clients use
    the handle's ``client_properties`` file (:mod:`seqgate.streams.devtools.broker.security`). A
    running
    broker is only reused when its mode matches.

    Waits up to ``timeout`` seconds for the broker to return metadata. Raises
    :class:`BrokerError` (with the tail of ``server.log`` when the broker itself failed).
    """
    if security not in sec.SECURITY_MODES:
        raise BrokerError(
            f"unknown security mode {security!r}: choose one of {', '.join(sec.SECURITY_MODES)}"
        )
    state_path = (state_file or default_state_file()).absolute()
    with _file_lock(state_path.with_name(state_path.name + ".lock")):
        existing = load_state(state_path)
        if existing is not None:
            if is_running(existing):
                if not reuse_running:
                    raise BrokerError(
                        f"a dev broker is already running at {existing.bootstrap_servers} "
                        f"(pid {existing.pid}, recorded in {state_path})"
                    )
                if existing.security != security:
                    raise BrokerError(
                        f"a dev broker with security {existing.security} is already running at "
                        f"{existing.bootstrap_servers} (pid {existing.pid}); stop it first "
                        f"(seqgate broker down) to start one with security {security}"
                    )
                if existing.answers(timeout=5.0):
                    existing.already_running = True
                    return existing
                raise BrokerError(
                    f"the dev broker recorded in {state_path} (pid {existing.pid}, "
                    f"{existing.bootstrap_servers}) is running but does not answer; stop it "
                    f"with `seqgate broker down` (its log: {existing.log_file})"
                )
            state_path.unlink(missing_ok=True)

        java = _find_java()
        data_dir = (data_dir or default_data_dir()).absolute()
        if data_dir.is_dir() and _wipeable_entries(data_dir):
            _prepare_data_dir(data_dir)  # raises before the (slow) jar resolution
        libs = ensure_kafka_jars(progress)

        reason = ""
        for attempt in range(1, _START_ATTEMPTS + 1):
            _prepare_data_dir(data_dir)
            (data_dir / "log4j2.xml").write_bytes(_resource_bytes("log4j2.xml"))
            port, controller_port = _free_ports(2)
            material = sec.create_sasl_ssl_material(data_dir) if security == sec.SASL_SSL else None
            props = data_dir / "server.properties"
            props.write_text(
                _server_properties(port, controller_port, data_dir / "kraft", material),
                encoding="utf-8",
            )
            props.chmod(0o600)  # it holds the SCRAM and keystore passwords in sasl_ssl mode
            _say(progress, f"formatting broker storage in {data_dir}")
            _format_storage(
                java, libs, data_dir, props, sec.format_arguments(material) if material else None
            )
            client_props = material.client_properties if material else None
            _say(
                progress,
                f"starting Apache Kafka {KAFKA_VERSION} on {_HOST}:{port} "
                f"(log: {data_dir / 'server.log'})",
            )
            started = time.monotonic()
            process, reason = _launch(
                java, libs, data_dir, props, port, controller_port, timeout, client_props
            )
            if process is None:
                if attempt < _START_ATTEMPTS and _address_in_use(data_dir):
                    _say(progress, "a port was taken meanwhile; retrying with other ports")
                    continue
                raise BrokerError(f"{reason}; data dir {data_dir}", _failure_detail(data_dir))
            handle = BrokerHandle(
                bootstrap_servers=f"{_HOST}:{port}",
                pid=process.pid,
                data_dir=data_dir,
                port=port,
                controller_port=controller_port,
                state_file=state_path,
                security=security,
                client_properties=client_props,
                ca_file=material.ca_file if material else None,
                _process=process,
                _watchdog=None if detach else _spawn_watchdog(process.pid),
            )
            _write_json_atomic(state_path, handle.to_json())
            _say(
                progress,
                f"broker ready at {handle.bootstrap_servers} (pid {handle.pid}) "
                f"after {time.monotonic() - started:.1f} s",
            )
            return handle
        raise BrokerError(reason or "the broker did not start", _failure_detail(data_dir))


def stop_broker(handle: BrokerHandle | Path | None = None, timeout: float = 30.0) -> None:
    """Stop a broker: SIGTERM, wait up to ``timeout`` s, then SIGKILL; remove its state file.

    ``handle`` is a :class:`BrokerHandle`, the path of a state file, or None for the default
    state file. Stopping a broker that is not running only removes the stale state file. A pid
    that now belongs to another process is never signalled.
    """
    if handle is None or isinstance(handle, Path):
        loaded = load_state(handle)
        if loaded is None:
            return
        handle = loaded
    try:
        _terminate(handle.pid, handle.data_dir, handle._process, timeout)
    finally:
        _disarm_watchdog(handle._watchdog)
        handle._watchdog = None
    if handle.state_file is not None:
        recorded = load_state(handle.state_file)
        if recorded is not None and recorded.pid == handle.pid:
            handle.state_file.unlink(missing_ok=True)


@contextlib.contextmanager
def running_broker(
    data_dir: Path | None = None,
    *,
    timeout: float = 90.0,
    progress: Progress | None = None,
    security: str = sec.PLAINTEXT,
) -> Iterator[BrokerHandle]:
    """A throwaway broker for tests and demos; stopped when the block exits.

    It runs in ``data_dir`` (default: a new temporary directory, removed afterwards) and
    records its state in ``<data_dir>/state.json``, never in the state file of
    ``seqgate broker up``. If this process dies without leaving the block, a watchdog
    process stops the broker. ``security`` is as for :func:`start_broker`.
    """
    owned_tmp: Path | None = None
    if data_dir is None:
        owned_tmp = Path(tempfile.mkdtemp(prefix="seqgate-broker-"))
        data_dir = owned_tmp
    data_dir = data_dir.absolute()
    try:
        handle = start_broker(
            data_dir,
            timeout=timeout,
            state_file=data_dir / "state.json",
            progress=progress,
            reuse_running=False,
            detach=False,
            security=security,
        )
        try:
            yield handle
        finally:
            stop_broker(handle)
    finally:
        if owned_tmp is not None:
            shutil.rmtree(owned_tmp, ignore_errors=True)
