"""The peers `seqgate bench --peers` knows, and how each is made ready to run.

Preparing a peer builds or installs what it needs, once, under
``$SEQGATE_HOME/peers`` (the Maven build of the Kafka Streams peer, a virtual
environment for Quix Streams), and gives the command line that starts it. A peer
that cannot be made ready here raises `PeerUnavailable` with the reason, which the
bench reports as "not run: <reason>" and goes on.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from seqgate_devtools.broker.locations import seqgate_home
from seqgate_devtools.errors import PeerUnavailable

__all__ = ["PEERS", "PeerKind", "PeerUnavailable", "peer_named", "peers_home"]

_HERE = Path(__file__).resolve().parent
_BUILD_TIMEOUT_S = 900.0
_TAIL_LINES = 5

Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class PeerKind:
    name: str  # as given to --peers
    framework: str  # as the report names it
    folder: Path
    prepare: Callable[[PeerKind, Path, Progress], list[str]]  # -> the command's first words

    def command(self, progress: Progress) -> list[str]:
        """The words that start this peer (before the contract's options), made ready once."""
        return self.prepare(self, peers_home(), progress)


def peers_home() -> Path:
    return seqgate_home() / "peers"


def _sources_digest(folder: Path, patterns: tuple[str, ...]) -> str:
    digest = hashlib.sha256()
    for pattern in patterns:
        for path in sorted(folder.rglob(pattern)):
            if "target" not in path.parts:
                digest.update(path.relative_to(folder).as_posix().encode())
                digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def _run(words: list[str], what: str, progress: Progress) -> None:
    progress(f"peers: {what}")
    try:
        done = subprocess.run(
            words, capture_output=True, text=True, timeout=_BUILD_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise PeerUnavailable(f"{what} took more than {_BUILD_TIMEOUT_S:.0f} s") from None
    except OSError as error:
        raise PeerUnavailable(f"{what}: {error}") from None
    if done.returncode != 0:
        tail = " | ".join((done.stdout + done.stderr).strip().splitlines()[-_TAIL_LINES:])
        raise PeerUnavailable(f"{what} failed (exit {done.returncode}): {tail}")


def _tool(name: str, why: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise PeerUnavailable(f"{name} not found on PATH ({why})")
    return found


def _prepare_kafka_streams(kind: PeerKind, home: Path, progress: Progress) -> list[str]:
    mvn = _tool("mvn", "Maven builds the Kafka Streams peer")
    java = _tool("java", "the Kafka Streams peer runs on a JVM")
    build = home / "kafka-streams"
    digest = _sources_digest(kind.folder, ("pom.xml", "*.java"))
    jar = build / "seqgate-peer-kafka-streams.jar"
    stamp = build / "sources.sha256"
    if not (jar.is_file() and stamp.is_file() and stamp.read_text() == digest):
        build.mkdir(parents=True, exist_ok=True)
        _run(
            [
                mvn,
                "-q",
                "-B",
                "-f",
                str(kind.folder / "pom.xml"),
                f"-Dpeer.build.dir={build}",
                "package",
                "-DskipTests",
            ],
            "building the Kafka Streams peer with Maven (first run downloads it)",
            progress,
        )
        if not jar.is_file():
            raise PeerUnavailable(f"the Maven build left no {jar}")
        stamp.write_text(digest)
    return [java, "-Xmx512m", "-jar", str(jar)]


def _prepare_quix(kind: PeerKind, home: Path, progress: Progress) -> list[str]:
    venv = home / "quix-venv"
    python = venv / "bin" / "python"
    requirements = kind.folder / "requirements.txt"
    digest = _sources_digest(kind.folder, ("requirements.txt",))
    stamp = venv / "requirements.sha256"
    if not (python.is_file() and stamp.is_file() and stamp.read_text() == digest):
        home.mkdir(parents=True, exist_ok=True)
        _run([sys.executable, "-m", "venv", "--clear", str(venv)], "creating its venv", progress)
        _run(
            [str(python), "-m", "pip", "install", "--quiet", "-r", str(requirements)],
            "installing Quix Streams into its own venv (its confluent-kafka pin is not ours)",
            progress,
        )
        stamp.write_text(digest)
    return [str(python), str(kind.folder / "app.py")]


def _prepare_faust(kind: PeerKind, home: Path, progress: Progress) -> list[str]:
    """faust-streaming in the interpreter that will run the peer. Asked of that
    interpreter, not of this process, whose `sys.modules` may hold another `faust`
    (the test suite's stand-in had no `__spec__`, and `find_spec` raised)."""
    del home, progress
    probe = "import faust, rocksdict"
    try:
        done = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise PeerUnavailable(f"{sys.executable} could not be asked for faust: {error}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise PeerUnavailable(
            f"faust-streaming or rocksdict is not importable ({last}): pip install 'seqgate[faust]'"
        )
    return [sys.executable, str(kind.folder / "app.py")]


PEERS: tuple[PeerKind, ...] = (
    PeerKind(
        "kafka-streams", "Kafka Streams", _HERE / "kafka_streams_peer", _prepare_kafka_streams
    ),
    PeerKind("quix", "Quix Streams", _HERE / "quix_peer", _prepare_quix),
    PeerKind("faust", "faust-streaming", _HERE / "faust_peer", _prepare_faust),
)


def peer_named(name: str) -> PeerKind:
    for kind in PEERS:
        if kind.name == name:
            return kind
    known = ", ".join(kind.name for kind in PEERS)
    raise ValueError(f"unknown peer {name!r}: choose among {known}")
