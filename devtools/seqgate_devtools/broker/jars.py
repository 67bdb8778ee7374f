"""The broker's jars: ``org.apache.kafka:kafka_2.13`` and its runtime dependencies.

Maven resolves them once from Maven Central (or the mirror in ``~/.m2/settings.xml``) into
``${SEQGATE_HOME:-~/.cache/seqgate}/kafka-<version>/libs``; later starts only read them.

The digest of ``pom.xml`` is part of what marks a cache complete, so any edit of that file,
its comments included, makes every cache resolve again (its comment still names
``launcher.py``, this module's old home, for that reason).
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import time
from pathlib import Path
from typing import Any

from seqgate_devtools.broker.files import Progress, fill_once, resource_bytes, say
from seqgate_devtools.broker.locations import KAFKA_VERSION, SCALA_VERSION, kafka_home
from seqgate_devtools.broker.log_tails import tail_text
from seqgate_devtools.broker.toolchain import MAVEN_INSTALL_HINT, find_mvn
from seqgate_devtools.errors import BrokerError

__all__ = ["ensure_kafka_jars"]

_JARS_MARKER = "jars.complete"
_MAIN_JAR = f"kafka_{SCALA_VERSION}-{KAFKA_VERSION}.jar"
_MAVEN_TIMEOUT = 900.0


def ensure_kafka_jars(progress: Progress | None = None) -> Path:
    """Return the directory with the broker's jars, resolving them with Maven if needed.

    The jars live in ``${SEQGATE_HOME:-~/.cache/seqgate}/kafka-<version>/libs``. Maven runs only
    when that directory is missing or incomplete (a marker file lists the jars of the last
    successful resolution and the digest of the pom used); concurrent callers serialize on a
    lock file. ``progress`` receives human-readable status lines.
    """
    home = kafka_home()
    libs = home / "libs"
    marker = home / _JARS_MARKER
    pom_bytes = resource_bytes("pom.xml")
    digest = hashlib.sha256(pom_bytes).hexdigest()

    def resolve(staging: Path) -> dict[str, Any]:
        mvn = find_mvn()
        say(
            progress,
            f"resolving Apache Kafka {KAFKA_VERSION} jars with Maven into {libs} "
            "(first run only; needs Maven Central or a mirror)",
        )
        pom = home / "pom.xml"
        pom.write_bytes(pom_bytes)
        started = time.monotonic()
        jars = _copy_dependencies(mvn, pom, staging)
        say(progress, f"resolved {len(jars)} jars in {time.monotonic() - started:.1f} s")
        return {"kafka_version": KAFKA_VERSION, "pom_sha256": digest, "jars": jars}

    fill_once(libs, marker, lambda: _jars_complete(libs, marker, digest), resolve)
    return libs


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


def _copy_dependencies(mvn: str, pom: Path, staging: Path) -> list[str]:
    """Copy the runtime dependencies of ``pom`` into ``staging``; the names of the jars."""
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
    output = _run_maven(cmd, pom.parent)
    jars = sorted(p.name for p in staging.glob("*.jar"))
    if _MAIN_JAR not in jars:
        raise BrokerError(
            f"Maven succeeded but {_MAIN_JAR} is not among the {len(jars)} jars it copied "
            f"to {staging}",
            tail_text(output, 30) or None,
        )
    return jars


def _run_maven(cmd: list[str], cwd: Path) -> str:
    """Run Maven to its successful end; its output."""
    try:
        proc = subprocess.run(
            cmd,
            cwd=cwd,
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
            tail_text(output, 30) or None,
        ) from exc
    except OSError as exc:
        raise BrokerError(f"cannot run {cmd[0]}: {exc}: {MAVEN_INSTALL_HINT}") from exc
    if proc.returncode != 0:
        raise BrokerError(
            f"Maven failed (exit code {proc.returncode}) resolving "
            f"org.apache.kafka:kafka_{SCALA_VERSION}:{KAFKA_VERSION}; check access to Maven "
            f"Central (or the mirror in ~/.m2/settings.xml). Command: {' '.join(cmd)}",
            "last lines of Maven's output:\n" + (tail_text(proc.stdout, 30) or "  (none)"),
        )
    return proc.stdout
