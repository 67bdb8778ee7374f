"""A real schema registry for the tests: Apicurio Registry, through its Confluent-compatible API.

Apicurio Registry (``io.apicurio:apicurio-registry-app``, a Quarkus application) is fetched
once with Maven from Maven Central (or the mirror in ``~/.m2/settings.xml``) into
``${SEQGATE_HOME:-~/.cache/seqgate}/apicurio-registry-<version>/app``, next to the Kafka
jars of the development broker and cached the same way: a marker file written after a
complete download, a lock file serializing concurrent sessions; later sessions only read it.

:func:`running_apicurio` starts it on a free loopback port (in-memory storage, so every
start is empty) with HTTP basic authentication when asked, waits until its
``/apis/ccompat/v7/subjects`` answers, yields where it is, then stops it (SIGTERM, SIGKILL
after a bounded wait). It needs Java 21 or newer; :func:`find_java_21` says which, or why
there is none (the tests skip with that reason).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import socket
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from seqgate_devtools.broker.files import fill_once
from seqgate_devtools.broker.locations import seqgate_home
from seqgate_devtools.broker.log_tails import tail_file, tail_text
from seqgate_devtools.broker.toolchain import find_mvn

__all__ = [
    "APICURIO_VERSION",
    "Registry",
    "RegistryUnavailable",
    "apicurio_home",
    "ensure_apicurio",
    "find_java_21",
    "running_apicurio",
]

APICURIO_VERSION: Final = "3.3.3"
_ARTIFACT: Final = f"io.apicurio:apicurio-registry-app:{APICURIO_VERSION}:tar.gz:all"
_ARCHIVE: Final = f"apicurio-registry-app-{APICURIO_VERSION}-all.tar.gz"
_DEPENDENCY_PLUGIN: Final = "org.apache.maven.plugins:maven-dependency-plugin:3.6.1"
_MARKER: Final = "app.complete"
_MAIN_JAR: Final = "quarkus-run.jar"
_MAVEN_TIMEOUT_S: Final = 900.0
_START_TIMEOUT_S: Final = 120.0
_STOP_TIMEOUT_S: Final = 20.0
_MIN_JAVA: Final = 21
_CCOMPAT: Final = "/apis/ccompat/v7"


class RegistryUnavailable(Exception):
    """No registry can be had here (no Java 21+): the tests skip with this reason."""


@dataclass(frozen=True)
class Registry:
    """A running registry: its Confluent-compatible URL and, when it has them, credentials."""

    url: str  # http://127.0.0.1:PORT/apis/ccompat/v7
    auth: str | None  # USER:PASSWORD, or None when the registry asks for none
    log_file: Path

    def client_config(self) -> dict[str, str]:
        """The configuration of a confluent-kafka SchemaRegistryClient for it."""
        config = {"url": self.url}
        if self.auth is not None:
            config["basic.auth.user.info"] = self.auth
        return config

    def request(
        self, method: str, path: str, body: object = None, *, auth: str | None = None
    ) -> tuple[int, Any]:
        """``method`` ``self.url + path`` with the registry's credentials (or ``auth``);
        (HTTP status, the JSON answer or None)."""
        credentials = auth if auth is not None else self.auth
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(f"{self.url}{path}", data=data, method=method)
        request.add_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        if credentials:
            token = base64.b64encode(credentials.encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as answer:
                status, text = answer.status, answer.read()
        except urllib.error.HTTPError as error:
            status, text = error.code, error.read()
        try:
            return status, json.loads(text) if text else None
        except ValueError:
            return status, None


def apicurio_home() -> Path:
    return seqgate_home() / f"apicurio-registry-{APICURIO_VERSION}"


def find_java_21() -> str:
    """A ``java`` of release 21 or newer: ``$JAVA_HOME``'s, any ``/usr/lib/jvm/*``'s, or the
    one on ``PATH``; :class:`RegistryUnavailable` naming what was tried when there is none."""
    candidates: list[str] = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(str(Path(os.environ["JAVA_HOME"]) / "bin" / "java"))
    candidates += sorted(str(path) for path in Path("/usr/lib/jvm").glob("*/bin/java"))
    on_path = shutil.which("java")
    if on_path:
        candidates.append(on_path)
    seen: list[str] = []
    for java in dict.fromkeys(candidates):
        if not (os.path.isfile(java) and os.access(java, os.X_OK)):
            continue
        release = _java_release(java)
        seen.append(f"{java} ({'unknown release' if release is None else f'Java {release}'})")
        if release is not None and release >= _MIN_JAVA:
            return java
    raise RegistryUnavailable(
        f"Apicurio Registry {APICURIO_VERSION} needs Java {_MIN_JAVA} or newer, and none was"
        f" found (tried: {', '.join(seen) or 'no java at all'}; looked in $JAVA_HOME,"
        " /usr/lib/jvm/*/bin/java and PATH)"
    )


def _java_release(java: str) -> int | None:
    try:
        done = subprocess.run(
            [java, "-version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if match is None:
        return None
    major = int(match.group(1))
    return int(match.group(2) or 0) if major == 1 else major


def ensure_apicurio() -> Path:
    """The directory holding Apicurio Registry's ``quarkus-run.jar``, fetched if needed."""
    home = apicurio_home()
    app = home / "app"
    marker = home / _MARKER

    def fetch(staging: Path) -> dict[str, Any]:
        download = home / "download"
        shutil.rmtree(download, ignore_errors=True)
        command = [
            find_mvn(),
            "-B",
            "-q",
            "-Dstyle.color=never",
            f"{_DEPENDENCY_PLUGIN}:copy",
            f"-Dartifact={_ARTIFACT}",
            f"-DoutputDirectory={download}",
        ]
        _run_maven(command, home)
        archive = download / _ARCHIVE
        if not archive.is_file():
            raise RuntimeError(f"Maven succeeded but did not write {archive}")
        with tarfile.open(archive) as tar:
            tar.extractall(staging, filter="data")
        shutil.rmtree(download, ignore_errors=True)
        main = _main_dir(staging).relative_to(staging) / _MAIN_JAR
        return {"version": APICURIO_VERSION, "main": str(main)}

    fill_once(app, marker, lambda: _complete(app, marker), fetch)
    return _main_dir(app)


