"""Finding the tools the development broker needs: Java 17+ (always) and Maven (once)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from seqgate_devtools.broker.locations import KAFKA_VERSION, kafka_home
from seqgate_devtools.errors import BrokerError

__all__ = ["MAVEN_INSTALL_HINT", "find_java", "find_mvn"]

_JAVA_INSTALL_HINT = "install OpenJDK 17 (apt-get install openjdk-17-jre-headless) or set JAVA_HOME"
MAVEN_INSTALL_HINT = "install Apache Maven 3.8+ (apt-get install maven) or put mvn on PATH"


def find_java() -> str:
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


def find_mvn() -> str:
    """``mvn`` from ``PATH``, else from ``$MAVEN_HOME`` or ``$M2_HOME``."""
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
        f"mvn not found on PATH: {MAVEN_INSTALL_HINT} (it is needed once, to fetch the "
        f"Apache Kafka {KAFKA_VERSION} jars into {kafka_home() / 'libs'})"
    )