def _complete(app: Path, marker: Path) -> bool:
    try:
        recorded = json.loads(marker.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return (
        isinstance(recorded, dict)
        and recorded.get("version") == APICURIO_VERSION
        and isinstance(recorded.get("main"), str)
        and (app / recorded["main"]).is_file()
    )


def _main_dir(app: Path) -> Path:
    found = sorted(app.rglob(_MAIN_JAR), key=lambda path: len(path.parts))
    if not found:
        raise RuntimeError(f"no {_MAIN_JAR} in {app}")
    return found[0].parent


def _run_maven(command: list[str], cwd: Path) -> None:
    try:
        done = subprocess.run(
            command,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=_MAVEN_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as error:
        raise RuntimeError(
            f"Maven did not fetch {_ARTIFACT} within {_MAVEN_TIMEOUT_S:.0f} s"
        ) from error
    if done.returncode != 0:
        raise RuntimeError(
            f"Maven failed (exit code {done.returncode}) fetching {_ARTIFACT}; check access to"
            f" Maven Central (or the mirror in ~/.m2/settings.xml). Command: {' '.join(command)}\n"
            + (tail_text(done.stdout, 30) or "  (no output)")
        )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


@contextlib.contextmanager
def running_apicurio(log_dir: Path, auth: str | None = None) -> Iterator[Registry]:
    """Apicurio Registry on a free loopback port until the block ends; with ``auth``
    (USER:PASSWORD) every request must carry those credentials (HTTP basic)."""
    java = find_java_21()
    main = ensure_apicurio()
    port = free_port()
    options = [
        "-Xms64m",
        "-Xmx256m",
        "-XX:+UseSerialGC",
        "-XX:TieredStopAtLevel=1",
        "-XX:ActiveProcessorCount=1",
        "-Dquarkus.http.host=127.0.0.1",
        f"-Dquarkus.http.port={port}",
        # The management interface is built in (enabled=false is ignored at run time) and
        # listens on 0.0.0.0:9000 by default: two registries at once (tests on two xdist
        # workers) would fight for that port. Each gets a free loopback one instead.
        "-Dquarkus.management.enabled=false",
        "-Dquarkus.management.host=127.0.0.1",
        f"-Dquarkus.management.port={free_port()}",
        "-Dquarkus.otel.sdk.disabled=true",
    ]
    if auth is not None:
        user, _, password = auth.partition(":")
        options += [
            "-Dquarkus.http.auth.basic=true",
            "-Dquarkus.security.users.embedded.enabled=true",
            "-Dquarkus.security.users.embedded.plain-text=true",
            f"-Dquarkus.security.users.embedded.users.{user}={password}",
            f"-Dquarkus.security.users.embedded.roles.{user}=sr-admin",
        ]
    log_dir.mkdir(parents=True, exist_ok=True)
    log_file = log_dir / f"apicurio-{port}.log"
    with log_file.open("wb") as log:
        process = subprocess.Popen(
            [java, *options, "-jar", str(main / _MAIN_JAR)],
            cwd=main,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    registry = Registry(f"http://127.0.0.1:{port}{_CCOMPAT}", auth, log_file)
    try:
        _wait_ready(registry, process)
        yield registry
    finally:
        process.terminate()
        try:
            process.wait(timeout=_STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=_STOP_TIMEOUT_S)


def _wait_ready(registry: Registry, process: subprocess.Popen[bytes]) -> None:
    """Until ``/subjects`` answers 200 (or 401 without credentials, when auth is on)."""
    deadline = time.monotonic() + _START_TIMEOUT_S
    while True:
        if process.poll() is not None:
            raise RuntimeError(
                f"Apicurio Registry exited with code {process.returncode} while starting;"
                f" its log ({registry.log_file}) ends:\n{tail_file(registry.log_file, 30)}"
            )
        try:
            status, _ = registry.request("GET", "/subjects")
        except OSError:
            status = 0
        if status == 200:
            return
        if status == 401:  # up, but it refuses the credentials it was started with
            raise RuntimeError(
                f"Apicurio Registry at {registry.url} answers 401 to its own credentials;"
                f" its log ({registry.log_file}) ends:\n{tail_file(registry.log_file, 30)}"
            )
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"Apicurio Registry did not answer GET {registry.url}/subjects within"
                f" {_START_TIMEOUT_S:.0f} s (last status {status}); its log"
                f" ({registry.log_file}) ends:\n{tail_file(registry.log_file, 30)}"
            )
        time.sleep(0.1)
